// Timing of pipeline schedules: execute_schedule (the full list-scheduled timeline) against
// closed forms derived by hand, and time_schedule (the fast path with caches and periodic
// extension) against execute_schedule.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

StageDurations uniform(int vstages, double tf, double tb, double p2p) {
  StageDurations d;
  d.forward_s.assign(vstages, tf);
  d.backward_s.assign(vstages, tb);
  d.p2p_s.assign(vstages - 1, p2p);
  return d;
}

StageDurations random_durations(std::mt19937_64& rng, int vstages, double max_p2p) {
  std::uniform_real_distribution<double> compute(0.5, 1.5), transfer(0.0, max_p2p);
  StageDurations d;
  for (int i = 0; i < vstages; ++i) {
    d.forward_s.push_back(compute(rng));
    d.backward_s.push_back(2 * compute(rng));
  }
  for (int i = 0; i + 1 < vstages; ++i) d.p2p_s.push_back(max_p2p > 0 ? transfer(rng) : 0.0);
  return d;
}

double rank_end(const Timeline& tl, int r) { return tl.per_rank[r].back().end_s; }

double rank_busy(const Timeline& tl, int r) {
  double busy = 0;
  for (const TimedOp& op : tl.per_rank[r]) busy += op.end_s - op.start_s;
  return busy;
}

double last_backward(const Timeline& tl, int r) {
  for (auto it = tl.per_rank[r].rbegin(); it != tl.per_rank[r].rend(); ++it) {
    if (it->op.kind == PipeOpKind::kBackward) return it->end_s - it->start_s;
  }
  return -1;
}

// time_schedule must reproduce every number the full timeline implies.
void check_against_timeline(ScheduleKind kind, int p, int m, int v, const StageDurations& d) {
  CAPTURE(schedule_name(kind));
  CAPTURE(p);
  CAPTURE(m);
  CAPTURE(v);
  const Timeline tl = execute_schedule(make_schedule(kind, p, m, v), d);
  const ScheduleTiming t = time_schedule(kind, p, m, v, d);
  CHECK(t.makespan_s == doctest::Approx(tl.makespan_s).epsilon(1e-9));
  REQUIRE(t.rank_finish_s.size() == static_cast<size_t>(p));
  double bubble = 0;
  REQUIRE(t.rank_send_tail_s.size() == static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    CHECK(t.rank_finish_s[r] == doctest::Approx(rank_end(tl, r)).epsilon(1e-9));
    const TimedOp& last = tl.per_rank[r].back();
    CHECK(t.rank_send_tail_s[r] ==
          doctest::Approx(last.arrive_s - last.end_s).epsilon(1e-9).scale(tl.makespan_s));
    CHECK(t.rank_busy_s[r] == doctest::Approx(rank_busy(tl, r)).epsilon(1e-9));
    CHECK(t.rank_last_backward_s[r] == doctest::Approx(last_backward(tl, r)).epsilon(1e-12));
    bubble += (tl.makespan_s - rank_busy(tl, r)) / tl.makespan_s / p;
  }
  CHECK(t.bubble_fraction == doctest::Approx(bubble).epsilon(1e-9));
}

}  // namespace

TEST_CASE("1f1b timeline of a small case worked by hand") {
  // p = 2, m = 2, tf = 1, tb = 2, p2p = 0.5. Rank 0 runs F0 F1 B0 B1, rank 1 runs F0 B0 F1 B1.
  //   r0 F0 [0, 1]     r0 F1 [1, 2]
  //   r1 F0 [1.5, 2.5] (r0 F0 ends at 1, + 0.5)     r1 B0 [2.5, 4.5] (after its own F0)
  //   r1 F1 [4.5, 5.5] (input there at 2.5; rank busy until 4.5)     r1 B1 [5.5, 7.5]
  //   r0 B0 [5, 7]     (r1 B0 ends at 4.5, + 0.5)   r0 B1 [8, 10]  (r1 B1 ends 7.5, + 0.5)
  const StageDurations d = uniform(2, 1.0, 2.0, 0.5);
  const Timeline tl = execute_schedule(schedule_1f1b(2, 2), d);
  const std::vector<std::vector<std::pair<double, double>>> expected = {
      {{0, 1}, {1, 2}, {5, 7}, {8, 10}}, {{1.5, 2.5}, {2.5, 4.5}, {4.5, 5.5}, {5.5, 7.5}}};
  for (int r = 0; r < 2; ++r) {
    REQUIRE(tl.per_rank[r].size() == 4);
    for (int j = 0; j < 4; ++j) {
      CHECK(tl.per_rank[r][j].op == schedule_1f1b(2, 2).per_rank[r][j]);
      CHECK(tl.per_rank[r][j].start_s == doctest::Approx(expected[r][j].first));
      CHECK(tl.per_rank[r][j].end_s == doctest::Approx(expected[r][j].second));
    }
  }
  CHECK(tl.makespan_s == doctest::Approx(10.0));
  const ScheduleTiming t = time_schedule(ScheduleKind::k1F1B, 2, 2, 1, d);
  CHECK(t.makespan_s == doctest::Approx(10.0));
  CHECK(t.rank_finish_s == std::vector<double>{10.0, 7.5});
  CHECK(t.rank_busy_s == std::vector<double>{6.0, 6.0});  // 2 (1 + 2) each
  CHECK(t.rank_last_backward_s == std::vector<double>{2.0, 2.0});
  CHECK(t.bubble_fraction == doctest::Approx(0.4));  // (10 - 6) / 10 on both
}

TEST_CASE("gpipe and 1f1b with uniform stages: (m + p - 1)(tf + tb)") {
  // With equal stages and free transfers, the last stage's first forward waits for p - 1
  // forwards upstream and the first stage's last backward waits for p - 1 backwards downstream;
  // in between each rank computes m (tf + tb) without a gap. Every rank idles (p - 1)(tf + tb),
  // so bubble_fraction = (p - 1) / (m + p - 1).
  for (double tf : {1.0, 0.25}) {
    for (double tb_ratio : {1.0, 2.0}) {
      const double tb = tf * tb_ratio;
      for (int p : {1, 2, 3, 4, 8}) {
        for (int m : {1, 2, 3, 5, 8, 16, 64, 100}) {
          for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
            CAPTURE(schedule_name(kind));
            CAPTURE(p);
            CAPTURE(m);
            CAPTURE(tb);
            const StageDurations d = uniform(p, tf, tb, 0.0);
            const double expected = (m + p - 1) * (tf + tb);
            const ScheduleTiming t = time_schedule(kind, p, m, 1, d);
            CHECK(t.makespan_s == doctest::Approx(expected).epsilon(1e-12));
            CHECK(t.bubble_fraction == doctest::Approx((p - 1.0) / (m + p - 1.0)).epsilon(1e-12));
            CHECK(execute_schedule(make_schedule(kind, p, m, 1), d).makespan_s ==
                  doctest::Approx(expected).epsilon(1e-12));
          }
        }
      }
    }
  }
}

TEST_CASE("interleaved with uniform stages: m (tf + tb) + (p - 1)(tf + tb) / v") {
  // A rank's v chunks take tf / v and tb / v each, so its work is m (tf + tb) as without
  // interleaving, but filling and draining the pipeline costs (p - 1) chunk forwards and
  // (p - 1) chunk backwards: (p - 1)(tf + tb) / v (Narayanan et al. SC21, Sec. 2.2.2). Every
  // rank idles that long, so bubble_fraction = ((p - 1) / v) / (m + (p - 1) / v)
  // = (p - 1) / (v m + p - 1); relative to the ideal time the bubble is (p - 1) / (v m).
  // E.g. p = 4, m = 8, v = 2, tf = 1, tb = 2: 8 * 3 + 3 * 3 / 2 = 28.5.
  CHECK(time_schedule(ScheduleKind::kInterleaved1F1B, 4, 8, 2, uniform(8, 0.5, 1.0, 0.0))
            .makespan_s == doctest::Approx(28.5));
  for (double tb_ratio : {1.0, 2.0}) {
    for (int p : {1, 2, 3, 4, 8}) {
      for (int v : {2, 3, 4}) {
        for (int groups : {1, 2, 4, 8, 16}) {
          const int m = groups * p;
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(tb_ratio);
          const double tf = 1.0, tb = tb_ratio;
          const StageDurations d = uniform(p * v, tf / v, tb / v, 0.0);
          const double expected = (m + (p - 1.0) / v) * (tf + tb);
          const ScheduleTiming t = time_schedule(ScheduleKind::kInterleaved1F1B, p, m, v, d);
          CHECK(t.makespan_s == doctest::Approx(expected).epsilon(1e-12));
          CHECK(t.bubble_fraction == doctest::Approx((p - 1.0) / (v * m + p - 1.0)).epsilon(1e-12));
          const PipelineSchedule s = make_schedule(ScheduleKind::kInterleaved1F1B, p, m, v);
          CHECK(execute_schedule(s, d).makespan_s == doctest::Approx(expected).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("pipedream async has no bubble in steady state") {
  // Uniform stages, free transfers: every rank alternates forward and backward without a gap,
  // so one iteration of m micro-batches takes m (tf + tb), whatever m and p.
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 3, 8, 64}) {
      CAPTURE(p);
      CAPTURE(m);
      const ScheduleTiming t =
          time_schedule(ScheduleKind::kPipeDreamAsync, p, m, 1, uniform(p, 1.0, 2.0, 0.0));
      CHECK(t.makespan_s == doctest::Approx(m * 3.0).epsilon(1e-12));
      CHECK(t.bubble_fraction == doctest::Approx(0.0));
      CHECK(t.rank_finish_s == std::vector<double>(p, t.makespan_s));
      CHECK(last_timing_method() == TimingMethod::kSteadyState);
    }
  }
}

TEST_CASE("pipedream async steady state with transfer time") {
  // Rank 0 keeps p - 1 micro-batches ahead: right after B(k) it runs F(k + p). That forward
  // crosses p - 1 links to the last rank, whose backward crosses them back before rank 0 can
  // run B(k + p): a cycle of p micro-batches of length
  //   tb + p tf + (p - 1) tb + 2 (p - 1) d = p (tf + tb) + 2 (p - 1) d,
  // longer than any rank's own p (tf + tb). Per micro-batch: tf + tb + 2 (p - 1) d / p.
  for (int p : {2, 3, 4, 8}) {
    for (double delay : {0.1, 0.5}) {
      CAPTURE(p);
      CAPTURE(delay);
      const int m = 5;
      const ScheduleTiming t =
          time_schedule(ScheduleKind::kPipeDreamAsync, p, m, 1, uniform(p, 1.0, 2.0, delay));
      CHECK(t.makespan_s == doctest::Approx(m * (3.0 + 2 * (p - 1) * delay / p)).epsilon(1e-12));
      // Busy m (tf + tb) per rank; the rest of the period waits on transfers.
      CHECK(t.bubble_fraction ==
            doctest::Approx(1.0 - 3.0 / (3.0 + 2 * (p - 1) * delay / p)).epsilon(1e-9));
    }
  }
}

TEST_CASE("pipedream async equals the growth rate of a long 1f1b stream") {
  // Independent estimate: the makespan of one flushed 1F1B run of M micro-batches grows by the
  // steady-state period per extra micro-batch once M is far past the transient. 12 p extra
  // micro-batches cover steady states that repeat every 1, 2, 3 or 4 micro-batches (the
  // length of the critical cycle, at most p here).
  std::mt19937_64 rng(11);
  for (int p : {1, 2, 3, 4}) {
    for (double max_p2p : {0.0, 0.3, 4.0}) {
      CAPTURE(p);
      CAPTURE(max_p2p);
      const StageDurations d = random_durations(rng, p, max_p2p);
      const int m1 = 40 * p, m2 = 52 * p;
      const double growth = (execute_schedule(schedule_1f1b(p, m2), d).makespan_s -
                             execute_schedule(schedule_1f1b(p, m1), d).makespan_s) /
                            (m2 - m1);
      const ScheduleTiming t = time_schedule(ScheduleKind::kPipeDreamAsync, p, 7, 1, d);
      CHECK(t.makespan_s == doctest::Approx(7 * growth).epsilon(1e-9));
    }
  }
}

TEST_CASE("execute_schedule starts every op as soon as its rank and inputs allow") {
  // F(mb, i) waits for the activation of F(mb, i - 1), B(mb, i) for the gradient of
  // B(mb, i + 1) and its own F(mb, i); ops on one rank run in list order, one at a time. A
  // transfer of p2p[boundary] leaves when its op ends and the sending rank's port is free: a
  // rank's sends (both directions) go one at a time, in the rank's order.
  std::mt19937_64 rng(5);
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B}) {
    for (double max_p2p : {0.4, 3.0}) {  // 3.0: transfers longer than the compute, sends queue
      const int p = 3, m = 6, v = kind == ScheduleKind::kInterleaved1F1B ? 2 : 1;
      CAPTURE(schedule_name(kind));
      CAPTURE(max_p2p);
      const StageDurations d = random_durations(rng, p * v, max_p2p);
      const PipelineSchedule s = make_schedule(kind, p, m, v);
      const Timeline tl = execute_schedule(s, d);
      // When each op's output reaches its consumer, from the ops' end times and the ports.
      std::vector<std::vector<double>> fwd_arrive(p * v, std::vector<double>(m, -1));
      std::vector<std::vector<double>> bwd_arrive = fwd_arrive, fwd_end = fwd_arrive;
      for (int r = 0; r < p; ++r) {
        double port_free = 0;
        for (const TimedOp& op : tl.per_rank[r]) {
          const int i = s.virtual_stage(r, op.op.chunk), mb = op.op.micro_batch;
          const bool fwd = op.op.kind == PipeOpKind::kForward;
          const int to = fwd ? i + 1 : i - 1;
          double arrive = op.end_s;
          if (to >= 0 && to < p * v) {
            const double transfer = d.p2p_s[fwd ? i : i - 1];
            arrive = std::max(op.end_s, port_free) + transfer;
            port_free = arrive;
          }
          (fwd ? fwd_arrive : bwd_arrive)[i][mb] = arrive;
          if (fwd) fwd_end[i][mb] = op.end_s;
          CHECK(op.arrive_s == doctest::Approx(arrive).epsilon(1e-12));
        }
      }
      for (int r = 0; r < p; ++r) {
        double rank_free = 0;
        for (const TimedOp& op : tl.per_rank[r]) {
          const int i = s.virtual_stage(r, op.op.chunk), mb = op.op.micro_batch;
          double ready = rank_free;
          double duration = 0;
          if (op.op.kind == PipeOpKind::kForward) {
            if (i > 0) ready = std::max(ready, fwd_arrive[i - 1][mb]);
            duration = d.forward_s[i];
          } else {
            if (i + 1 < p * v) ready = std::max(ready, bwd_arrive[i + 1][mb]);
            ready = std::max(ready, fwd_end[i][mb]);
            duration = d.backward_s[i];
          }
          CHECK(op.start_s == doctest::Approx(ready).epsilon(1e-12));
          CHECK(op.end_s - op.start_s == doctest::Approx(duration).epsilon(1e-12));
          rank_free = op.end_s;
        }
      }
    }
  }
}

TEST_CASE("a rank's sends leave its port one at a time (worked by hand)") {
  // p = 2, m = 3, F = 1, B = 2 on both stages, every transfer 3 (longer than any op).
  // GPipe. Rank 0: F0 [0,1], F1 [1,2], F2 [2,3]; its activations leave at 1, 4, 7 (each after
  // the previous one arrived) and arrive at 4, 7, 10. Rank 1: F0 [4,5], F1 [7,8], F2 [10,11],
  // B0 [11,13], B1 [13,15], B2 [15,17]; gradients leave at 13, 16, 19, arrive at 16, 19, 22.
  // Rank 0: B0 [16,18], B1 [19,21], B2 [22,24]: 24. Without the queue the activations would
  // arrive at 4, 5, 6 and the iteration take 18.
  const StageDurations d = uniform(2, 1.0, 2.0, 3.0);
  const Timeline g = execute_schedule(make_schedule(ScheduleKind::kGPipe, 2, 3, 1), d);
  CHECK(g.makespan_s == doctest::Approx(24.0));
  const std::vector<double> rank1_starts{4, 7, 10, 11, 13, 15}, rank0_backward_starts{16, 19, 22};
  for (int j = 0; j < 6; ++j) CHECK(g.per_rank[1][j].start_s == doctest::Approx(rank1_starts[j]));
  for (int j = 0; j < 3; ++j) {
    CHECK(g.per_rank[0][3 + j].start_s == doctest::Approx(rank0_backward_starts[j]));
    CHECK(g.per_rank[1][3 + j].arrive_s == doctest::Approx(16.0 + 3 * j));
  }
  CHECK(time_schedule(ScheduleKind::kGPipe, 2, 3, 1, d).makespan_s == doctest::Approx(24.0));
  // 1F1B interleaves the directions; its cycle already waits for every transfer, so the port
  // never queues here. Rank 0: F0 [0,1], F1 [1,2], B0 [10,12], F2 [12,13], B1 [13,15],
  // B2 [22,24]; rank 1: F0 [4,5], B0 [5,7], F1 [7,8], B1 [8,10], F2 [16,17], B2 [17,19]: 24.
  const Timeline f = execute_schedule(make_schedule(ScheduleKind::k1F1B, 2, 3, 1), d);
  CHECK(f.makespan_s == doctest::Approx(24.0));
  CHECK(f.per_rank[0][2].start_s == doctest::Approx(10.0));
  CHECK(f.per_rank[1][4].start_s == doctest::Approx(16.0));
}

TEST_CASE("time_schedule matches the full timeline for random durations") {
  // The fast path simulates fewer micro-batches (GPipe: 1 and 2; 1F1B-like: m - n T) and
  // extends them; it must agree with the full run for every rank.
  std::mt19937_64 rng(2024);
  int extended = 0, affine = 0;
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 7, 16, 24, 33, 48, 64}) {
      for (double max_p2p : {0.0, 0.2, 1.0, 4.0}) {  // 4.0: sends queue on the ports
        const StageDurations d = random_durations(rng, p, max_p2p);
        check_against_timeline(ScheduleKind::kGPipe, p, m, 1, d);
        affine += last_timing_method() == TimingMethod::kAffineExtension;
        check_against_timeline(ScheduleKind::k1F1B, p, m, 1, d);
        extended += last_timing_method() == TimingMethod::kPeriodicExtension;
      }
    }
    for (int groups : {1, 2, 5, 8, 12, 16}) {
      for (int v : {2, 3}) {
        for (double max_p2p : {0.0, 0.2, 1.0, 4.0}) {
          const StageDurations d = random_durations(rng, p * v, max_p2p);
          check_against_timeline(ScheduleKind::kInterleaved1F1B, p, groups * p, v, d);
          extended += last_timing_method() == TimingMethod::kPeriodicExtension;
        }
      }
    }
  }
  CHECK(affine > 50);
  CHECK(extended > 50);
}

TEST_CASE("time_schedule extends typical long runs instead of simulating them") {
  // Equal stages except a heavier first forward (embedding) and last backward (LM head), one
  // p2p time on every link: the steady state repeats every p micro-batches, so long runs take
  // the periodic extension, and it is exact.
  for (int p : {2, 4, 8}) {
    for (int v : {1, 2, 3}) {
      const ScheduleKind kind = v == 1 ? ScheduleKind::k1F1B : ScheduleKind::kInterleaved1F1B;
      StageDurations d = uniform(p * v, 1.0 / v, 2.0 / v, 0.01);
      d.forward_s.front() *= 1.3;
      d.backward_s.back() *= 1.6;
      const int m = 12 * p + (v == 1 ? 3 : 0);
      check_against_timeline(kind, p, m, v, d);
      CHECK(last_timing_method() == TimingMethod::kPeriodicExtension);
    }
  }
  check_against_timeline(ScheduleKind::kGPipe, 8, 96, 1, uniform(8, 1.0, 2.0, 0.01));
  CHECK(last_timing_method() == TimingMethod::kAffineExtension);
}

TEST_CASE("interleaved with one chunk times like 1f1b") {
  std::mt19937_64 rng(9);
  const StageDurations d = random_durations(rng, 4, 0.1);
  const ScheduleTiming a = time_schedule(ScheduleKind::kInterleaved1F1B, 4, 10, 1, d);
  const ScheduleTiming b = time_schedule(ScheduleKind::k1F1B, 4, 10, 1, d);
  CHECK(a.makespan_s == b.makespan_s);
  CHECK(a.rank_finish_s == b.rank_finish_s);
}

TEST_CASE("missing p2p times mean free transfers") {
  StageDurations d = uniform(4, 1.0, 2.0, 0.0);
  d.p2p_s.clear();
  CHECK(time_schedule(ScheduleKind::k1F1B, 4, 6, 1, d).makespan_s == doctest::Approx(27.0));
}

}  // namespace stratasim

namespace stratasim {

TEST_CASE("the last micro-batch's own backward (checkpoint except_last): by hand, and the fast paths agree") {
  // One stage, m = 2, F = 1, B = 3 (1 of it recomputation), the last micro-batch's B = 2 (it
  // kept its activations): F0 [0,1], F1 [1,2], B0 [2,5], B1 [5,7] in GPipe's order. 7, where
  // recomputing both would take 8.
  StageDurations one = uniform(1, 1, 3, 0);
  one.p2p_s.clear();
  one.last_backward_s = {2};
  const Timeline tl = execute_schedule(make_schedule(ScheduleKind::kGPipe, 1, 2, 1), one);
  CHECK(tl.makespan_s == doctest::Approx(7));
  CHECK(tl.per_rank[0].back().op.micro_batch == 1);
  CHECK(tl.per_rank[0].back().end_s - tl.per_rank[0].back().start_s == doctest::Approx(2));
  // time_schedule's closed forms and periodic extensions against the full timeline.
  std::mt19937_64 rng(11);
  for (const ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
    for (const int p : {2, 4}) {
      for (const int m : {1, 2, 3, 8, 40}) {
        StageDurations d = random_durations(rng, p, 0.2);
        for (double b : d.backward_s) d.last_backward_s.push_back(0.6 * b);
        check_against_timeline(kind, p, m, 1, d);
      }
    }
  }
  StageDurations d = random_durations(rng, 8, 0.2);
  for (double b : d.backward_s) d.last_backward_s.push_back(0.7 * b);
  check_against_timeline(ScheduleKind::kInterleaved1F1B, 4, 16, 2, d);
}

}  // namespace stratasim
