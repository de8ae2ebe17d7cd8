// DualPipe (DeepSeek-V3 report, Sec. 3.2.1; deepseek-ai/DualPipe): the op order of a small
// case worked by hand from the reference's eight steps, its timing, and the parameter and
// activation memory of the README's comparison table (2x parameters, PP + 1 activations).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"
#include "tests/support/split_durations.h"

namespace stratasim {

using testing::B;
using testing::F;
using testing::uniform_split;
using testing::W;

TEST_CASE("dualpipe order of a small case worked by hand (p = 2, m = 2 per direction)") {
  // p = 2: both ranks are middle ranks (h = 0). Rank 0's own direction is chunk 0 (entering at
  // rank 0), rank 1's is chunk 1. Step 2: F own, F other. Step 4 (m - p + h + 1 = 1 time): the
  // first pair unoverlapped (middle rank): F own, full backward of the other direction (this
  // rank is its last stage); then the pair F other & B own. Step 6 (1 pair): full B of the
  // other direction, B own with its W deferred (h even: deferred from the middle pair on).
  // Step 8: that W.
  const PipelineSchedule s = schedule_dualpipe(2, 2);
  CHECK(s.bidirectional);
  CHECK(s.split_backward);
  CHECK(s.chunks == 2);
  using V = std::vector<PipeOp>;
  CHECK(s.per_rank[0] == V{{F, 0, 0}, {F, 0, 1}, {F, 1, 0}, {B, 0, 1}, {W, 0, 1}, {F, 1, 1},
                           {B, 0, 0}, {W, 0, 0}, {B, 1, 1}, {W, 1, 1}, {B, 1, 0}, {W, 1, 0}});
  CHECK(s.per_rank[1] == V{{F, 0, 1}, {F, 0, 0}, {F, 1, 1}, {B, 0, 0}, {W, 0, 0}, {F, 1, 0},
                           {B, 0, 1}, {W, 0, 1}, {B, 1, 0}, {W, 1, 0}, {B, 1, 1}, {W, 1, 1}});
  // Chunk 1 of rank r is stage p - 1 - r of the reverse direction.
  CHECK(s.virtual_stage(0, 0) == 0);
  CHECK(s.virtual_stage(1, 0) == 1);
  CHECK(s.virtual_stage(1, 1) == 2);
  CHECK(s.virtual_stage(0, 1) == 3);
  CHECK(s.next_stage(1) == -1);  // the forward direction ends at rank 1 ...
  CHECK(s.prev_stage(2) == -1);  // ... and the reverse one starts there
  CHECK(s.rank_of(3) == 0);
  // F = B = W = 1, free transfers, worked through: rank 0 runs F 0-1, F(rev) 1-2 (after rank
  // 1's first forward), F 2-3, B(rev) 3-4, W 4-5, F(rev) 5-6, B 6-7 (rank 1's B(0) ended at
  // 4), W 7-8, B(rev) 8-9, W 9-10, then B(1) after rank 1's B(1) (9): 10-11,
  // W 11-12. Rank 1 mirrors it. Both ranks are busy all 12 units: no bubble, as the README's
  // (p/2 - 1)(F&B + B - 3W) = 0 says for p = 2.
  const Timeline t = execute_schedule(s, uniform_split(4, 1, 1, 1));
  CHECK(t.makespan_s == doctest::Approx(12));
  CHECK(t.per_rank[0][5].start_s == doctest::Approx(5));
  CHECK(t.per_rank[0][10].start_s == doctest::Approx(10));
  CHECK(time_schedule(ScheduleKind::kDualPipe, 2, 4, 2, uniform_split(4, 1, 1, 1)).makespan_s ==
        doctest::Approx(12));
}

TEST_CASE("dualpipe: each rank holds two stages, PP + 1 activations, a bubble that does not grow with m") {
  for (int p : {4, 6, 8}) {
    for (int m : {p, p + 1, 3 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineSchedule s = schedule_dualpipe(p, m);
      // 2x parameters: rank r runs model stage r (chunk 0) and stage p - 1 - r (chunk 1).
      for (int r = 0; r < p; ++r) {
        std::set<int> stages;
        for (const PipeOp& op : s.per_rank[r]) stages.insert(s.virtual_stage(r, op.chunk) % p);
        CHECK(stages == std::set<int>{r, p - 1 - r});
        CHECK(s.per_rank[r].size() == static_cast<size_t>(3 * 2 * m));  // F, B, W per chunk
      }
      // Activations: a micro-batch's from its forward to its W; the busiest ranks hold p + 1
      // (the README: PP + 1, against 1F1B's PP).
      const std::vector<int> peak = peak_in_flight(s);
      CHECK(*std::max_element(peak.begin(), peak.end()) == p + 1);
      CHECK(peak_in_flight(ScheduleKind::kDualPipe, p, 2 * m, 2) == peak);  // 2m in all
      // F = 1, B = 2, W = 1 (full backward 3): each rank computes 2m (F + B + W) = 8m. The
      // bubble is the same for every m, at most the README's (p/2 - 1)(F&B + B_full - 3W) with
      // F&B = F + B_full = 4 (no overlap), and below 1F1B's (p - 1)(F + B_full) on p stages.
      const StageDurations d = uniform_split(2 * p, 1, 2, 1);
      const ScheduleTiming t = time_schedule(ScheduleKind::kDualPipe, p, 2 * m, 2, d);
      CHECK(t.makespan_s == doctest::Approx(execute_schedule(s, d).makespan_s));
      const double bubble = t.makespan_s - 8.0 * m;
      const double first = time_schedule(ScheduleKind::kDualPipe, p, 2 * p, 2, d).makespan_s - 8.0 * p;
      CHECK(bubble == doctest::Approx(first));
      CHECK(bubble > 0);
      CHECK(bubble <= (p / 2 - 1) * (4.0 + 3.0 - 3.0) + 1e-9);
      CHECK(bubble < (p - 1) * 4.0);
      CHECK(t.rank_busy_s[0] == doctest::Approx(8.0 * m));
    }
  }
}

TEST_CASE("dualpipe: illegal shapes are named") {
  CHECK(schedule_rule_violation(ScheduleKind::kDualPipe, 3, 6, 2) ==
        std::optional<std::string>("DualPipe needs an even pp (pp=3)"));
  CHECK(schedule_rule_violation(ScheduleKind::kDualPipe, 4, 9, 2) ==
        std::optional<std::string>(
            "DualPipe feeds half the micro-batches from each end and needs an even number (m=9)"));
  CHECK(schedule_rule_violation(ScheduleKind::kDualPipe, 4, 6, 2) ==
        std::optional<std::string>(
            "DualPipe needs at least pp micro-batches in each direction, 2 pp in all (m=6, pp=4)"));
  CHECK(schedule_rule_violation(ScheduleKind::kDualPipe, 4, 4, 1) ==
        std::optional<std::string>("DualPipe runs 2 chunks per rank, one per direction (v=1)"));
  CHECK_FALSE(schedule_rule_violation(ScheduleKind::kDualPipe, 4, 8, 2).has_value());
  CHECK(schedule_name(ScheduleKind::kDualPipe) == "dualpipe");
}

}  // namespace stratasim
