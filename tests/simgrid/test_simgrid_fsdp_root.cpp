// Strategy::fsdp_root_gather on SimGrid: the root unit gathered once an iteration (Megatron-FSDP)
// rather than before every micro-batch's forward (FSDP2) saves the same time in both engines.
#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "tests/support/small_plans.h"

namespace stratasim {

TEST_CASE("simgrid: the root unit gathered once an iteration saves what the analytical engine says") {
  // ZeRO-3 over the 8 GPUs of one DGX H100 node, 4 micro-batches of one sample.
  Strategy s;
  s.global_batch = 32, s.micro_batch = 1, s.zero_stage = 3, s.overlap_dp = true;
  Strategy once = s;
  once.fsdp_root_gather = FsdpRootGather::kIteration;
  const Plan each_plan = testing::lower_on("dgx_h100", testing::small_gpt(2), s, 8);
  const Plan once_plan = testing::lower_on("dgx_h100", testing::small_gpt(2), once, 8);
  const SimgridOptions options{.timeline = false};
  const Prediction a = predict_analytical(each_plan), a1 = predict_analytical(once_plan);
  const Prediction g = predict_simgrid(each_plan, options), g1 = predict_simgrid(once_plan, options);
  CHECK(std::abs(g1.iteration_s - a1.iteration_s) / a1.iteration_s < 5e-3);
  const double saved_a = a.iteration_s - a1.iteration_s, saved_g = g.iteration_s - g1.iteration_s;
  REQUIRE(saved_a > 0);
  CHECK(saved_g == doctest::Approx(saved_a).epsilon(0.05));
}

}  // namespace stratasim
