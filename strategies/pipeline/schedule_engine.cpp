#include "strategies/pipeline/schedule_engine.h"

#include <algorithm>

#include "sim/core/error.h"

namespace stratasim::pipeline_detail {
namespace {

CompiledOp compile_op(const PipeOp& op, int r, const PipelineSchedule& s) {
  const int m = s.micro_batches, vstages = s.virtual_stages();
  const int vs = s.virtual_stage(r, op.chunk);
  const int next = s.next_stage(vs), prev = s.prev_stage(vs);
  const int bwd_base = vstages * m;
  const int weight_base = 2 * vstages * m;
  const int zero = 3 * vstages * m;
  CompiledOp c;
  c.rank = r;
  if (op.kind == PipeOpKind::kWeight) {  // after its own B, on the same rank
    c.self = weight_base + vs * m + op.micro_batch;
    c.dep = zero;
    c.fwd = bwd_base + vs * m + op.micro_batch;
    c.dur = 2 * vstages + vs;
    c.send = vstages - 1;
    c.queued = false;
  } else if (op.kind == PipeOpKind::kForward) {
    c.self = vs * m + op.micro_batch;
    c.dep = prev >= 0 ? prev * m + op.micro_batch : zero;
    c.fwd = zero;
    c.dur = vs;
    c.send = next >= 0 ? vs : vstages - 1;  // the boundary vs -> next
    c.queued = next >= 0 && s.stage_map().rank_of(next) != r;
  } else {
    c.self = bwd_base + vs * m + op.micro_batch;
    c.dep = next >= 0 ? bwd_base + next * m + op.micro_batch : zero;
    c.fwd = vs * m + op.micro_batch;
    // The iteration's last micro-batch has a backward of its own (StageDurations::last_backward_s).
    c.dur = (op.micro_batch == m - 1 ? 3 * vstages : vstages) + vs;
    c.send = prev >= 0 ? prev : vstages - 1;  // the boundary prev -> vs
    c.queued = prev >= 0 && s.stage_map().rank_of(prev) != r;
  }
  return c;
}

// Rank that runs the op waiting for `slot` on the next virtual stage, or -1.
int consumer_rank(const CompiledSchedule& cs, int slot) {
  const int vstages = cs.p * cs.v;
  const int fwd_slots = vstages * cs.m;
  if (slot < fwd_slots) {
    const int next = cs.map.next_stage(slot / cs.m);
    return next >= 0 ? cs.map.rank_of(next) : -1;
  }
  if (slot >= 2 * fwd_slots) return -1;  // W: nothing on another rank waits for it
  const int prev = cs.map.prev_stage((slot - fwd_slots) / cs.m);
  return prev >= 0 ? cs.map.rank_of(prev) : -1;
}

// The list scheduler without times: ranks whose next op may have become runnable sit on a
// stack; a rank runs ops until one waits for an input, and the op producing that input pushes
// the waiting rank back. Every op pushes at most one rank, so this is O(ops).
void order_ops(CompiledSchedule& cs) {
  const int p = cs.p;
  std::vector<uint8_t> done(static_cast<size_t>(cs.slots()) + 1, 0), queued(p, 1);
  done[cs.slots()] = 1;
  std::vector<int32_t> next(cs.begin.begin(), cs.begin.end() - 1), stack;
  for (int r = p - 1; r >= 0; --r) stack.push_back(r);
  cs.order.clear();
  cs.order.reserve(cs.ops.size());
  while (!stack.empty()) {
    const int r = stack.back();
    stack.pop_back();
    queued[r] = 0;
    int j = next[r];
    for (; j < cs.begin[r + 1] && done[cs.ops[j].dep] && done[cs.ops[j].fwd]; ++j) {
      const CompiledOp& op = cs.ops[j];
      done[op.self] = 1;
      cs.order.push_back(op);
      const int wake = consumer_rank(cs, op.self);
      if (wake >= 0 && !queued[wake]) {
        queued[wake] = 1;
        stack.push_back(wake);
      }
    }
    next[r] = j;
  }
  for (int r = 0; r < p; ++r) {
    SS_ASSERT(next[r] == cs.begin[r + 1], "pipeline schedule deadlocks");
  }
}

// Reorders cs.order by wavefront (the op's step if every op took one unit of time): ops of one
// wavefront are independent, so the timing pass can overlap their latencies.
void order_by_wavefront(CompiledSchedule& cs) {
  std::vector<int32_t> step(static_cast<size_t>(cs.slots()) + 1, 0), rank_step(cs.p, 0);
  int steps = 0;
  for (const CompiledOp& op : cs.order) {
    const int s = 1 + std::max({rank_step[op.rank], step[op.dep], step[op.fwd]});
    step[op.self] = rank_step[op.rank] = s;
    steps = std::max(steps, s);
  }
  std::vector<int32_t> first(static_cast<size_t>(steps) + 2, 0);
  for (const CompiledOp& op : cs.order) ++first[step[op.self] + 1];
  for (int s = 1; s <= steps + 1; ++s) first[s] += first[s - 1];
  std::vector<CompiledOp> sorted(cs.order.size());
  for (const CompiledOp& op : cs.order) sorted[first[step[op.self]]++] = op;
  cs.order.swap(sorted);
}

}  // namespace

CompiledSchedule compile_schedule(const PipelineSchedule& s) {
  const int p = s.stages, m = s.micro_batches, v = s.chunks;
  SS_ASSERT(p >= 1 && m >= 1 && v >= 1, "pipeline schedule needs p, m, v >= 1");
  SS_ASSERT(static_cast<int>(s.per_rank.size()) == p, "pipeline schedule needs one list per rank");
  CompiledSchedule cs;
  cs.p = p;
  cs.m = m;
  cs.v = v;
  cs.map = s.stage_map();
  cs.begin.assign(1, 0);
  cs.ops.reserve(static_cast<size_t>(cs.slots()));
  std::vector<uint8_t> seen(static_cast<size_t>(cs.slots()), 0);
  for (int r = 0; r < p; ++r) {
    for (const PipeOp& op : s.per_rank[r]) {
      SS_ASSERT(op.micro_batch >= 0 && op.micro_batch < m, "pipeline op micro-batch out of range");
      SS_ASSERT(op.chunk >= 0 && op.chunk < v, "pipeline op chunk out of range");
      const CompiledOp c = compile_op(op, r, s);
      SS_ASSERT(!seen[c.self], "pipeline schedule runs an op twice");
      seen[c.self] = 1;
      cs.ops.push_back(c);
    }
    cs.begin.push_back(static_cast<int32_t>(cs.ops.size()));
  }
  const int ops_per_slot_group = s.split_backward ? 3 : 2;
  SS_ASSERT(static_cast<int>(cs.ops.size()) == ops_per_slot_group * p * v * m,
            "pipeline schedule misses a forward, backward or weight op");
  for (const CompiledOp& op : cs.ops) {
    SS_ASSERT(s.split_backward || op.self < 2 * p * v * m, "W ops need a split schedule");
  }
  order_ops(cs);
  order_by_wavefront(cs);
  return cs;
}

void fill_duration_tables(int p, int v, const StageDurations& d, DurationTables& t) {
  const size_t vstages = static_cast<size_t>(p) * v;
  SS_ASSERT(d.forward_s.size() == vstages && d.backward_s.size() == vstages,
            "stage durations need one forward and one backward time per virtual stage");
  SS_ASSERT(d.p2p_s.empty() || d.p2p_s.size() == vstages - 1,
            "stage durations need one p2p time per stage boundary (or none)");
  SS_ASSERT(d.weight_s.empty() || d.weight_s.size() == vstages,
            "stage durations need one W time per virtual stage (or none)");
  SS_ASSERT(d.last_backward_s.empty() || d.last_backward_s.size() == vstages,
            "stage durations need one last-micro-batch backward per virtual stage (or none)");
  t.dur.assign(4 * vstages, 0.0);
  t.lat.assign(vstages, 0.0);
  for (size_t i = 0; i < vstages; ++i) {
    SS_ASSERT(d.forward_s[i] >= 0 && d.backward_s[i] >= 0, "stage durations must be >= 0");
    t.dur[i] = d.forward_s[i];
    t.dur[vstages + i] = d.backward_s[i];
    if (!d.weight_s.empty()) t.dur[2 * vstages + i] = d.weight_s[i];
    t.dur[3 * vstages + i] = d.last_backward_s.empty() ? d.backward_s[i] : d.last_backward_s[i];
    SS_ASSERT(t.dur[3 * vstages + i] >= 0, "stage durations must be >= 0");
  }
  for (size_t i = 0; i < d.p2p_s.size(); ++i) {
    SS_ASSERT(d.p2p_s[i] >= 0, "p2p times must be >= 0");
    t.lat[i] = d.p2p_s[i];
  }
}

// One max-plus pass in dependency order: start = max(rank free, input arrived, own forward);
// the output's transfer starts at max(end, the rank's port free). A rank's ops come in its own
// order (the order is by wavefront), so its port sees its sends in the order it makes them.
void run_schedule(const CompiledSchedule& cs, const DurationTables& t, const RunTimes& out) {
  double* done = out.done;
  double* arrive = out.arrive;
  double* finish = out.finish;
  std::fill(finish, finish + cs.p, 0.0);
  done[cs.slots()] = arrive[cs.slots()] = 0.0;
  thread_local std::vector<double> port_free;
  port_free.assign(static_cast<size_t>(cs.p), 0.0);
  const double* dur = t.dur.data();
  const double* lat = t.lat.data();
  for (const CompiledOp& op : cs.order) {
    const double ready = std::max(finish[op.rank], std::max(arrive[op.dep], done[op.fwd]));
    if (out.starts != nullptr) out.starts[op.self] = ready;
    const double end = ready + dur[op.dur];
    finish[op.rank] = done[op.self] = end;
    if (!op.queued) {
      arrive[op.self] = end + lat[op.send];
    } else {
      double& free = port_free[op.rank];
      free = arrive[op.self] = std::max(end, free) + lat[op.send];
    }
  }
}

}  // namespace stratasim::pipeline_detail
