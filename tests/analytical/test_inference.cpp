// Inference workloads (issue 16): micro-batches streamed forward through the pipeline, no
// backward, no gradients or optimizer states. Checked against the flow-line closed form: m
// identical jobs through stages of forward times f_i (in order, each stage one at a time)
// finish after sum(f_i) + (m - 1) max(f_i), plus the transfer latencies once; one job alone
// takes sum(f_i) + the latencies.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "sim/analytical/analytical_engine.h"
#include "sim/cost/stage_costs.h"
#include "strategies/lowering/lower.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Strategy inference(int pp, int global_batch) {
  Strategy s;
  s.workload = Workload::kInference;
  s.pp = pp, s.global_batch = global_batch;
  s.uneven_stages = true;
  fusion_preset("all", &s.fusion);
  return s;
}

}  // namespace

TEST_CASE("inference: the forward stream takes sum(f) + (m - 1) max(f), one frame sum(f)") {
  for (int pp : {1, 2, 4}) {
    for (int m : {1, 3, 8}) {
      CAPTURE(pp);
      CAPTURE(m);
      const Plan plan = testing::lower_on_dgx_a100(testing::small_gpt(6), inference(pp, m), pp);
      const StageCosts c = stage_costs(plan);
      const std::vector<double>& f = c.durations.forward_s;
      const double sum = std::accumulate(f.begin(), f.end(), 0.0);
      const double lat =
          std::accumulate(c.durations.p2p_s.begin(), c.durations.p2p_s.end(), 0.0);
      const double slowest = *std::max_element(f.begin(), f.end());
      const Prediction p = predict_analytical(plan);
      CHECK(p.iteration_s == doctest::Approx(sum + lat + (m - 1) * slowest));
      CHECK(p.latency_s == doctest::Approx(sum + lat));
      CHECK(p.optimizer_s == 0);
      CHECK(p.samples_per_s == doctest::Approx(m / p.iteration_s));
    }
  }
}

TEST_CASE("inference: no backward kernels, no sends back, no tail, weights only in memory") {
  const Plan plan = testing::lower_on_dgx_a100(testing::small_gpt(4), inference(2, 4), 2);
  CHECK(plan.layer->backward.empty());
  CHECK(plan.layer->saved_activation_B == 0);
  CHECK(plan.layer->peak_transient_B > 0);  // the largest op's inputs and output
  CHECK(plan.strategy.schedule == ScheduleKind::kGPipe);
  for (const StageProgram& st : plan.iteration.stages) {
    CHECK(st.backward.ops.empty());
    CHECK(st.weight.ops.empty());
  }
  for (const auto& tail : plan.iteration.tail) CHECK(tail.empty());
  const Prediction p = predict_analytical(plan);
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    const MemoryBreakdown& m = p.rank_memory[r];
    CHECK(m.gradients_B == 0);
    CHECK(m.optimizer_B == 0);
    CHECK(m.activations_B == 0);
    CHECK(m.weights_B == doctest::Approx(2 * plan.iteration.rank_params[r]));  // bf16
  }
  // Model FLOPs are the forward's: a third of training's 3x (2 N per token, attention aside).
  Strategy t = inference(2, 4);
  t.workload = Workload::kTraining;
  const Plan train = testing::lower_on_dgx_a100(testing::small_gpt(4), t, 2);
  const double ratio = predict_analytical(train).model_flops / p.model_flops;
  CHECK(ratio == doctest::Approx(3.0).epsilon(0.01));
}

TEST_CASE("inference: what only training has is refused with the field to change") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 2;
  const ModelSpec m = testing::small_gpt(4);
  Strategy s = inference(2, 4);
  s.zero_stage = 1;
  Expected<Plan> zero = lower(m, s, hw);
  REQUIRE_FALSE(zero.has_value());
  CHECK(zero.error().detail ==
        "inference keeps no gradients or optimizer states for ZeRO to shard (zero_stage=1); set "
        "zero_stage 0");
  CHECK(zero.error().field == "zero_stage");
  s = inference(2, 4);
  s.recompute = Recompute::kFull;
  Expected<Plan> recompute = lower(m, s, hw);
  REQUIRE_FALSE(recompute.has_value());
  CHECK(recompute.error().detail ==
        "inference runs no backward, so nothing is recomputed (recompute=full); set recompute none");
  s = inference(2, 4);
  s.interleave = 2;
  s.schedule = ScheduleKind::kInterleaved1F1B;
  Expected<Plan> chunks = lower(m, s, hw);
  REQUIRE_FALSE(chunks.has_value());
  CHECK(chunks.error().detail ==
        "inference streams micro-batches forward through the pp stages, one chunk per rank "
        "(interleave=2); set interleave 1");
}
