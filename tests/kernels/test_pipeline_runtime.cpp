// The pipeline runtime on CPU threads: each rank runs exactly make_schedule()'s op order, the
// recorded timeline respects every activation and gradient dependency, the activation stash
// peaks where peak_in_flight() says, and the measured 1F1B bubble is near (p-1)/(m+p-1).
#include "kernels/pipeline_runtime.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

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
  cfg = small_config({ScheduleKind::k1F1B, 2, 4, 1});
  cfg.dp = 0;
  CHECK_THROWS_WITH_AS(run_pipeline(cfg), "pipeline runtime: dp = 0 must be >= 1", InputError);
  cfg.dp = 2;
  cfg.grad_elems = 3;
  cfg.dp_buckets = 4;
  CHECK_THROWS_WITH_AS(run_pipeline(cfg),
                       "pipeline runtime: dp_buckets = 4 must lie in [1, grad_elems = 3]",
                       InputError);
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

// Runs the ring on n threads, one buffer each, `calls` times in a row (each call with other
// data and another size, so a participant racing ahead into the next call would show).
std::vector<std::vector<std::vector<float>>> ring_runs(int n, const std::vector<int>& sizes,
                                                       std::vector<int>& steps) {
  RingAllReduce ring(n);
  // bufs[call][participant]: participant d's element e in call c is 1000 d + 10 c + e % 7.
  std::vector<std::vector<std::vector<float>>> bufs(sizes.size());
  for (std::size_t c = 0; c < sizes.size(); ++c) {
    for (int d = 0; d < n; ++d) {
      std::vector<float> b(sizes[c]);
      for (int e = 0; e < sizes[c]; ++e) b[e] = float(1000 * d + 10 * int(c) + e % 7);
      bufs[c].push_back(b);
    }
  }
  steps.assign(n, 0);
  {
    std::vector<std::jthread> threads;
    for (int d = 0; d < n; ++d) {
      threads.emplace_back([&, d] {
        for (auto& call : bufs) steps[d] += ring.allreduce(d, call[d]);
      });
    }
  }
  return bufs;
}

TEST_CASE("ring all-reduce: every participant ends with the serial sum in 2(n-1) steps") {
  for (int n : {1, 2, 3, 4, 5}) {
    CAPTURE(n);
    const std::vector<int> sizes = {13, 1, 0, 1000, 4};  // sizes below n leave segments empty
    std::vector<int> steps;
    const auto bufs = ring_runs(n, sizes, steps);
    for (int d = 0; d < n; ++d) CHECK(steps[d] == int(sizes.size()) * 2 * (n - 1));
    for (std::size_t c = 0; c < sizes.size(); ++c) {
      for (int e = 0; e < sizes[c]; ++e) {
        // Sum over d of 1000 d + 10 c + e % 7 = 1000 n(n-1)/2 + n (10 c + e % 7): whole
        // numbers far below 2^24, exact in any order.
        const float expected = float(1000 * n * (n - 1) / 2 + n * (10 * int(c) + e % 7));
        for (int d = 0; d < n; ++d) {
          CAPTURE(c);
          CAPTURE(e);
          CAPTURE(d);
          REQUIRE(bufs[c][d][e] == expected);
        }
      }
    }
  }
}

TEST_CASE("ring all-reduce: fractional data gives bit-identical buffers close to the sum") {
  const int n = 4, size = 101;
  RingAllReduce ring(n);
  std::vector<std::vector<float>> bufs(n, std::vector<float>(size));
  std::vector<double> exact(size, 0.0);
  for (int d = 0; d < n; ++d) {
    for (int e = 0; e < size; ++e) {
      bufs[d][e] = 0.1f * float(d + 1) + 0.37f * float(e);
      exact[e] += double(bufs[d][e]);
    }
  }
  {
    std::vector<std::jthread> threads;
    for (int d = 0; d < n; ++d) threads.emplace_back([&, d] { ring.allreduce(d, bufs[d]); });
  }
  for (int e = 0; e < size; ++e) {
    // Three fp32 additions of values <= 38: error below 3 ulp of the sum (relative 2^-22).
    CHECK(bufs[0][e] == doctest::Approx(exact[e]).epsilon(4e-7));
    for (int d = 1; d < n; ++d) CHECK(bufs[d][e] == bufs[0][e]);  // the all-gather copies
  }
}

// Expected gradient of virtual stage i, element k after the all-reduce (the rule in
// pipeline_runtime.h: replica d's backward of micro-batch mb adds ((d+1)(mb+1) + i + k) mod 8).
float expected_gradient(int dp, int m, int i, int k) {
  int sum = 0;
  for (int d = 0; d < dp; ++d) {
    for (int mb = 0; mb < m; ++mb) sum += ((d + 1) * (mb + 1) + i + k) % 8;
  }
  return float(sum);
}

struct DpCase {
  Case c;
  int dp, grad_elems, buckets;
  bool overlap;
};

TEST_CASE("pipeline runtime: dp replicas all-reduce their gradients after the backwards") {
  const DpCase cases[] = {
      {{ScheduleKind::k1F1B, 2, 4, 1}, 2, 64, 1, false},
      {{ScheduleKind::kGPipe, 3, 3, 1}, 3, 50, 2, false},
      {{ScheduleKind::kGPipe, 3, 3, 1}, 3, 50, 2, true},
      {{ScheduleKind::kInterleaved1F1B, 2, 4, 2}, 2, 33, 3, true},
      {{ScheduleKind::k1F1B, 2, 3, 1}, 4, 10, 4, true},
      {{ScheduleKind::k1F1B, 3, 5, 1}, 1, 16, 2, false},  // dp = 1: no all-reduce
  };
  for (const DpCase& dc : cases) {
    const Case& c = dc.c;
    CAPTURE(schedule_name(c.kind));
    CAPTURE(dc.dp);
    CAPTURE(dc.buckets);
    CAPTURE(dc.overlap);
    PipelineRuntimeConfig cfg = small_config(c);
    cfg.dp = dc.dp;
    cfg.grad_elems = dc.grad_elems;
    cfg.dp_buckets = dc.buckets;
    cfg.overlap_dp = dc.overlap;
    const PipelineRunResult res = run_pipeline(cfg);
    const int workers = dc.dp * c.p;
    REQUIRE(res.timeline.per_rank.size() == std::size_t(workers));
    REQUIRE(res.comm.size() == std::size_t(workers));
    REQUIRE(res.gradients.size() == std::size_t(workers));
    for (int w = 0; w < workers; ++w) {
      CAPTURE(w);
      const int r = w % c.p;
      // Each replica runs the schedule's op order.
      const auto& ops = res.timeline.per_rank[w];
      REQUIRE(ops.size() == res.schedule.per_rank[r].size());
      for (std::size_t j = 0; j < ops.size(); ++j) CHECK(ops[j].op == res.schedule.per_rank[r][j]);
      // The summed gradients, identical on every replica.
      REQUIRE(res.gradients[w].size() == std::size_t(c.v * dc.grad_elems));
      for (int ch = 0; ch < c.v; ++ch) {
        for (int k = 0; k < dc.grad_elems; ++k) {
          const int i = ch * c.p + r;
          REQUIRE(res.gradients[w][ch * dc.grad_elems + k] ==
                  expected_gradient(dc.dp, c.m, i, k));
        }
      }
      if (dc.dp == 1) {
        CHECK(res.comm[w].empty());
        continue;
      }
      // One all-reduce per (chunk, bucket), each 2(dp-1) ring steps, covering every element;
      // after the chunk's last backward started (overlapped: bucket b is final after slice b of
      // it) or after the rank's last op (not overlapped); one at a time per worker.
      REQUIRE(res.comm[w].size() == std::size_t(c.v * dc.buckets));
      std::int64_t elems = 0;
      for (std::size_t e = 0; e < res.comm[w].size(); ++e) {
        const CommEvent& ev = res.comm[w][e];
        CHECK(ev.steps == 2 * (dc.dp - 1));
        CHECK(ev.start_s <= ev.end_s);
        elems += ev.elems;
        double last_backward_start = 0;
        for (const TimedOp& t : ops) {
          if (t.op.kind == PipeOpKind::kBackward && t.op.chunk == ev.chunk) {
            last_backward_start = t.start_s;
          }
        }
        CHECK(ev.start_s >= (dc.overlap ? last_backward_start : ops.back().end_s));
        CHECK(ev.end_s <= res.iteration_s);
        if (e > 0) CHECK(res.comm[w][e - 1].end_s <= ev.start_s);
      }
      CHECK(elems == std::int64_t(c.v) * dc.grad_elems);
    }
    CHECK(res.iteration_s >= res.timeline.makespan_s);
    CHECK(res.allreduce_exposed_s == doctest::Approx(res.iteration_s - res.timeline.makespan_s));
    CHECK((dc.dp == 1) == (res.allreduce_s == 0.0));
  }
}

TEST_CASE("pipeline runtime: replicas have their own data, and overlap changes no result") {
  PipelineRuntimeConfig cfg = small_config({ScheduleKind::k1F1B, 2, 4, 1});
  cfg.dp = 2;
  cfg.dp_buckets = 4;
  const PipelineRunResult two = run_pipeline(cfg);
  cfg.overlap_dp = true;
  const PipelineRunResult overlapped = run_pipeline(cfg);
  // Replica 1 starts from other inputs, so the total is not twice replica 0's.
  cfg.overlap_dp = false;
  cfg.dp = 1;
  const double one = run_pipeline(cfg).checksum;
  CHECK(two.checksum != 2 * one);
  CHECK(overlapped.checksum == two.checksum);
  CHECK(overlapped.gradients == two.gradients);
}

}  // namespace
}  // namespace stratasim::kernels
