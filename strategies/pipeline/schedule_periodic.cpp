// Periodic structure of 1F1B-like schedules, which lets time_schedule() simulate a short run
// of m_c micro-batches and extend it to m = m_c + n T exactly.
//
// In 1F1B and interleaved 1F1B with m >= m_c, rank r's op list is
//   [warm-up][steady part, periodic: op j + 2Tv is op j with micro-batch + T][cool-down],
// and the first cut[r] ops (warm-up and steady part up to the last forward's pair) are the same
// for every m; only the steady part grows (by 2Tv ops per T micro-batches) and the cool-down is
// shifted by T micro-batches. The run is a max-plus linear system: if, after the m_c run, the
// end times of the last window[r] ops before each cut equal those one period earlier plus a
// common shift c, then every later period repeats with the same shift and the cool-down of
// the m run is the cool-down of the m_c run delayed by n c. window[r] is the furthest any op
// after the cut (of this run, or of the next period in a longer run) reaches back into rank r.
#include <algorithm>
#include <cmath>

#include "strategies/pipeline/schedule_engine.h"

namespace stratasim::pipeline_detail {
namespace {

bool is_forward(const CompiledSchedule& cs, const CompiledOp& op) {
  return op.self < cs.p * cs.v * cs.m;
}

// Warm-up length and cut of each rank; false when the list is not of the 1F1B shape.
bool find_cuts(const CompiledSchedule& cs, int shift, PeriodicStructure& ps) {
  for (int r = 0; r < cs.p; ++r) {
    const CompiledOp* ops = cs.ops.data() + cs.begin[r];
    const int n = cs.rank_ops(r);
    int w = 0;
    while (w < n && is_forward(cs, ops[w])) ++w;
    int last_fwd = n - 1;
    while (last_fwd >= 0 && !is_forward(cs, ops[last_fwd])) --last_fwd;
    const int cut = last_fwd + 2;
    if (cut > n || w + shift > cut) return false;
    ps.warmup[r] = w;
    ps.cut[r] = cut;
  }
  return true;
}

// Op j + shift is op j with micro-batch + T for warm-up <= j < cut - shift.
bool shift_invariant(const CompiledSchedule& cs, const PeriodicStructure& ps, int shift) {
  const int T = ps.period;
  for (int r = 0; r < cs.p; ++r) {
    const CompiledOp* ops = cs.ops.data() + cs.begin[r];
    for (int j = ps.warmup[r]; j + shift < ps.cut[r]; ++j) {
      if (ops[j].self % cs.m + T >= cs.m || ops[j + shift].self != ops[j].self + T) return false;
    }
  }
  return true;
}

struct SlotPlaces {
  std::vector<int32_t> rank, index;
};

SlotPlaces place_slots(const CompiledSchedule& cs) {
  SlotPlaces at{std::vector<int32_t>(cs.slots()), std::vector<int32_t>(cs.slots())};
  for (int r = 0; r < cs.p; ++r) {
    for (int j = 0; j < cs.rank_ops(r); ++j) {
      const int slot = cs.ops[cs.begin[r] + j].self;
      at.rank[slot] = r;
      at.index[slot] = j;
    }
  }
  return at;
}

// Ops before a cut must depend only on ops before the cuts (so they are the same in every
// longer run); computes how far ops after the cut reach back (window).
bool measure_windows(const CompiledSchedule& cs, int shift, PeriodicStructure& ps) {
  const SlotPlaces at = place_slots(cs);
  std::fill(ps.window.begin(), ps.window.end(), 1);  // the rank's own previous op
  for (int r = 0; r < cs.p; ++r) {
    int last_send = -1;  // the rank's previous op whose output left through its port
    for (int j = 0; j < cs.rank_ops(r); ++j) {
      const CompiledOp& op = cs.ops[cs.begin[r] + j];
      int queued_after = cs.slots();  // the send this op's transfer queues behind
      if (op.queued) {
        if (last_send >= 0) queued_after = cs.ops[cs.begin[r] + last_send].self;
        last_send = j;
      }
      for (const int slot : {op.dep, op.fwd, queued_after}) {
        if (slot == cs.slots()) continue;  // no dependency
        const int q = at.rank[slot], i = at.index[slot];
        if (j < ps.cut[r] && i >= ps.cut[q]) return false;
        if (j < ps.cut[r] - shift) continue;
        const int reference = j >= ps.cut[r] ? ps.cut[q] : ps.cut[q] - shift;
        ps.window[q] = std::max(ps.window[q], reference - i);
      }
    }
  }
  for (int r = 0; r < cs.p; ++r) {
    if (ps.cut[r] - ps.window[r] - shift < ps.warmup[r]) return false;
  }
  return true;
}

}  // namespace

PeriodicStructure analyze_periodicity(const CompiledSchedule& cs, int period) {
  PeriodicStructure ps;
  ps.period = period;
  ps.warmup.assign(cs.p, 0);
  ps.cut.assign(cs.p, 0);
  ps.window.assign(cs.p, 0);
  if (period < 1 || period >= cs.m) return ps;
  const int shift = 2 * period * cs.v;
  ps.ok =
      find_cuts(cs, shift, ps) && shift_invariant(cs, ps, shift) && measure_windows(cs, shift, ps);
  return ps;
}

bool steady_shift(const CompiledSchedule& cs, const PeriodicStructure& ps, const double* done,
                  const double* arrive, double scale, double* shift_s) {
  if (!ps.ok) return false;
  const int shift = 2 * ps.period * cs.v;
  const CompiledOp* ops0 = cs.ops.data() + cs.begin[0];
  const double c = done[ops0[ps.cut[0] - 1].self] - done[ops0[ps.cut[0] - 1 - shift].self];
  const double tol = 1e-11 * scale;
  for (int r = 0; r < cs.p; ++r) {
    const CompiledOp* ops = cs.ops.data() + cs.begin[r];
    for (int j = ps.cut[r] - ps.window[r]; j < ps.cut[r]; ++j) {
      const double d = done[ops[j].self] - done[ops[j - shift].self];
      const double a = arrive[ops[j].self] - arrive[ops[j - shift].self];
      if (std::abs(d - c) > tol || std::abs(a - c) > tol) return false;
    }
  }
  *shift_s = c;
  return true;
}

}  // namespace stratasim::pipeline_detail
