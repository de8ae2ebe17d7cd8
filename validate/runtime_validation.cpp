#include "validate/runtime_validation.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "kernels/dag_examples.h"
#include "kernels/pipeline_runtime.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "strategies/lowering/lower.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

std::vector<double> repeat(const std::vector<double>& pattern, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(pattern[i % pattern.size()]);
  return out;
}

}  // namespace

std::vector<RuntimeCase> runtime_cases(bool quick) {
  // Ops of ~15-40 ms on this machine in the full set (far above the hand-off cost), ~1 ms quick.
  const double f = quick ? 2e6 : 6e7;
  using K = ScheduleKind;
  return {
      {K::kGPipe, 2, 4, 1, repeat({f}, 2), repeat({2 * f}, 2)},
      {K::k1F1B, 2, 8, 1, repeat({f}, 2), repeat({2 * f}, 2)},
      {K::k1F1B, 2, 6, 1, {f, 1.6 * f}, {2 * f, 3.2 * f}},  // unbalanced: stage 1 is slower
      {K::kInterleaved1F1B, 2, 4, 2, repeat({f / 2}, 4), repeat({f}, 4)},
      {K::kInterleaved1F1B, 2, 6, 2, repeat({0.5 * f, 0.8 * f}, 4), repeat({f, 1.6 * f}, 4)},
  };
}

ModelSpec runtime_model(const RuntimeCase& c) {
  ModelSpec m;
  m.name = "pipeline-runtime";
  m.family = ModelFamily::kOpGraph;
  for (size_t i = 0; i < c.forward_flop.size(); ++i) {
    if (std::abs(c.backward_flop[i] - 2 * c.forward_flop[i]) > 1e-9 * c.forward_flop[i]) {
      throw InputError("runtime case", "backward_flop", std::to_string(c.backward_flop[i]),
                       "a task op's backward runs twice its forward FLOP; the case must too");
    }
    GraphOp op{.name = "stage" + std::to_string(i), .kind = GraphOpKind::kTask, .flops = c.forward_flop[i],
               .output_elements = 0};
    if (i > 0) op.inputs = {static_cast<int>(i) - 1};
    m.graph.ops.push_back(std::move(op));
  }
  return m;
}

std::pair<double, double> predict_runtime_case(const RuntimeCase& c, const Calibration& cal) {
  HardwareModel hw = cal.hardware;  // the runtime's p threads: p devices of one node, a core each
  hw.num_devices = hw.node.devices = c.p;
  hw.device.cores = 1;
  Strategy s;
  s.pp = c.p, s.dp = 1, s.schedule = c.kind, s.interleave = c.v;
  s.micro_batch = 1, s.global_batch = c.m;
  s.dtype = DType::kFp32;
  s.overlap_p2p = true;  // a hand-off is a push into the boundary's queue
  s.stage_split = StageSplit::kExplicit;
  s.stage_layers.assign(c.forward_flop.size(), 1);
  const Expected<Plan> plan = lower(runtime_model(c), s, hw);
  if (!plan) throw InputError("calibration", "device.task", "", "cannot predict the pipeline runtime: " + plan.error().detail);
  const Prediction p = predict_analytical(*plan);
  return {p.iteration_s, p.bubble_fraction};
}

RuntimeCaseResult validate_runtime_case(const RuntimeCase& c, const Calibration& cal, int repeats) {
  RuntimeCaseResult r;
  r.schedule = std::string(schedule_name(c.kind));
  r.p = c.p, r.m = c.m, r.v = c.v;
  std::tie(r.predicted_s, r.predicted_bubble) = predict_runtime_case(c, cal);

  kernels::PipelineRuntimeConfig config;
  config.kind = c.kind;
  config.stages = c.p;
  config.micro_batches = c.m;
  config.chunks = c.v;
  config.forward_flop = c.forward_flop;
  config.backward_flop = c.backward_flop;
  (void)kernels::run_pipeline(config);  // warm-up: thread start, page faults
  double best = 0;
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    const kernels::PipelineRunResult run = kernels::run_pipeline(config);
    if (i == 0 || run.timeline.makespan_s < best) {
      best = run.timeline.makespan_s;
      r.measured_s = run.timeline.makespan_s;
      r.measured_bubble = run.bubble_fraction;
      r.preemptions = 0;
      for (long n : run.rank_preemptions) r.preemptions = n < 0 ? -1 : r.preemptions + n;
    }
  }
  r.error = (r.predicted_s - r.measured_s) / r.measured_s;
  return r;
}

std::vector<RuntimeCaseResult> validate_runtime(
    const std::vector<RuntimeCase>& cases, const Calibration& cal, int rounds, int repeats,
    const std::function<void(std::string_view)>& progress) {
  std::vector<RuntimeCaseResult> best;
  for (int round = 0; round < std::max(rounds, 1); ++round) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      RuntimeCaseResult r = validate_runtime_case(cases[i], cal, repeats);
      if (progress) {
        progress("round " + std::to_string(round + 1) + "/" + std::to_string(rounds) +
                 ": pipeline " + r.schedule + " p" + std::to_string(r.p) + " m" +
                 std::to_string(r.m) + " v" + std::to_string(r.v));
      }
      if (round == 0) {
        best.push_back(std::move(r));
      } else if (r.measured_s < best[i].measured_s) {
        best[i] = std::move(r);
      }
    }
  }
  return best;
}

std::vector<DagCase> dag_cases(bool quick, int threads) {
  // Nodes of ~3-15 ms on this machine in the full set (the unit of work 2e7 FLOP, as `stratasim
  // runtime --dag` defaults to), ~0.3 ms quick.
  const double f = quick ? 1e6 : 2e7;
  return {{"resnet", f, threads}, {"lstm_sequence", f, threads}};
}

ModelSpec dag_model(const kernels::DagGraph& g, const std::string& name) {
  ModelSpec m;
  m.name = "dag-" + name;
  m.family = ModelFamily::kOpGraph;
  for (const kernels::DagNode& node : g.nodes) {
    if (node.deps.size() > 3) {
      throw InputError("dag", node.name, std::to_string(node.deps.size()) + " dependencies",
                       "an operator graph's op reads at most 3 inputs");
    }
    m.graph.ops.push_back(GraphOp{.name = node.name, .kind = GraphOpKind::kTask, .flops = node.flop,
                                  .output_elements = 0, .inputs = node.deps});
  }
  return m;
}

namespace {

double predict_dag_s(const DagCase& c, const kernels::DagGraph& g, const Calibration& cal) {
  Strategy s;
  s.workload = Workload::kInference;
  s.dtype = DType::kFp32;
  s.micro_batch = s.global_batch = 1;
  s.streams = c.threads;
  const Expected<Plan> plan = lower(dag_model(g, c.graph), s, cal.hardware);
  if (!plan) {
    throw InputError("calibration", "device.task", "", "cannot predict the DAG: " + plan.error().detail);
  }
  return predict_analytical(*plan).iteration_s;
}

}  // namespace

std::vector<DagCaseResult> validate_dags(const std::vector<DagCase>& cases, const Calibration& cal,
                                         int rounds, int repeats,
                                         const std::function<void(std::string_view)>& progress) {
  std::vector<DagCaseResult> out;
  for (const DagCase& c : cases) {
    const kernels::DagGraph g = kernels::dag_example(c.graph, c.flop);
    DagCaseResult r{c.graph, c.threads, static_cast<int>(g.nodes.size())};
    r.predicted_s = predict_dag_s(c, g, cal);
    (void)kernels::run_dag(g, c.threads);  // warm-up: thread start, page faults
    out.push_back(std::move(r));
  }
  for (int round = 0; round < std::max(rounds, 1); ++round) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const kernels::DagGraph g = kernels::dag_example(cases[i].graph, cases[i].flop);
      for (int k = 0; k < std::max(repeats, 1); ++k) {
        const double t = kernels::run_dag(g, cases[i].threads).makespan_s;
        if (out[i].measured_s == 0 || t < out[i].measured_s) out[i].measured_s = t;
      }
      if (progress) {
        progress("round " + std::to_string(round + 1) + "/" + std::to_string(rounds) + ": dag " + cases[i].graph);
      }
    }
  }
  for (DagCaseResult& r : out) r.error = (r.predicted_s - r.measured_s) / r.measured_s;
  return out;
}

}  // namespace stratasim
