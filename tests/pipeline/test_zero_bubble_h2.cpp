// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): its op order, its bubble
// with optimizer post-validation and its activation memory against the paper's Table 1,
// worked out below.
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

TEST_CASE("zb-h2 order of a small case worked by hand (p = 2, m = 4)") {
  // At most 2p - 1 = 3 micro-batches hold activations. Rank 0: 2(p - 1) + 1 = 3 warm-up
  // forwards; B0, and W0 since 3 are held, F3; then B, W pairs. Rank 1: 1 warm-up forward;
  // B, F pairs until 3 are held (after B2), then W0 before F3; then B3 W1 and the pending W.
  const PipelineSchedule s = schedule_zb_h2(2, 4);
  CHECK(s.split_backward);
  CHECK(s.post_validation);
  using V = std::vector<PipeOp>;
  CHECK(s.per_rank[0] == V{{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {B, 0, 0}, {W, 0, 0}, {F, 3, 0},
                           {B, 1, 0}, {W, 1, 0}, {B, 2, 0}, {W, 2, 0}, {B, 3, 0}, {W, 3, 0}});
  CHECK(s.per_rank[1] == V{{F, 0, 0}, {B, 0, 0}, {F, 1, 0}, {B, 1, 0}, {F, 2, 0}, {B, 2, 0},
                           {W, 0, 0}, {F, 3, 0}, {B, 3, 0}, {W, 1, 0}, {W, 2, 0}, {W, 3, 0}});
}

TEST_CASE("zb-h2 timed by hand: every rank busy from its first op to its last (p = 2, m = 4)") {
  // F = B = W = 1, free transfers. Rank 1: F0 1-2, B0 2-3, F1 3-4, B1 4-5, F2 5-6, B2 6-7,
  // W0 7-8, F3 8-9 (rank 0's F3 ended at 6), B3 9-10, W1..W3 10-13: span 13 - 1 = 12.
  // Rank 0: F0..F2 0-3, B0 3-4 (rank 1's B0 ended at 3), W0 4-5, F3 5-6, B1 6-7, W1 7-8,
  // B2 8-9, W2 9-10, B3 10-11 (rank 1's B3 ended at 10), W3 11-12: span 12.
  // Post-validated, the iteration is the longest span, 12 = 3m: no bubble; the flushed
  // cold-start timeline ends at 13.
  const StageDurations d = uniform_split(2, 1, 1, 1);
  const ScheduleTiming t = time_schedule(ScheduleKind::kZeroBubbleH2, 2, 4, 1, d);
  CHECK(t.rank_start_s == std::vector<double>{0, 1});
  CHECK(t.rank_finish_s == std::vector<double>{12, 13});
  CHECK(t.makespan_s == doctest::Approx(12));
  CHECK(t.bubble_fraction == doctest::Approx(0));
  CHECK(execute_schedule(schedule_zb_h2(2, 4), d).makespan_s == doctest::Approx(13));
}

TEST_CASE("zb-h2 with uniform stages: bubble (p - 1)(F + B - 2W), zero at F = B = W") {
  // Qi et al. Table 1: 1F1B (p - 1)(F + B + W), ZB-H1 (p - 1)(F + B - W), ZB-H2
  // (p - 1)(F + B - 2W) with post-validation, once m >= 2p - 1 fills the parallelogram.
  for (int p : {2, 3, 4, 8}) {
    for (int m : {2 * p - 1, 2 * p, 3 * p + 1, 40}) {
      CAPTURE(p);
      CAPTURE(m);
      const ScheduleTiming unit =
          time_schedule(ScheduleKind::kZeroBubbleH2, p, m, 1, uniform_split(p, 1, 1, 1));
      CHECK(unit.makespan_s == doctest::Approx(3.0 * m));
      CHECK(unit.bubble_fraction == doctest::Approx(0).epsilon(1e-12));
      CHECK(unit.bubble_fraction ==
            doctest::Approx(uniform_bubble_fraction(ScheduleKind::kZeroBubbleH2, p, m, 1)));
      // F = 1, B = 1.5, W = 0.5: 3m + (p - 1)(1 + 1.5 - 1); p = 4: 3m + 4.5.
      const ScheduleTiming skew =
          time_schedule(ScheduleKind::kZeroBubbleH2, p, m, 1, uniform_split(p, 1, 1.5, 0.5));
      CHECK(skew.makespan_s == doctest::Approx(3.0 * m + 1.5 * (p - 1)));
      const ScheduleTiming h1 =
          time_schedule(ScheduleKind::kZeroBubbleH1, p, m, 1, uniform_split(p, 1, 1.5, 0.5));
      CHECK(h1.makespan_s - skew.makespan_s == doctest::Approx(0.5 * (p - 1)));  // one W each
    }
  }
}

TEST_CASE("zb-h2 holds 2p - 1 micro-batches' activations, about twice 1F1B's p") {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 20}) {
      CAPTURE(p);
      CAPTURE(m);
      const std::vector<int> built = peak_in_flight(schedule_zb_h2(p, m));
      const std::vector<int> closed = peak_in_flight(ScheduleKind::kZeroBubbleH2, p, m, 1);
      CHECK(built == closed);
      for (int r = 0; r < p; ++r) CHECK(built[r] == std::min(2 * p - 1, m));
    }
  }
  CHECK(schedule_name(ScheduleKind::kZeroBubbleH2) == "zb_h2");
  CHECK(schedule_rule_violation(ScheduleKind::kZeroBubbleH2, 4, 8, 2).value() ==
        "zb_h2 runs 1 chunk per rank (v=2); only interleaved 1F1B splits a rank into chunks");
}

}  // namespace stratasim
