// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024): 2 chunks
// per rank in a V, B and W split. A small case worked by hand, and for any p and m: every op
// once in a legal order, 1F1B's activation memory (2p chunk activations, i.e. p whole
// micro-batches), and with F = B = W per chunk a bubble of at least the lower bound p - 1
// (the last rank cannot start before p - 1 forwards), at it for p <= 4, and below ZB-H1's
// 2 (p - 1) on the same ranks (the greedy construction is not optimal for every m: p = 8,
// m = 9 gives 11).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"
#include "tests/support/split_durations.h"

namespace stratasim {

using testing::B;
using testing::F;
using testing::uniform_split;
using testing::W;

TEST_CASE("zb-v: the V placement: chunk 1 of rank r is stage 2p - 1 - r, the turn on one rank") {
  const PipelineSchedule s = schedule_zb_v(4, 8);
  CHECK(s.v_shape);
  CHECK_FALSE(s.bidirectional);
  CHECK(s.split_backward);
  CHECK(s.chunks == 2);
  const StageMap map = s.stage_map();
  CHECK(map.virtual_stage(0, 0) == 0);
  CHECK(map.virtual_stage(3, 0) == 3);
  CHECK(map.virtual_stage(3, 1) == 4);
  CHECK(map.virtual_stage(0, 1) == 7);
  CHECK(map.next_stage(3) == 4);  // one chain through all 2p stages ...
  CHECK_FALSE(map.sends_forward(3));  // ... whose turn needs no message
  CHECK_FALSE(map.sends_backward(4));
  CHECK(map.sends_forward(4));
  CHECK(map.rank_of(5) == 2);
  CHECK(map.next_stage(7) == -1);  // the last stage is on rank 0
}

TEST_CASE("zb-v: a small case worked by hand (p = 2, m = 2, unit costs)") {
  // Rank 0 holds stages 0 (chunk 0) and 3 (chunk 1), rank 1 stages 1 and 2. Warm-up caps:
  // rank 0 may run 2(p - 0) - 1 = 3 chunk-0 forwards ahead of chunk 1, rank 1 only 1.
  // Worked in unit steps ([t, t+1)):
  //   rank 0: 0 F0a | 1 F1a | 2 idle (stage 3 waits for stage 2) | 3 F0b | 4 B0b (the loss is
  //           here) | 5 F1b | 6 B1b | 7 B0a | 8 W0b (B1a waits for rank 1) | 9 B1a | 10-12 the
  //           W still pending, oldest first: W1b W0a W1a.
  //   rank 1: 0 idle | 1 F0a | 2 F0b (the turn: its input is on the rank) | 3 F1a (cap:
  //           1 - 1 < 1) | 4 F1b | 5 B0b | 6 B0a | 7 B1b | 8 B1a | 9-12 W0b W0a W1b W1a.
  // (a: chunk 0, b: chunk 1.)
  const PipelineSchedule s = schedule_zb_v(2, 2);
  using V = std::vector<PipeOp>;
  CHECK(s.per_rank[0] == V{{F, 0, 0}, {F, 1, 0}, {F, 0, 1}, {B, 0, 1}, {F, 1, 1}, {B, 1, 1},
                           {B, 0, 0}, {W, 0, 1}, {B, 1, 0}, {W, 1, 1}, {W, 0, 0}, {W, 1, 0}});
  CHECK(s.per_rank[1] == V{{F, 0, 0}, {F, 0, 1}, {F, 1, 0}, {F, 1, 1}, {B, 0, 1}, {B, 0, 0},
                           {B, 1, 1}, {B, 1, 0}, {W, 0, 1}, {W, 0, 0}, {W, 1, 1}, {W, 1, 0}});
  // Unit costs, free transfers: 12 units of work per rank and one unit of bubble (p - 1).
  const ScheduleTiming t = time_schedule(ScheduleKind::kZeroBubbleV, 2, 2, 2, uniform_split(4, 1, 1, 1));
  CHECK(t.makespan_s == doctest::Approx(13));
  CHECK(t.makespan_s == doctest::Approx(execute_schedule(s, uniform_split(4, 1, 1, 1)).makespan_s));
}

TEST_CASE("zb-v: every op once in order, 1F1B's memory, a bubble at the lower bound") {
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {1, 2, p, p + 1, 2 * p, 4 * p + 3}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineSchedule s = schedule_zb_v(p, m);
      for (int r = 0; r < p; ++r) {
        std::set<std::tuple<int, int, int>> seen;
        std::set<std::pair<int, int>> forwarded, backwarded;
        for (const PipeOp& op : s.per_rank[r]) {
          CHECK(seen.insert({int(op.kind), op.micro_batch, op.chunk}).second);
          const std::pair<int, int> key{op.micro_batch, op.chunk};
          if (op.kind == F) forwarded.insert(key);
          if (op.kind == B) {
            CHECK(forwarded.count(key) == 1);  // B after its own F
            backwarded.insert(key);
          }
          if (op.kind == W) CHECK(backwarded.count(key) == 1);  // W after its B
        }
        CHECK(seen.size() == static_cast<size_t>(6 * m));
      }
      // Activations from F to W: at most 2p chunk activations (p whole micro-batches, 1F1B's
      // peak on its first rank), reached when there are enough micro-batches.
      const std::vector<int> peak = peak_in_flight(s);
      CHECK(*std::max_element(peak.begin(), peak.end()) <= std::min(2 * p, 2 * m));
      if (m >= p) CHECK(peak[0] == 2 * p);
      CHECK(peak_in_flight(ScheduleKind::kZeroBubbleV, p, m, 2) == peak);
      // F = B = W = 1 per chunk: 6m of work per rank; the last rank starts after p - 1
      // forwards, so the bubble is at least p - 1.
      const StageDurations d = uniform_split(2 * p, 1, 1, 1);
      const ScheduleTiming t = time_schedule(ScheduleKind::kZeroBubbleV, p, m, 2, d);
      CHECK(t.makespan_s == doctest::Approx(execute_schedule(s, d).makespan_s));
      const double bubble = t.makespan_s - 6.0 * m;
      CHECK(bubble >= p - 1 - 1e-9);
      if (m >= p) {
        if (p <= 4) CHECK(bubble == doctest::Approx(p - 1));
        // ZB-H1 on the same ranks (each rank's two chunks as one stage: F = B = W = 2):
        // (p - 1)(F + B - W) = 2 (p - 1).
        const ScheduleTiming h1 =
            time_schedule(ScheduleKind::kZeroBubbleH1, p, m, 1, uniform_split(p, 2, 2, 2));
        CHECK(h1.makespan_s - 6.0 * m == doctest::Approx(2.0 * (p - 1)));
        if (p >= 3) CHECK(bubble < h1.makespan_s - 6.0 * m);
      }
    }
  }
}

TEST_CASE("zb-v: illegal shapes are named") {
  CHECK(schedule_rule_violation(ScheduleKind::kZeroBubbleV, 4, 8, 1) ==
        std::optional<std::string>("ZB-V runs 2 chunks per rank in a V (v=1)"));
  CHECK_FALSE(schedule_rule_violation(ScheduleKind::kZeroBubbleV, 4, 8, 2).has_value());
  CHECK(schedule_name(ScheduleKind::kZeroBubbleV) == "zb_v");
}

}  // namespace stratasim
