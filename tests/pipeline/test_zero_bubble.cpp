// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): its op order, its bubble
// and its activation memory against the paper's closed forms, worked out below.
#include <doctest/doctest.h>

#include <vector>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"
#include "tests/support/split_durations.h"

namespace stratasim {

using testing::B;
using testing::F;
using testing::uniform_split;
using testing::W;

TEST_CASE("zb-h1 order of a small case worked by hand (p = 3, m = 4)") {
  // Rank r: p - r - 1 warm-up forwards; then F, B pairs, each B followed by the oldest pending
  // W once r Bs have run; then the remaining B, W; then the pending W.
  const PipelineSchedule s = schedule_zb_h1(3, 4);
  CHECK(s.split_backward);
  using V = std::vector<PipeOp>;
  CHECK(s.per_rank[0] == V{{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {B, 0, 0}, {W, 0, 0}, {F, 3, 0},
                           {B, 1, 0}, {W, 1, 0}, {B, 2, 0}, {W, 2, 0}, {B, 3, 0}, {W, 3, 0}});
  CHECK(s.per_rank[1] == V{{F, 0, 0}, {F, 1, 0}, {B, 0, 0}, {F, 2, 0}, {B, 1, 0}, {W, 0, 0},
                           {F, 3, 0}, {B, 2, 0}, {W, 1, 0}, {B, 3, 0}, {W, 2, 0}, {W, 3, 0}});
  CHECK(s.per_rank[2] == V{{F, 0, 0}, {B, 0, 0}, {F, 1, 0}, {B, 1, 0}, {F, 2, 0}, {B, 2, 0},
                           {W, 0, 0}, {F, 3, 0}, {B, 3, 0}, {W, 1, 0}, {W, 2, 0}, {W, 3, 0}});
}

TEST_CASE("zb-h1 with uniform stages: bubble (p - 1)(F + B - W), a third of 1F1B's") {
  // Qi et al. Sec. 3.1: 1F1B's bubble is (p - 1)(F + B + W) (B and W run as one backward);
  // ZB-H1 delays each rank's W to fill it, leaving (p - 1)(F + B - W). With F = B = W = 1:
  // makespan 3 m + (p - 1) against 1F1B's 3 m + 3 (p - 1).
  for (int p : {2, 3, 4, 8}) {
    for (int m : {1, 2, 4, 8, 16, 33}) {
      CAPTURE(p);
      CAPTURE(m);
      const StageDurations d = uniform_split(p, 1, 1, 1);
      const ScheduleTiming zb = time_schedule(ScheduleKind::kZeroBubbleH1, p, m, 1, d);
      StageDurations joint = d;
      joint.backward_s.assign(p, 2.0);
      joint.weight_s.clear();
      const ScheduleTiming f1b = time_schedule(ScheduleKind::k1F1B, p, m, 1, joint);
      CHECK(f1b.makespan_s == doctest::Approx(3.0 * m + 3.0 * (p - 1)));
      if (m >= p) {  // the paper's steady state: enough micro-batches to fill the pipeline
        CHECK(zb.makespan_s == doctest::Approx(3.0 * m + (p - 1)));
        CHECK(zb.makespan_s - 3.0 * m == doctest::Approx((f1b.makespan_s - 3.0 * m) / 3));
        CHECK(zb.bubble_fraction ==
              doctest::Approx(uniform_bubble_fraction(ScheduleKind::kZeroBubbleH1, p, m, 1)));
      }
      CHECK(zb.makespan_s <= f1b.makespan_s + 1e-9);
      CHECK(execute_schedule(schedule_zb_h1(p, m), d).makespan_s ==
            doctest::Approx(zb.makespan_s));
    }
  }
  // F + B - W with unequal passes: F = 1, B = 1.5, W = 0.5, p = 4, m = 8:
  // 8 x 3 + 3 x (1 + 1.5 - 0.5) = 30.
  CHECK(time_schedule(ScheduleKind::kZeroBubbleH1, 4, 8, 1, uniform_split(4, 1, 1.5, 0.5))
            .makespan_s == doctest::Approx(30));
}

TEST_CASE("zb-h1 holds at most p micro-batches' activations, as 1F1B's first rank") {
  // A micro-batch is held from its F to its W: rank r runs p - r forwards before its first B
  // and delays W by r, so p are in flight on every rank (1F1B: p - r).
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 20}) {
      CAPTURE(p);
      CAPTURE(m);
      const std::vector<int> built = peak_in_flight(schedule_zb_h1(p, m));
      const std::vector<int> closed = peak_in_flight(ScheduleKind::kZeroBubbleH1, p, m, 1);
      CHECK(built == closed);
      for (int r = 0; r < p; ++r) CHECK(built[r] == std::min(p, m));
      CHECK(built[0] == peak_in_flight(ScheduleKind::k1F1B, p, m, 1)[0]);
    }
  }
}

TEST_CASE("a schedule that splits the backward needs its W: a W-less order is refused") {
  CHECK(schedule_name(ScheduleKind::kZeroBubbleH1) == "zb_h1");
  CHECK_FALSE(schedule_rule_violation(ScheduleKind::kZeroBubbleH1, 4, 8, 1).has_value());
  CHECK(schedule_rule_violation(ScheduleKind::kZeroBubbleH1, 4, 8, 2).value() ==
        "zb_h1 runs 1 chunk per rank (v=2); only interleaved 1F1B splits a rank into chunks");
}
}  // namespace stratasim
