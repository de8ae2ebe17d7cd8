// Transformer Engine's delayed-scaling amax reductions (IterOpKind::kFp8AmaxReduce) in the
// SimGrid engine: the comm stream runs them in closed form after each chunk's forward and
// backward, and what follows waits for them, as in the analytical engine's step schedule.
#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

double amax_s(const Prediction& p) {
  for (const CommStat& c : p.comms) {
    if (c.category == CommCategory::kFp8Amax) return c.total_s;
  }
  return 0;
}

}  // namespace

TEST_CASE("simgrid: fp8 amax reductions take the analytical engine's time and lengthen the iteration alike") {
  // tp 2 x dp 2 x pp 2, two chunks a rank, 8 micro-batches on one DGX H100 node: rank 0 runs
  // 32 reductions over its 4-rank stage.
  Strategy s;
  s.tp = 2, s.pp = 2, s.interleave = 2, s.schedule = ScheduleKind::kInterleaved1F1B;
  s.global_batch = 16, s.micro_batch = 1;
  s.dtype = DType::kFp8, s.fp8_scaling = Fp8Scaling::kDelayed;
  Strategy none = s;
  none.fp8_amax_reduction = Fp8AmaxReduction::kNone;
  const Plan with = testing::lower_on("dgx_h100", testing::small_gpt(4), s, 8);
  const Plan without = testing::lower_on("dgx_h100", testing::small_gpt(4), none, 8);
  const SimgridOptions options{.timeline = false};
  const Prediction a = predict_analytical(with), g = predict_simgrid(with, options);
  const Prediction a0 = predict_analytical(without), g0 = predict_simgrid(without, options);
  REQUIRE(amax_s(a) > 0);
  CHECK(amax_s(g) == doctest::Approx(amax_s(a)).epsilon(1e-9));
  CHECK(amax_s(g0) == 0);
  // Both engines see the same longer steps through the same schedule.
  CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < 1e-3);
  const double added_a = a.iteration_s - a0.iteration_s, added_g = g.iteration_s - g0.iteration_s;
  CHECK(added_a > 0);
  CHECK(added_g == doctest::Approx(added_a).epsilon(0.02));
}

}  // namespace stratasim
