// Op orders of the pipeline schedules, their legality rules and peak_in_flight. Expected values
// are derived by hand in the comments, not by calling the code under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

constexpr PipeOpKind F = PipeOpKind::kForward;
constexpr PipeOpKind B = PipeOpKind::kBackward;

int leading_forwards(const std::vector<PipeOp>& ops) {
  int n = 0;
  while (n < static_cast<int>(ops.size()) && ops[n].kind == F) ++n;
  return n;
}

// Every (micro-batch, chunk) appears exactly once as a forward and once as a backward, and the
// backward comes after the forward.
void check_each_op_once(const PipelineSchedule& s) {
  for (int r = 0; r < s.stages; ++r) {
    const auto& ops = s.per_rank[r];
    CHECK(static_cast<int>(ops.size()) == 2 * s.micro_batches * s.chunks);
    std::set<std::tuple<int, int, int>> seen;
    for (size_t j = 0; j < ops.size(); ++j) {
      const PipeOp& op = ops[j];
      REQUIRE(op.micro_batch >= 0);
      REQUIRE(op.micro_batch < s.micro_batches);
      REQUIRE(op.chunk >= 0);
      REQUIRE(op.chunk < s.chunks);
      CHECK(seen.insert({static_cast<int>(op.kind), op.micro_batch, op.chunk}).second);
      if (op.kind == B) {
        const PipeOp fwd{F, op.micro_batch, op.chunk};
        CHECK(std::find(ops.begin(), ops.begin() + j, fwd) != ops.begin() + j);
      }
    }
    CHECK(static_cast<int>(seen.size()) == 2 * s.micro_batches * s.chunks);
  }
}

}  // namespace

TEST_CASE("schedule names") {
  CHECK(schedule_name(ScheduleKind::kGPipe) == "gpipe");
  CHECK(schedule_name(ScheduleKind::k1F1B) == "1f1b");
  CHECK(schedule_name(ScheduleKind::kInterleaved1F1B) == "interleaved");
  CHECK(schedule_name(ScheduleKind::kPipeDreamAsync) == "pipedream_async");
}

TEST_CASE("gpipe runs all forwards, then all backwards in ascending micro-batch order") {
  const PipelineSchedule s = schedule_gpipe(3, 4);
  CHECK(s.kind == ScheduleKind::kGPipe);
  CHECK(s.stages == 3);
  CHECK(s.micro_batches == 4);
  CHECK(s.chunks == 1);
  CHECK(s.flush);
  REQUIRE(s.per_rank.size() == 3);
  const std::vector<PipeOp> expected = {{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {F, 3, 0},
                                        {B, 0, 0}, {B, 1, 0}, {B, 2, 0}, {B, 3, 0}};
  for (const auto& ops : s.per_rank) CHECK(ops == expected);
  check_each_op_once(s);
}

TEST_CASE("1f1b order of a small case worked by hand") {
  // p = 4, m = 6, rank 1: warm-up min(4 - 1 - 1, 6) = 2 forwards (F0 F1), then 6 - 2 = 4
  // pairs (F2 B0, F3 B1, F4 B2, F5 B3), then the 2 remaining backwards (B4 B5).
  const PipelineSchedule s = schedule_1f1b(4, 6);
  const std::vector<PipeOp> rank1 = {{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {B, 0, 0},
                                     {F, 3, 0}, {B, 1, 0}, {F, 4, 0}, {B, 2, 0},
                                     {F, 5, 0}, {B, 3, 0}, {B, 4, 0}, {B, 5, 0}};
  CHECK(s.per_rank[1] == rank1);
  // Rank 3 (last): no warm-up, strictly alternating F0 B0 F1 B1 ...
  for (int k = 0; k < 6; ++k) {
    CHECK(s.per_rank[3][2 * k] == PipeOp{F, k, 0});
    CHECK(s.per_rank[3][2 * k + 1] == PipeOp{B, k, 0});
  }
}

TEST_CASE("1f1b warm-up is p - rank - 1 forwards") {
  // The warm-up (p - r - 1 forwards, or all m when m is smaller) is followed by the first
  // forward of the steady phase, so a rank runs min(p - r, m) forwards before its first backward.
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 5, 8, 16}) {
      CAPTURE(p);
      CAPTURE(m);
      const PipelineSchedule s = schedule_1f1b(p, m);
      CHECK(s.kind == ScheduleKind::k1F1B);
      CHECK(s.flush);
      for (int r = 0; r < p; ++r) CHECK(leading_forwards(s.per_rank[r]) == std::min(p - r, m));
      check_each_op_once(s);
    }
  }
}

TEST_CASE("interleaved order of a small case worked by hand") {
  // p = 2, m = 4, v = 2: virtual steps k = 0..7. Forward step k: chunk (k / 2) % 2, micro-batch
  // (k / 4) * 2 + k % 2, so k = 0..7 -> (mb, chunk) = (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1)
  // (3,1). Backward step k: chunk 1 - (k / 2) % 2, same micro-batch, so k = 0..7 -> (0,1) (1,1)
  // (0,0) (1,0) (2,1) (3,1) (2,0) (3,0).
  // Rank 0 warms up with min(2 * (2 - 0 - 1) + (2 - 1) * 2, 8) = 4 forward steps, rank 1 with
  // min(0 + 2, 8) = 2; then pairs (forward k + w, backward k), then the last w backwards.
  const PipelineSchedule s = schedule_interleaved(2, 4, 2);
  CHECK(s.kind == ScheduleKind::kInterleaved1F1B);
  CHECK(s.chunks == 2);
  const std::vector<PipeOp> rank0 = {
      {F, 0, 0}, {F, 1, 0}, {F, 0, 1}, {F, 1, 1},                        // warm-up k = 0..3
      {F, 2, 0}, {B, 0, 1}, {F, 3, 0}, {B, 1, 1}, {F, 2, 1}, {B, 0, 0},  // pairs
      {F, 3, 1}, {B, 1, 0},                                              //
      {B, 2, 1}, {B, 3, 1}, {B, 2, 0}, {B, 3, 0}};                       // cool-down k = 4..7
  const std::vector<PipeOp> rank1 = {
      {F, 0, 0}, {F, 1, 0},                                              // warm-up k = 0..1
      {F, 0, 1}, {B, 0, 1}, {F, 1, 1}, {B, 1, 1}, {F, 2, 0}, {B, 0, 0},  // pairs
      {F, 3, 0}, {B, 1, 0}, {F, 2, 1}, {B, 2, 1}, {F, 3, 1}, {B, 3, 1},  //
      {B, 2, 0}, {B, 3, 0}};                                             // cool-down k = 6..7
  CHECK(s.per_rank[0] == rank0);
  CHECK(s.per_rank[1] == rank1);
  check_each_op_once(s);
}

TEST_CASE("interleaved warm-up counts") {
  // Forwards before the first backward = warm-up w + 1 (the first pair starts with a forward),
  // or all m v forwards when w >= m v. w = min(2 (p - r - 1) + (v - 1) p, m v):
  struct Case {
    int p, m, v, rank, forwards_before_first_backward;
  };
  const Case cases[] = {
      {4, 8, 2, 0, 11},   // w = 2*3 + 1*4 = 10
      {4, 8, 2, 3, 5},    // w = 0 + 4 = 4
      {4, 8, 3, 1, 13},   // w = 2*2 + 2*4 = 12
      {4, 4, 2, 0, 8},    // w = 10 >= m v = 8: every forward first
      {4, 4, 2, 2, 7},    // w = 2 + 4 = 6
      {8, 16, 2, 0, 23},  // w = 14 + 8 = 22
      {1, 3, 2, 0, 2},    // w = 0 + 1 = 1
  };
  for (const Case& c : cases) {
    CAPTURE(c.p);
    CAPTURE(c.m);
    CAPTURE(c.v);
    CAPTURE(c.rank);
    const PipelineSchedule s = schedule_interleaved(c.p, c.m, c.v);
    CHECK(leading_forwards(s.per_rank[c.rank]) == c.forwards_before_first_backward);
  }
}

TEST_CASE("interleaved runs every (micro-batch, chunk) once per rank") {
  for (int p : {1, 2, 3, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int groups : {1, 2, 3}) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(groups);
        check_each_op_once(schedule_interleaved(p, groups * p, v));
      }
    }
  }
}

TEST_CASE("interleaved with one chunk is plain 1f1b order") {
  const PipelineSchedule s = schedule_interleaved(4, 6, 1);
  CHECK(s.kind == ScheduleKind::kInterleaved1F1B);
  CHECK(s.per_rank == schedule_1f1b(4, 6).per_rank);
}

TEST_CASE("pipedream async is 1f1b order without a flush") {
  const PipelineSchedule s = schedule_pipedream_async(4, 6);
  CHECK(s.kind == ScheduleKind::kPipeDreamAsync);
  CHECK_FALSE(s.flush);
  CHECK(s.per_rank == schedule_1f1b(4, 6).per_rank);
}

TEST_CASE("make_schedule dispatches on the kind") {
  CHECK(make_schedule(ScheduleKind::kGPipe, 2, 3, 1).per_rank == schedule_gpipe(2, 3).per_rank);
  CHECK(make_schedule(ScheduleKind::k1F1B, 2, 3, 1).per_rank == schedule_1f1b(2, 3).per_rank);
  CHECK(make_schedule(ScheduleKind::kInterleaved1F1B, 2, 4, 2).per_rank ==
        schedule_interleaved(2, 4, 2).per_rank);
  const PipelineSchedule async = make_schedule(ScheduleKind::kPipeDreamAsync, 2, 3, 1);
  CHECK(async.kind == ScheduleKind::kPipeDreamAsync);
  CHECK_FALSE(async.flush);
  CHECK(make_schedule(ScheduleKind::kInterleaved1F1B, 3, 6, 2).virtual_stages() == 6);
}

TEST_CASE("schedule_rule_violation") {
  using K = ScheduleKind;
  CHECK_FALSE(schedule_rule_violation(K::kGPipe, 4, 6, 1).has_value());
  CHECK_FALSE(schedule_rule_violation(K::k1F1B, 4, 3, 1).has_value());
  CHECK_FALSE(schedule_rule_violation(K::kPipeDreamAsync, 1, 1, 1).has_value());
  CHECK_FALSE(schedule_rule_violation(K::kInterleaved1F1B, 4, 8, 2).has_value());
  CHECK(schedule_rule_violation(K::kInterleaved1F1B, 4, 6, 2) ==
        "interleaved 1F1B needs micro-batches (6) to be a multiple of pp (4)");
  CHECK(schedule_rule_violation(K::kInterleaved1F1B, 4, 8, 1) ==
        "interleaved 1F1B needs at least 2 chunks per rank (v=1)");
  CHECK(schedule_rule_violation(K::k1F1B, 4, 8, 2) ==
        "1f1b runs 1 chunk per rank (v=2); only interleaved 1F1B splits a rank into chunks");
  CHECK(schedule_rule_violation(K::kGPipe, 2, 8, 3) ==
        "gpipe runs 1 chunk per rank (v=3); only interleaved 1F1B splits a rank into chunks");
  CHECK(schedule_rule_violation(K::k1F1B, 0, 8, 1) == "a pipeline needs at least 1 stage (pp=0)");
  CHECK(schedule_rule_violation(K::kGPipe, 2, 0, 1) ==
        "a pipeline needs at least 1 micro-batch (m=0)");
  CHECK(schedule_rule_violation(K::kInterleaved1F1B, 2, 4, 0) ==
        "a pipeline needs at least 1 chunk per rank (v=0)");
}

TEST_CASE("peak_in_flight") {
  SUBCASE("gpipe holds every micro-batch") {
    for (int m : {1, 3, 8}) {
      CHECK(peak_in_flight(schedule_gpipe(4, m)) == std::vector<int>(4, m));
    }
  }
  SUBCASE("1f1b rank r holds min(p - r, m)") {
    // w = min(p - r - 1, m) warm-up forwards plus the first steady forward before any backward;
    // afterwards every forward is followed by a backward, so the count never exceeds that.
    CHECK(peak_in_flight(schedule_1f1b(4, 8)) == std::vector<int>{4, 3, 2, 1});
    CHECK(peak_in_flight(schedule_1f1b(4, 2)) == std::vector<int>{2, 2, 2, 1});
    CHECK(peak_in_flight(schedule_1f1b(1, 5)) == std::vector<int>{1});
  }
  SUBCASE("interleaved, worked by hand") {
    // p = 2, m = 4, v = 2 (order in the test above). Rank 0: 4 warm-up forwards, then F(2,0)
    // makes 5; each later pair goes B (4) then F (5); peak 5 = w + 1. Rank 1: 2 warm-up
    // forwards, then F(0,1) makes 3; peak 3 = w + 1.
    CHECK(peak_in_flight(schedule_interleaved(2, 4, 2)) == std::vector<int>{5, 3});
    // p = 4, m = 4, v = 2: w = 2 (3 - r) + 4 = 10, 8, 6, 4 for ranks 0..3. Ranks 0 and 1 have
    // w >= m v = 8, so they hold all 8 chunk-micro-batches; ranks 2 and 3 hold w + 1 = 7 and 5.
    CHECK(peak_in_flight(schedule_interleaved(4, 4, 2)) == std::vector<int>{8, 8, 7, 5});
  }
  SUBCASE("pipedream async keeps p - r in flight even when m < p") {
    // Without a flush the next iteration's warm-up forwards arrive before this one drains.
    CHECK(peak_in_flight(schedule_pipedream_async(4, 8)) == std::vector<int>{4, 3, 2, 1});
    CHECK(peak_in_flight(schedule_pipedream_async(4, 2)) == std::vector<int>{4, 3, 2, 1});
  }
}

}  // namespace stratasim

TEST_CASE("peak_in_flight closed forms equal the counts read off the op orders") {
  using namespace stratasim;
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 4, 8, 12, 16, 24}) {
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B,
                                ScheduleKind::kPipeDreamAsync, ScheduleKind::kInterleaved1F1B}) {
        for (int v : {1, 2, 3}) {
          if (schedule_rule_violation(kind, p, m, v)) continue;
          CAPTURE(p);
          CAPTURE(m);
          CAPTURE(v);
          CAPTURE(schedule_name(kind));
          CHECK(peak_in_flight(kind, p, m, v) == peak_in_flight(make_schedule(kind, p, m, v)));
        }
      }
    }
  }
}

TEST_CASE("peak_held_activation: an interleaved rank holds its early chunks, worked by hand") {
  using namespace stratasim;
  // p = 4, m = 8, v = 2, chunk 0 holding 1 B a micro-batch and chunk 1 (say the head's) 10 B.
  const std::vector<double> bytes = {1, 10};
  // Rank 3 (the last): w = 2 (4 - 3 - 1) + (2 - 1) 4 = 4 warm-up forwards, steps 0..3, all
  // chunk 0 ((k / p) % v = 0); then forward step 4 + k runs chunk 1 and backward step k the
  // mirrored chunk 1 as well (v - 1 - (k / 4) % 2 = 1 for k < 4): chunk 1 holds at most one
  // micro-batch while chunk 0 holds 4, until backward step 4 starts on chunk 0. Peak
  // 4 x 1 + 1 x 10 = 14, where a mean over the chunks would say 5 x 5.5 = 27.5.
  CHECK(peak_held_activation(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 3, bytes) == doctest::Approx(14));
  // Rank 0: w = 2 x 3 + 4 = 10: steps 0-3 chunk 0, 4-7 chunk 1, 8-9 chunk 0 (6 and 4 held);
  // forward step 10 (chunk 0) makes 7 and 4: 7 + 40 = 47; backward step 0 frees a chunk-1
  // micro-batch, forward 11 (chunk 0) makes 8 and 3: 38; forward 12 (chunk 1) 8 and 3 after
  // backward 1: 38; the counts only fall from there. Peak 47.
  CHECK(peak_held_activation(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 0, bytes) == doctest::Approx(47));
  // Equal chunks: the peak count times one chunk's (peak_in_flight: 11 on rank 0, 5 on rank 3).
  CHECK(peak_held_activation(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 0, {3, 3}) == doctest::Approx(33));
  CHECK(peak_held_activation(ScheduleKind::kInterleaved1F1B, 4, 8, 2, 3, {3, 3}) == doctest::Approx(15));
  // One chunk: the count times its bytes.
  CHECK(peak_held_activation(ScheduleKind::k1F1B, 4, 8, 1, 1, {2}) == doctest::Approx(6));
}

TEST_CASE("peak_held_activation equals the op orders walked forward by forward") {
  using namespace stratasim;
  // A second implementation: the op order's per-chunk counts after every op.
  const auto walked = [](const PipelineSchedule& s, int r, const std::vector<double>& bytes) {
    std::vector<int> held(bytes.size(), 0);
    double peak = 0;
    const PipeOpKind frees = s.split_backward ? PipeOpKind::kWeight : PipeOpKind::kBackward;
    for (const PipeOp& op : s.per_rank[r]) {
      if (op.kind == PipeOpKind::kForward) ++held[op.chunk];
      if (op.kind == frees) --held[op.chunk];
      double sum = 0;
      for (size_t c = 0; c < bytes.size(); ++c) sum += held[c] * bytes[c];
      peak = std::max(peak, sum);
    }
    return peak;
  };
  for (int p : {2, 3, 4, 8}) {
    for (int m : {4, 8, 12, 16, 24, 48}) {
      for (int v : {2, 3, 4}) {
        for (ScheduleKind kind : {ScheduleKind::kInterleaved1F1B, ScheduleKind::kDualPipe,
                                  ScheduleKind::kZeroBubbleV}) {
          if (schedule_rule_violation(kind, p, m, v)) continue;
          const PipelineSchedule s = make_schedule(kind, p, m, v);
          for (int r = 0; r < p; ++r) {
            std::vector<double> bytes(v);
            for (int c = 0; c < v; ++c) bytes[c] = 1 + ((r + 3 * c) % 5);  // unequal chunks
            CAPTURE(p);
            CAPTURE(m);
            CAPTURE(v);
            CAPTURE(r);
            CAPTURE(schedule_name(kind));
            CHECK(peak_held_activation(kind, p, m, v, r, bytes) == doctest::Approx(walked(s, r, bytes)));
          }
        }
      }
    }
  }
}
