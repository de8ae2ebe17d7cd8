// Operator graphs over pipeline stages (GPipe, Huang et al. 2019; torchgpipe): contiguous parts
// of the op list, the tensors crossing each boundary, and the balanced split (tests/simgrid: both engines).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/stage_costs.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/op_graph_stages.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

GraphOp op(std::string name, double out, std::vector<int> inputs, double flops = 1e9) {
  return GraphOp{.name = std::move(name), .kind = GraphOpKind::kConv, .flops = flops,
                 .output_elements = out, .params = 10, .inputs = std::move(inputs)};
}

// a -> b -> c -> d(c, a): a skip from a to d, as a residual block's identity.
OpGraphSpec skip_chain() {
  OpGraphSpec g;
  g.ops = {op("a", 100, {}), op("b", 20, {0}), op("c", 30, {1}), op("d", 40, {2, 0})};
  g.ops[0].input_elements = 50;
  return g;
}

HardwareModel a100s(int devices) {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  return hw;
}

// Every split of n costs into `parts` non-empty parts, by brute force: the smallest largest part.
double brute_force_min_max(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  double best = std::numeric_limits<double>::max();
  std::vector<int> cut(parts - 1);
  for (int i = 0; i < parts - 1; ++i) cut[i] = i + 1;
  while (true) {
    double worst = 0;
    for (int k = 0, begin = 0; k < parts; ++k) {
      const int end = k < parts - 1 ? cut[k] : n;
      double sum = 0;
      for (int i = begin; i < end; ++i) sum += costs[i];
      worst = std::max(worst, sum);
      begin = end;
    }
    best = std::min(best, worst);
    int k = parts - 2;  // next combination of cut points, increasing
    while (k >= 0 && cut[k] == n - (parts - 1 - k)) --k;
    if (k < 0) break;
    ++cut[k];
    for (int j = k + 1; j < parts - 1; ++j) cut[j] = cut[j - 1] + 1;
  }
  return best;
}

double largest_part(const std::vector<double>& costs, const std::vector<int>& counts) {
  double worst = 0;
  size_t at = 0;
  for (int c : counts) {
    double sum = 0;
    for (int i = 0; i < c; ++i) sum += costs[at++];
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace

TEST_CASE("op-graph pipeline: a boundary carries every tensor made before it and read after it") {
  // Split [a, b | c, d]: c reads b, d reads a (the skip). Boundary: b (20) + a (100) = 120 per
  // sample. Stage 2's external inputs, in producer order: a, then b.
  const OpGraphStages s = split_op_graph(skip_chain(), {2, 2});
  REQUIRE(s.stages.size() == 2);
  REQUIRE(s.boundary_elements.size() == 1);
  CHECK(s.boundary_elements[0] == 120);
  const OpGraphSpec& second = s.stages[1];
  CHECK(second.source_offset == 2);
  CHECK(second.external_inputs == std::vector<double>{20, 100});  // b first: c reads it first
  CHECK(second.ops[0].inputs == std::vector<int>{-1});             // c <- b
  CHECK(second.ops[1].inputs == std::vector<int>{0, -2});          // d <- c, a
  // Split [a | b, c | d]: the first boundary carries a (b and d read it), the second c and a.
  const OpGraphStages three = split_op_graph(skip_chain(), {1, 2, 1});
  CHECK(three.boundary_elements == std::vector<double>{100, 130});
}

TEST_CASE("op-graph pipeline: the balanced split is the smallest slowest part (checked by brute force)") {
  // By hand: [1 2 3 | 4 | 5] has largest part 6, and it is the only split with no part above 6
  // (the first part can hold at most 1+2+3, and 4+5 = 9 does not fit in one).
  CHECK(min_max_partition({1, 2, 3, 4, 5}, 3) == std::vector<int>{3, 1, 1});
  // Zero costs still give every part one op at least; as many parts as costs, one each.
  CHECK(min_max_partition({0, 0, 0, 0, 0}, 3) == std::vector<int>{3, 1, 1});
  CHECK(min_max_partition({5, 1, 1}, 3) == std::vector<int>{1, 1, 1});
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.1, 10);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 4 + trial % 9, parts = 2 + trial % 3;
    std::vector<double> c(n);
    for (double& x : c) x = cost(rng);
    const std::vector<int> counts = min_max_partition(c, parts);
    REQUIRE(static_cast<int>(counts.size()) == parts);
    CHECK(std::all_of(counts.begin(), counts.end(), [](int k) { return k >= 1; }));
    CHECK(largest_part(c, counts) == doctest::Approx(brute_force_min_max(c, parts)).epsilon(1e-12));
  }
}

TEST_CASE("op-graph pipeline: ResNet-50 in 4 balanced stages, against every split of its estimated op times") {
  Strategy s;
  s.pp = 4, s.micro_batch = 32, s.global_batch = 256, s.schedule = ScheduleKind::kGPipe;
  s.dtype = DType::kFp32;
  const ModelSpec m = model_preset("resnet50");
  Expected<Plan> plan = lower(m, s, a100s(4));
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  const std::vector<double> t =
      op_time_estimates(*plan->layer, plan->hardware.device, DType::kFp32, static_cast<int>(m.graph.ops.size()));
  std::vector<int> counts;
  for (const VirtualStage& st : plan->stages) counts.push_back(st.ops);
  CHECK(static_cast<int>(counts.size()) == 4);
  CHECK(counts[0] + counts[1] + counts[2] + counts[3] == static_cast<int>(m.graph.ops.size()));
  // A second implementation: all C(n-1, 3) cut placements (about 0.9 M for ResNet-50's ops).
  CHECK(largest_part(t, counts) == doctest::Approx(brute_force_min_max(t, 4)).epsilon(1e-12));
  // The stages hold all of the model's parameters, each its own ops' (a conv's weights are where it runs).
  double params = 0;
  for (const VirtualStage& st : plan->stages) params += st.params;
  CHECK(params == doctest::Approx(total_params(m)));
}

TEST_CASE("op-graph pipeline: the boundary after ResNet-50's layer1 carries one 56x56x256 activation") {
  // ops: stem conv/bn/relu/maxpool (4), then layer1's 3 bottlenecks: 12 + 10 + 10 ops (the first
  // has the downsample conv + bn). After op 36 only layer1.2's output crosses: 56 x 56 x 256
  // elements per sample x 32 samples x 4 B (fp32) = 102,760,448 B.
  const ModelSpec m = model_preset("resnet50");
  REQUIRE(m.graph.ops[35].name == "layer1.2.relu");
  Strategy s;
  s.pp = 2, s.micro_batch = 32, s.global_batch = 256, s.schedule = ScheduleKind::k1F1B;
  s.dtype = DType::kFp32;
  s.stage_split = StageSplit::kExplicit;
  s.stage_layers = {36, static_cast<int>(m.graph.ops.size()) - 36};
  Expected<Plan> plan = lower(m, s, a100s(2));
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  REQUIRE(plan->boundary_bytes.size() == 1);
  CHECK(plan->boundary_bytes[0] == 102760448.0);
  CHECK(plan->p2p_bytes == 102760448.0);
  // The iteration program's sends carry it both ways (activation forward, gradient back).
  CHECK(plan->iteration.stages[0].forward.ops.back().bytes == 102760448.0);
  CHECK(plan->iteration.stages[1].backward.ops.back().bytes == 102760448.0);
  CHECK(plan->stages[0].ops == 36);
  CHECK(plan->stages[1].first_layer == 36);
}

TEST_CASE("op-graph pipeline: refusals name the rule") {
  const ModelSpec m = model_preset("resnet50");
  const int ops = static_cast<int>(m.graph.ops.size());
  Strategy s;
  s.pp = 2, s.micro_batch = 8, s.global_batch = 64, s.dtype = DType::kFp32;
  s.schedule = ScheduleKind::kDualPipe;
  Expected<Plan> bad = lower(m, s, a100s(2));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "schedule dualpipe on an operator graph: its chunks run the op list in two directions, which is not "
        "modelled (gpipe, 1f1b, interleaved, zb_h1, zb_h2 and pipedream_async are)");
  // Interleaved: pp x interleave = 4 parts of the op list, in chain order (chunk c of rank r is
  // virtual stage c pp + r), each stage's own block.
  s.schedule = ScheduleKind::kInterleaved1F1B, s.interleave = 2;
  Expected<Plan> interleaved = lower(m, s, a100s(2));
  REQUIRE_MESSAGE(interleaved.has_value(), (interleaved ? "" : interleaved.error().detail));
  REQUIRE(interleaved->stages.size() == 4);
  CHECK(interleaved->stage_blocks.size() == 4);
  CHECK(interleaved->boundary_bytes.size() == 3);
  int first = 0;
  for (const VirtualStage& st : interleaved->stages) {
    CHECK(st.first_layer == first);
    CHECK(st.block == &st - interleaved->stages.data());
    first += st.ops;
  }
  CHECK(first == ops);
  CHECK(interleaved->stages[2].rank == 0);  // chunk 1 of rank 0
  s.schedule = ScheduleKind::k1F1B, s.interleave = 1;
  s.stage_split = StageSplit::kExplicit;
  s.stage_layers = {10, ops};
  bad = lower(m, s, a100s(2));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail == "stage_layers sum to " + std::to_string(10 + ops) + " ops where the graph has " +
                                  std::to_string(ops));
  s.stage_layers = {ops};
  bad = lower(m, s, a100s(2));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "stage_layers lists 1 stages where the pipeline has 2 (pp x interleave); an operator graph's stage_layers "
        "counts its ops");
  s.stage_split = StageSplit::kAuto;
  s.stage_layers.clear();
  s.placement = {{"*", 0}};
  bad = lower(m, s, a100s(2));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "placement and pp > 1 together: an operator graph is split either by placement or into pipeline stages");
}

TEST_CASE("op-graph pipeline: GPipe over 4 stages beats one device and the bubble follows (p-1)/(m+p-1)") {
  Strategy s;
  s.micro_batch = 32, s.global_batch = 512, s.schedule = ScheduleKind::kGPipe, s.dtype = DType::kFp32;
  s.pp = 1;
  const Prediction one = predict_analytical(*lower(model_preset("resnet101"), s, a100s(1)));
  s.pp = 4;
  Expected<Plan> four = lower(model_preset("resnet101"), s, a100s(4));
  REQUIRE(four.has_value());
  const Prediction p = predict_analytical(*four);
  // m = 16 micro-batches over p = 4 equal stages would idle (p-1)/(m+p-1) = 3/19 = 15.8% of
  // the pipeline; unequal stages and the transfers add to it, never take from it.
  CHECK(p.bubble_fraction >= 3.0 / 19.0 - 1e-9);
  CHECK(p.bubble_fraction < 3.0 / 19.0 + 0.05);
  CHECK(p.samples_per_s > 2.5 * one.samples_per_s);
  CHECK(p.samples_per_s < 4.0 * one.samples_per_s);
}

TEST_CASE("op-graph pipeline: checkpoint except_last saves one recomputation per stage on the critical path") {
  // One stage, two micro-batches (torchgpipe's pipeline-1 of ResNet-101): F F B(+R) B, the last
  // micro-batch keeping its activations. The iteration is shorter by exactly one recomputation
  // of the stage, which stage_costs reports.
  Strategy s;
  s.micro_batch = 32, s.global_batch = 64, s.schedule = ScheduleKind::kGPipe, s.dtype = DType::kFp32;
  s.recompute = Recompute::kFull;
  const Plan all = *lower(model_preset("resnet101"), s, a100s(1));
  s.recompute_last_micro_batch = false;
  const Plan last = *lower(model_preset("resnet101"), s, a100s(1));
  const double recompute = stage_costs(all).stages[0].recompute_s;
  CHECK(recompute > 0);
  CHECK(predict_analytical(all).iteration_s - predict_analytical(last).iteration_s ==
        doctest::Approx(recompute).epsilon(1e-9));
  // Without recomputation the flag changes nothing.
  s.recompute = Recompute::kNone;
  const Plan none_last = *lower(model_preset("resnet101"), s, a100s(1));
  s.recompute_last_micro_batch = true;
  CHECK(predict_analytical(none_last).iteration_s ==
        doctest::Approx(predict_analytical(*lower(model_preset("resnet101"), s, a100s(1))).iteration_s));
}
