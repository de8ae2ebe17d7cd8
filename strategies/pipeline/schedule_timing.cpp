// execute_schedule, time_schedule and peak_in_flight on top of the list scheduler
// (schedule_engine.cpp) and the periodic extension (schedule_periodic.cpp).
//
// time_schedule() is on the strategy-search hot path, so it keeps per-thread caches: compiled
// schedules keyed by (kind, p, m, v) and scratch buffers, and simulates fewer micro-batches
// than m where that is exact:
//   GPipe: every rank's finish time is affine in m for m >= 1 (the longest path crosses the
//     forward grid and the backward grid as staircases that dwell m - 1 steps on the slowest
//     stage), so runs of 1 and 2 micro-batches give it for any m.
//   1F1B, interleaved: a run of m_c = m - n p micro-batches, extended by n periods when its
//     steady state is exactly periodic (schedule_periodic.cpp); otherwise the full run.
//   PipeDream async: the period of the endless 1F1B stream, times m.
#include "strategies/pipeline/schedule_timing.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "sim/core/error.h"
#include "strategies/pipeline/schedule_engine.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

using pipeline_detail::CompiledSchedule;
using pipeline_detail::DurationTables;

thread_local TimingMethod g_last_method = TimingMethod::kFullSimulation;

constexpr size_t kCacheMaxOps = size_t{1} << 23;  // ~200 MB of compiled ops per thread
// Periods tried: p, 2p, .., kMaxPeriods p micro-batches. The steady state of a 1F1B-like run
// repeats every c micro-batches, c the length of its critical cycle; usually c divides p, but
// p2p times comparable to compute and uneven across boundaries can give e.g. c = 3 at p = 8.
constexpr int kMaxPeriods = 4;

// Compiled schedules are immutable once built and shared by every thread: a process-wide map
// (under a mutex) behind a per-thread one, so the threads of a search, and later searches,
// compile each (kind, p, m, v) once. Either map is emptied when it holds more than
// kCacheMaxOps ops; schedules still referenced elsewhere stay alive until released.
struct ScheduleCache {
  std::unordered_map<uint64_t, std::shared_ptr<const CompiledSchedule>> map;
  size_t ops = 0;
  void put(uint64_t key, std::shared_ptr<const CompiledSchedule> cs) {
    if (ops > kCacheMaxOps) map.clear(), ops = 0;
    ops += cs->ops.size();
    map.emplace(key, std::move(cs));
  }
};

std::shared_ptr<const CompiledSchedule> compile_cached(ScheduleKind kind, int p, int m, int v) {
  auto cs = std::make_shared<CompiledSchedule>(
      pipeline_detail::compile_schedule(make_schedule(kind, p, m, v)));
  const bool periodic = kind != ScheduleKind::kGPipe && !splits_backward(kind);
  for (int k = 1; periodic && k <= kMaxPeriods; ++k) {
    cs->periodic.push_back(pipeline_detail::analyze_periodicity(*cs, k * p));
  }
  return cs;
}

// Compiled schedule for (kind, p, m, v); PipeDream async and interleaved with v == 1 share
// 1F1B's op order. The reference stays valid until the next call on this thread.
const CompiledSchedule& cached_schedule(ScheduleKind kind, int p, int m, int v) {
  static std::mutex shared_mutex;
  static ScheduleCache shared;
  thread_local ScheduleCache local;
  thread_local uint64_t last_key = ~uint64_t{0};
  thread_local const CompiledSchedule* last = nullptr;
  if (kind == ScheduleKind::kPipeDreamAsync || v == 1) {
    if (kind != ScheduleKind::kGPipe && !splits_backward(kind)) kind = ScheduleKind::k1F1B;
  }
  SS_ASSERT(p < (1 << 20) && m < (1 << 24) && v < (1 << 16), "pipeline size out of range");
  const uint64_t key =
      (uint64_t(kind) << 60) | (uint64_t(v) << 44) | (uint64_t(p) << 24) | uint64_t(m);
  if (key == last_key) return *last;
  auto it = local.map.find(key);
  if (it == local.map.end()) {
    std::shared_ptr<const CompiledSchedule> cs;
    {
      std::lock_guard<std::mutex> lock(shared_mutex);
      auto g = shared.map.find(key);
      if (g != shared.map.end()) cs = g->second;
    }
    if (!cs) {
      cs = compile_cached(kind, p, m, v);  // outside the lock: other keys compile meanwhile
      std::lock_guard<std::mutex> lock(shared_mutex);
      auto g = shared.map.find(key);
      if (g != shared.map.end()) {
        cs = g->second;  // another thread was faster: use its copy
      } else {
        shared.put(key, cs);
      }
    }
    local.put(key, cs);
    it = local.map.find(key);
  }
  last_key = key;
  last = it->second.get();
  return *last;
}

// Per-thread scratch: slot end times and per-rank finish times of the latest run.
struct Scratch {
  DurationTables tables;
  std::vector<double> done, arrive, finish, starts;
  pipeline_detail::RunTimes times(const CompiledSchedule& cs, bool with_starts) {
    if (done.size() <= static_cast<size_t>(cs.slots())) {
      done.resize(cs.slots() + 1);
      arrive.resize(cs.slots() + 1);
    }
    finish.resize(cs.p);
    if (with_starts) starts.resize(cs.slots());
    return {done.data(), arrive.data(), finish.data(), with_starts ? starts.data() : nullptr};
  }
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

void run(const CompiledSchedule& cs, Scratch& s) {
  pipeline_detail::run_schedule(cs, s.tables, s.times(cs, false));
}

// Each rank's send tail (ScheduleTiming::rank_send_tail_s) in the run just timed.
std::vector<double> send_tails(const CompiledSchedule& cs, const Scratch& s) {
  std::vector<double> tail(cs.p, 0.0);
  for (int r = 0; r < cs.p; ++r) {
    if (cs.rank_ops(r) == 0) continue;
    const int slot = cs.ops[cs.begin[r + 1] - 1].self;
    tail[r] = std::max(0.0, s.arrive[slot] - s.done[slot]);
  }
  return tail;
}

double max_of(const std::vector<double>& x) {
  return x.empty() ? 0.0 : *std::max_element(x.begin(), x.end());
}

// Warm-up of rank 0, the longest: the periodic extension needs a run well past it.
int longest_warmup(ScheduleKind kind, int p, int v) {
  if (kind == ScheduleKind::kInterleaved1F1B && v >= 2) return 2 * (p - 1) + (v - 1) * p;
  return p - 1;
}

// A run length below which the periodic structure cannot fit: room for the warm-up, the
// cool-down's reach back into the steady part (about twice the warm-up) and two periods.
int periodic_run_floor(ScheduleKind kind, int p, int v) {
  const int ops_needed = 4 * longest_warmup(kind, p, v) + 2 * p * v + 4;
  return (ops_needed + 2 * v - 1) / (2 * v);
}

// Post-validated schedules (ZB-H2): the full run, and when each rank starts its first op; the
// iteration of rank r is its span from that start (schedule_timing.h).
void timing_post_validated(ScheduleKind kind, int p, int m, Scratch& s, ScheduleTiming& t) {
  const CompiledSchedule& cs = cached_schedule(kind, p, m, 1);
  pipeline_detail::run_schedule(cs, s.tables, s.times(cs, true));
  t.rank_finish_s = s.finish;
  t.rank_send_tail_s = send_tails(cs, s);
  t.rank_start_s.resize(p);
  for (int r = 0; r < p; ++r) t.rank_start_s[r] = s.starts[cs.ops[cs.begin[r]].self];
  g_last_method = TimingMethod::kFullSimulation;
}

void timing_full(ScheduleKind kind, int p, int m, int v, Scratch& s, std::vector<double>& out,
                 std::vector<double>& tails) {
  const CompiledSchedule& cs = cached_schedule(kind, p, m, v);
  run(cs, s);
  out = s.finish;
  tails = send_tails(cs, s);
  g_last_method = TimingMethod::kFullSimulation;
}

// The send tails grow affinely too (a port's backlog at the end gains the same each
// micro-batch); tests check both against the full run.
void timing_gpipe(int p, int m, Scratch& s, std::vector<double>& out, std::vector<double>& tails) {
  if (m <= 2) return timing_full(ScheduleKind::kGPipe, p, m, 1, s, out, tails);
  const CompiledSchedule& one = cached_schedule(ScheduleKind::kGPipe, p, 1, 1);
  run(one, s);
  out = s.finish;
  tails = send_tails(one, s);
  const CompiledSchedule& two = cached_schedule(ScheduleKind::kGPipe, p, 2, 1);
  run(two, s);
  const std::vector<double> tails2 = send_tails(two, s);
  for (int r = 0; r < p; ++r) {
    out[r] += (m - 1) * (s.finish[r] - out[r]);
    tails[r] += (m - 1) * (tails2[r] - tails[r]);
  }
  g_last_method = TimingMethod::kAffineExtension;
}

bool structure_ok(const CompiledSchedule& cs, int k) {
  return static_cast<int>(cs.periodic.size()) > k && cs.periodic[k].ok;
}

// Extends the run of cs (just timed) to m micro-batches with structure k; false when the run's
// steady state does not repeat with that period.
bool extend_run(const CompiledSchedule& cs, int k, int m, Scratch& s, std::vector<double>& out,
                std::vector<double>& tails) {
  double shift = 0;
  const auto& ps = cs.periodic[k];
  if (!pipeline_detail::steady_shift(cs, ps, s.done.data(), s.arrive.data(), max_of(s.finish), &shift)) return false;
  const double periods = (m - cs.m) / ps.period;
  out = s.finish;
  tails = send_tails(cs, s);  // the cool-down shifts as a whole: its tails stay
  for (double& f : out) f += periods * shift;
  g_last_method = TimingMethod::kPeriodicExtension;
  return true;
}

// Period (multiple of p) with which the run just timed repeats, or 0.
int repeating_period(const CompiledSchedule& cs, const Scratch& s) {
  double shift = 0;
  for (const auto& ps : cs.periodic) {
    if (pipeline_detail::steady_shift(cs, ps, s.done.data(), s.arrive.data(), max_of(s.finish), &shift)) {
      return ps.period;
    }
  }
  return 0;
}

// Run of m_c = m - n T micro-batches extended by n periods, exact when the steady state of the
// run repeats (schedule_periodic.cpp). m_c starts at the shortest run with the periodic
// structure for T = p; if that run has not settled, one more try at about twice the length.
// A run that repeats only with T = k p is redone with m_c = m mod T.
bool timing_periodic(ScheduleKind kind, int p, int m, int v, Scratch& s, std::vector<double>& out,
                     std::vector<double>& tails) {
  const int floor = periodic_run_floor(kind, p, v);
  if (m < floor + p) return false;
  int mc = m - (m - floor) / p * p;
  while (mc + p <= m && !structure_ok(cached_schedule(kind, p, mc, v), 0)) mc += p;
  const int step = mc / p * p;
  for (int attempt = 0; attempt < 2 && mc + p <= m; ++attempt, mc += step) {
    const CompiledSchedule& cs = cached_schedule(kind, p, mc, v);
    run(cs, s);
    if (extend_run(cs, 0, m, s, out, tails)) return true;
    const int period = repeating_period(cs, s);
    if (period == 0) continue;
    const int mc2 = mc + (m - mc) % period;  // repeats from mc's cut on, so from mc2's too
    if (mc2 + period > m) return false;
    const CompiledSchedule& cs2 = cached_schedule(kind, p, mc2, v);
    const int k = period / p - 1;
    if (!structure_ok(cs2, k)) return false;
    run(cs2, s);
    return extend_run(cs2, k, m, s, out, tails);
  }
  return false;
}

// PipeDream async: m times the per-micro-batch period of the endless 1F1B stream.
void timing_async(int p, int m, Scratch& s, std::vector<double>& out, std::vector<double>& tails) {
  int runs = (periodic_run_floor(ScheduleKind::k1F1B, p, 1) + p - 1) / p * p;
  while (!structure_ok(cached_schedule(ScheduleKind::k1F1B, p, runs, 1), 0)) runs += p;
  double shift = 0, period = 0;
  for (int attempt = 0; attempt < 4 && period == 0; ++attempt, runs *= 2) {
    const CompiledSchedule& cs = cached_schedule(ScheduleKind::k1F1B, p, runs, 1);
    run(cs, s);
    tails = send_tails(cs, s);  // the end of the stream, where the gradient sync follows
    for (const auto& ps : cs.periodic) {
      if (pipeline_detail::steady_shift(cs, ps, s.done.data(), s.arrive.data(), max_of(s.finish), &shift)) {
        period = ps.period;
        break;
      }
    }
  }
  g_last_method = TimingMethod::kSteadyState;
  if (period == 0) {  // no exact period: average over the second half of the longest stream
    const CompiledSchedule& cs = cached_schedule(ScheduleKind::k1F1B, p, runs / 2, 1);
    const auto& ps = cs.periodic[0];
    const int last = ps.cut[0] - 1;
    const int periods = std::max(1, (ps.cut[0] - ps.warmup[0]) / 2 / (2 * p));
    shift = s.done[cs.ops[last].self] - s.done[cs.ops[last - periods * 2 * p].self];
    period = static_cast<double>(periods) * p;
    g_last_method = TimingMethod::kSteadyEstimate;
  }
  out.assign(p, shift / period * m);
}

// Busy time, last backward and bubble, which follow from the durations alone.
// `last_ops`: each rank's last op's index in the duration tables, when the schedule does not end
// every rank with its chunk 0's backward (or W); `chunk1_reversed`: chunk 1 of rank r is virtual
// stage p + (p - 1 - r) (DualPipe).
void finish_timing(int p, int m, int v, const StageDurations& d, ScheduleTiming& t,
                   bool chunk1_reversed = false, const std::vector<int>* last_ops = nullptr,
                   const DurationTables* tables = nullptr) {
  t.makespan_s = 0;
  for (int r = 0; r < p; ++r) t.makespan_s = std::max(t.makespan_s, t.rank_span_s(r));
  t.rank_busy_s.assign(p, 0.0);
  t.rank_last_backward_s.assign(p, 0.0);
  const bool split = !d.weight_s.empty();
  for (int r = 0; r < p; ++r) {
    for (int c = 0; c < v; ++c) {
      const int vs = StageMap{p, v, chunk1_reversed}.virtual_stage(r, c);
      t.rank_busy_s[r] += d.forward_s[vs] + d.backward_s[vs] + (split ? d.weight_s[vs] : 0.0);
    }
    t.rank_busy_s[r] *= m;
    // The last micro-batch's backward, when it is shorter (StageDurations::last_backward_s).
    for (int c = 0; c < v && !d.last_backward_s.empty(); ++c) {
      const int vs = StageMap{p, v, chunk1_reversed}.virtual_stage(r, c);
      t.rank_busy_s[r] -= d.backward_s[vs] - d.last_backward_s[vs];
    }
    // The other schedules end each rank with the backward of its chunk 0 (virtual stage r) --
    // the last micro-batch's -- or, when they split the backward, with that chunk's W.
    t.rank_last_backward_s[r] = last_ops != nullptr ? tables->dur[(*last_ops)[r]]
                                : split             ? d.weight_s[r]
                                : !d.last_backward_s.empty() ? d.last_backward_s[r]
                                                             : d.backward_s[r];
  }
  t.bubble_fraction = 0;
  if (t.makespan_s <= 0) return;
  for (int r = 0; r < p; ++r) {
    t.bubble_fraction += std::max(0.0, t.makespan_s - t.rank_busy_s[r]) / t.makespan_s;
  }
  t.bubble_fraction /= p;
}

}  // namespace

TimingMethod last_timing_method() { return g_last_method; }

ScheduleTiming time_schedule(ScheduleKind kind, int p, int m, int v, const StageDurations& d) {
  SS_ASSERT(p >= 1 && m >= 1 && v >= 1, "time_schedule needs p, m, v >= 1");
  Scratch& s = scratch();
  pipeline_detail::fill_duration_tables(p, v, d, s.tables);
  ScheduleTiming t;
  switch (kind) {
    case ScheduleKind::kGPipe:
      // A last micro-batch of its own breaks the affine growth in m: the full run.
      if (d.last_backward_s.empty()) {
        timing_gpipe(p, m, s, t.rank_finish_s, t.rank_send_tail_s);
      } else {
        timing_full(kind, p, m, v, s, t.rank_finish_s, t.rank_send_tail_s);
      }
      break;
    case ScheduleKind::kPipeDreamAsync:
      timing_async(p, m, s, t.rank_finish_s, t.rank_send_tail_s);
      break;
    case ScheduleKind::k1F1B:
    case ScheduleKind::kInterleaved1F1B:
      if (!timing_periodic(kind, p, m, v, s, t.rank_finish_s, t.rank_send_tail_s)) {
        timing_full(kind, p, m, v, s, t.rank_finish_s, t.rank_send_tail_s);
      }
      break;
    case ScheduleKind::kZeroBubbleH1:  // O(ops) list schedule; no periodic shortcut yet
      timing_full(kind, p, m, v, s, t.rank_finish_s, t.rank_send_tail_s);
      break;
    case ScheduleKind::kZeroBubbleH2:
      timing_post_validated(kind, p, m, s, t);
      break;
    // DualPipe: m in all (half per direction), v = 2 (the directions). ZB-V: v = 2 in a V.
    // Both place chunk 1 of rank r on stage 2p - 1 - r and end ranks with other ops than
    // chunk 0's W.
    case ScheduleKind::kDualPipe:
    case ScheduleKind::kZeroBubbleV: {
      // ZB-V's order depends on the durations: built for these, not cached.
      CompiledSchedule own;
      if (kind == ScheduleKind::kZeroBubbleV) {
        own = pipeline_detail::compile_schedule(make_schedule(kind, p, m, v, &d));
      }
      const CompiledSchedule& cs =
          kind == ScheduleKind::kZeroBubbleV ? own : cached_schedule(kind, p, m, v);
      run(cs, s);
      t.rank_finish_s = s.finish;
      t.rank_send_tail_s = send_tails(cs, s);
      g_last_method = TimingMethod::kFullSimulation;
      std::vector<int> last(p);
      for (int r = 0; r < p; ++r) last[r] = cs.ops[cs.begin[r + 1] - 1].dur;
      const int per_stage = kind == ScheduleKind::kDualPipe ? m / 2 : m;
      finish_timing(p, per_stage, v, d, t, true, &last, &s.tables);
      return t;
    }
  }
  finish_timing(p, m, v, d, t);
  return t;
}

Timeline execute_schedule(const PipelineSchedule& schedule, const StageDurations& d) {
  const CompiledSchedule cs = pipeline_detail::compile_schedule(schedule);
  DurationTables tables;
  pipeline_detail::fill_duration_tables(cs.p, cs.v, d, tables);
  std::vector<double> done(cs.slots() + 1), arrive(cs.slots() + 1), finish(cs.p), starts(cs.slots());
  pipeline_detail::run_schedule(cs, tables, {done.data(), arrive.data(), finish.data(), starts.data()});
  Timeline tl;
  tl.per_rank.resize(cs.p);
  for (int r = 0; r < cs.p; ++r) {
    tl.per_rank[r].reserve(cs.rank_ops(r));
    for (int j = cs.begin[r]; j < cs.begin[r + 1]; ++j) {
      const PipeOp& op = schedule.per_rank[r][j - cs.begin[r]];
      const int slot = cs.ops[j].self;
      tl.per_rank[r].push_back({op, starts[slot], done[slot], arrive[slot]});
    }
  }
  tl.makespan_s = max_of(finish);
  return tl;
}

std::vector<int> peak_in_flight(const PipelineSchedule& schedule) {
  std::vector<int> peak(schedule.per_rank.size(), 0);
  for (size_t r = 0; r < schedule.per_rank.size(); ++r) {
    // A micro-batch's activations are held from its forward to its backward, or to its W
    // when the schedule splits the backward (W needs the layers' inputs).
    const PipeOpKind frees = schedule.split_backward ? PipeOpKind::kWeight : PipeOpKind::kBackward;
    int held = 0;
    for (const PipeOp& op : schedule.per_rank[r]) {
      if (op.kind == PipeOpKind::kForward) ++held;
      if (op.kind == frees) --held;
      peak[r] = std::max(peak[r], held);
    }
    // No flush: the next iteration's warm-up forwards arrive before this one drains.
    if (!schedule.flush) peak[r] = std::max(peak[r], schedule.stages - static_cast<int>(r));
  }
  return peak;
}

}  // namespace stratasim
