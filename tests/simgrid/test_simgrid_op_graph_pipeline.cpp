// An operator graph over pipeline stages in the SimGrid engine: each stage's own part of the
// graph and the bytes of its own boundary (ResNet's activations shrink from stage to stage).
// Without contention it agrees with the analytical engine.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/model/model_json.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

TEST_CASE("simgrid: ResNet-101 in 4 pipeline stages agrees with the analytical engine (GPipe and 1F1B, checkpointing every micro-batch or all but the last)") {
  for (const ScheduleKind k : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
   for (const bool last : {true, false}) {  // torchgpipe's checkpoint='except_last' too
    Strategy s;
    s.pp = 4, s.micro_batch = 32, s.global_batch = 512, s.schedule = k, s.dtype = DType::kFp32;
    s.recompute = Recompute::kFull, s.recompute_last_micro_batch = last;
    const Plan plan = testing::lower_on_dgx_a100(model_preset("resnet101"), s, 4);
    REQUIRE(plan.boundary_bytes.size() == 3);
    CHECK(plan.boundary_bytes[0] != plan.boundary_bytes[2]);
    const Prediction a = predict_analytical(plan);
    const Prediction g = predict_simgrid(plan, {.timeline = false});
    CAPTURE(schedule_name(k));
    CAPTURE(last);
    CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < 1e-3);
   }
  }
}

TEST_CASE("simgrid: ResNet-101 interleaved (2 chunks a rank) and zero-bubble H1/H2 over 4 stages agree with the analytical engine") {
  struct Case {
    ScheduleKind kind;
    int interleave;
  };
  for (const Case c : {Case{ScheduleKind::kInterleaved1F1B, 2}, Case{ScheduleKind::kZeroBubbleH1, 1},
                       Case{ScheduleKind::kZeroBubbleH2, 1}}) {
    Strategy s;
    s.pp = 4, s.micro_batch = 32, s.global_batch = 512, s.schedule = c.kind, s.interleave = c.interleave;
    s.dtype = DType::kFp32;
    const Plan plan = testing::lower_on_dgx_a100(model_preset("resnet101"), s, 4);
    REQUIRE(plan.stages.size() == static_cast<size_t>(4 * c.interleave));
    const Prediction a = predict_analytical(plan);
    const Prediction g = predict_simgrid(plan, {.timeline = false});
    CAPTURE(schedule_name(c.kind));
    CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < 1e-3);
  }
}

}  // namespace
}  // namespace stratasim
