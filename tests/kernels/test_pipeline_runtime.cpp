// The pipeline runtime on CPU threads: each rank runs exactly make_schedule()'s op order, the
// recorded timeline respects every activation and gradient dependency, the activation stash
// peaks where peak_in_flight() says, and the measured 1F1B bubble is near (p-1)/(m+p-1).
#include "kernels/pipeline_runtime.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim::kernels {
namespace {

struct Case {
  ScheduleKind kind;
  int p, m, v;
};

// Small per-op work: these tests check order and dependencies, not time.
PipelineRuntimeConfig small_config(const Case& c) {
  PipelineRuntimeConfig cfg;
  cfg.kind = c.kind;
  cfg.stages = c.p;
  cfg.micro_batches = c.m;
  cfg.chunks = c.v;
  cfg.forward_flop = {2e4};
  cfg.backward_flop = {4e4};
  cfg.activation_elems = 17;
  return cfg;
}

const Case kCases[] = {
    {ScheduleKind::kGPipe, 3, 5, 1},           {ScheduleKind::k1F1B, 4, 6, 1},
    {ScheduleKind::k1F1B, 4, 2, 1},            {ScheduleKind::kInterleaved1F1B, 2, 4, 2},
    {ScheduleKind::kInterleaved1F1B, 4, 8, 3}, {ScheduleKind::kPipeDreamAsync, 3, 4, 1},
    {ScheduleKind::k1F1B, 1, 3, 1},
};

TEST_CASE("pipeline runtime: every rank runs make_schedule's op order") {
  // Also with one-message queues: the ranks and FIFOs form a Kahn process network, so whether
  // bounded queues deadlock does not depend on timing; capacity 1 ran every schedule with
  // p <= 6, m <= 12, v <= 3 while this was written.
  for (const Case& c : kCases) {
    for (int capacity : {0, 1}) {
      CAPTURE(schedule_name(c.kind));
      CAPTURE(c.p);
      CAPTURE(c.m);
      CAPTURE(c.v);
      CAPTURE(capacity);
      PipelineRuntimeConfig cfg = small_config(c);
      cfg.queue_capacity = capacity;
      const PipelineRunResult res = run_pipeline(cfg);
      const PipelineSchedule expected = make_schedule(c.kind, c.p, c.m, c.v);
      REQUIRE(res.timeline.per_rank.size() == static_cast<size_t>(c.p));
      for (int r = 0; r < c.p; ++r) {
        CAPTURE(r);
        const auto& got = res.timeline.per_rank[r];
        REQUIRE(got.size() == expected.per_rank[r].size());
        for (size_t j = 0; j < got.size(); ++j) CHECK(got[j].op == expected.per_rank[r][j]);
        // One op at a time per rank, in order.
        for (size_t j = 0; j < got.size(); ++j) {
          CHECK(got[j].start_s <= got[j].end_s);
          if (j > 0) CHECK(got[j - 1].end_s <= got[j].start_s);
        }
      }
    }
  }
}

TEST_CASE("pipeline runtime: the recorded timeline respects every dependency") {
  for (const Case& c : kCases) {
    CAPTURE(schedule_name(c.kind));
    CAPTURE(c.p);
    CAPTURE(c.m);
    CAPTURE(c.v);
    const PipelineRunResult res = run_pipeline(small_config(c));
    const PipelineSchedule& s = res.schedule;
    // (kind, virtual stage, micro-batch) -> the recorded op.
    std::map<std::tuple<int, int, int>, TimedOp> at;
    for (int r = 0; r < c.p; ++r) {
      for (const TimedOp& t : res.timeline.per_rank[r]) {
        at[{static_cast<int>(t.op.kind), s.virtual_stage(r, t.op.chunk), t.op.micro_batch}] = t;
      }
    }
    const int fw = static_cast<int>(PipeOpKind::kForward);
    const int bw = static_cast<int>(PipeOpKind::kBackward);
    const int vs = s.virtual_stages();
    REQUIRE(at.size() == static_cast<size_t>(2 * vs * c.m));
    for (int mb = 0; mb < c.m; ++mb) {
      for (int i = 0; i < vs; ++i) {
        CAPTURE(mb);
        CAPTURE(i);
        if (i > 0) CHECK(at[{fw, i, mb}].start_s >= at[{fw, i - 1, mb}].end_s);
        if (i + 1 < vs) CHECK(at[{bw, i, mb}].start_s >= at[{bw, i + 1, mb}].end_s);
        CHECK(at[{bw, i, mb}].start_s >= at[{fw, i, mb}].end_s);
      }
    }
    double makespan = 0;
    for (const auto& [key, t] : at) makespan = std::max(makespan, t.end_s);
    CHECK(res.timeline.makespan_s == makespan);
    CHECK(res.bubble_fraction >= 0.0);
    CHECK(res.bubble_fraction < 1.0);
  }
}

TEST_CASE("pipeline runtime: the activation stash peaks as peak_in_flight says") {
  for (const Case& c : kCases) {
    if (c.kind == ScheduleKind::kPipeDreamAsync) continue;  // counts the next iteration's warm-up
    CAPTURE(schedule_name(c.kind));
    CAPTURE(c.p);
    CAPTURE(c.m);
    const PipelineRunResult res = run_pipeline(small_config(c));
    CHECK(res.rank_peak_stash == peak_in_flight(res.schedule));
  }
}

TEST_CASE("pipeline runtime: the schedule changes the order, not the result") {
  // Four virtual stages with equal work as GPipe and 1F1B on 4 ranks and interleaved on 2 ranks
  // with 2 chunks: every micro-batch sees the same computation, so the checksum is identical.
  const double gpipe = run_pipeline(small_config({ScheduleKind::kGPipe, 4, 4, 1})).checksum;
  const double one_f = run_pipeline(small_config({ScheduleKind::k1F1B, 4, 4, 1})).checksum;
  const double inter =
      run_pipeline(small_config({ScheduleKind::kInterleaved1F1B, 2, 4, 2})).checksum;
  CHECK(gpipe != 0.0);
  CHECK(one_f == gpipe);
  CHECK(inter == gpipe);
  // Tight queues (one message per boundary) change nothing either.
  PipelineRuntimeConfig tight = small_config({ScheduleKind::k1F1B, 4, 4, 1});
  tight.queue_capacity = 1;
  CHECK(run_pipeline(tight).checksum == gpipe);
}

TEST_CASE("pipeline runtime: measured stage durations feed the schedule executor") {
  const PipelineRunResult res =
      run_pipeline(small_config({ScheduleKind::kInterleaved1F1B, 2, 4, 2}));
  const StageDurations d = measured_stage_durations(res);
  REQUIRE(d.forward_s.size() == 4);
  REQUIRE(d.backward_s.size() == 4);
  CHECK(d.p2p_s.empty());
  // Virtual stage 3 is chunk 1 of rank 1: the mean of its 4 recorded forwards and backwards.
  double fwd = 0, bwd = 0;
  for (const TimedOp& t : res.timeline.per_rank[1]) {
    if (t.op.chunk != 1) continue;
    (t.op.kind == PipeOpKind::kForward ? fwd : bwd) += (t.end_s - t.start_s) / 4;
  }
  CHECK(d.forward_s[3] == doctest::Approx(fwd).epsilon(1e-12));
  CHECK(d.backward_s[3] == doctest::Approx(bwd).epsilon(1e-12));
  for (int i = 0; i < 4; ++i) CHECK(d.forward_s[i] > 0.0);
  // The simulator runs the same schedule with them: same op order, a positive makespan.
  const Timeline predicted = execute_schedule(res.schedule, d);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(predicted.per_rank[r].size() == res.timeline.per_rank[r].size());
    for (size_t j = 0; j < predicted.per_rank[r].size(); ++j) {
      CHECK(predicted.per_rank[r][j].op == res.timeline.per_rank[r][j].op);
    }
  }
  CHECK(predicted.makespan_s > 0.0);
}

TEST_CASE("pipeline runtime: an illegal schedule is an input error") {
  PipelineRuntimeConfig cfg = small_config({ScheduleKind::kInterleaved1F1B, 4, 6, 2});
  CHECK_THROWS_AS(run_pipeline(cfg), InputError);
  cfg = small_config({ScheduleKind::k1F1B, 2, 4, 1});
  cfg.forward_flop = {1e4, 1e4, 1e4};  // neither 1 nor p * v values
  CHECK_THROWS_AS(run_pipeline(cfg), InputError);
}

TEST_CASE("pipeline runtime: a measured 1F1B run has the schedule's bubble, not less") {
  // Wall-clock timing on a shared 2-core CI machine cannot hold a tight tolerance (a rank
  // preempted mid-op inflates its busy time, one preempted between ops looks idle; runs here
  // gave 0.09-0.36 for a closed form of 1/9). Issue 4 checks the tolerance in the full
  // calibrate/validate run, not in ctest. What must hold on any machine: with equal work the
  // schedule's idle time cannot vanish (rank 0 waits at least (p-1) ops for the first backward),
  // so the measured bubble is at least half the closed form, and the run's op order is exact
  // (tested above). The measurement is printed for the log.
  const int p = 2, m = 8;
  const double expected = uniform_bubble_fraction(ScheduleKind::k1F1B, p, m, 1);  // 1/9
  PipelineRuntimeConfig cfg;
  cfg.kind = ScheduleKind::k1F1B;
  cfg.stages = p;
  cfg.micro_batches = m;
  cfg.forward_flop = {2e7};
  cfg.backward_flop = {2e7};
  const PipelineRunResult res = run_pipeline(cfg);
  MESSAGE("1F1B p=2 m=8: measured bubble " << res.bubble_fraction << " (closed form " << expected
          << "), iteration " << res.timeline.makespan_s << " s");
  CHECK(res.bubble_fraction >= 0.5 * expected);
  CHECK(res.bubble_fraction < 1.0);
}

}  // namespace
}  // namespace stratasim::kernels
