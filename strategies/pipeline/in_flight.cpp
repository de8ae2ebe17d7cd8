// Closed forms of peak_in_flight(schedule) that need no schedule to be built, for any m
// (a search may ask for millions of micro-batches). Tests check them against the op orders.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

std::vector<int> peak_in_flight(ScheduleKind kind, int p, int m, int v) {
  // DualPipe: counted on its op order (m per direction), both chunks' micro-batches together.
  // Memoized per thread: a search asks for the same shapes point after point.
  if (kind == ScheduleKind::kDualPipe || kind == ScheduleKind::kZeroBubbleV) {
    thread_local std::map<std::tuple<int, int, int, int>, std::vector<int>> memo;
    const auto key = std::make_tuple(static_cast<int>(kind), p, m, v);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
    if (memo.size() > 4096) memo.clear();
    return memo.emplace(key, peak_in_flight(make_schedule(kind, p, m, v))).first->second;
  }
  std::vector<int> peak(p);
  for (int r = 0; r < p; ++r) {
    switch (kind) {
      case ScheduleKind::kGPipe: peak[r] = m; break;  // every forward before any backward
      case ScheduleKind::k1F1B: peak[r] = std::min(p - r, m); break;  // warm-up p - r - 1, +1
      case ScheduleKind::kPipeDreamAsync: peak[r] = p - r; break;  // the stream never drains
      // p - r - 1 warm-up forwards, one more, and r micro-batches whose W waits (B done).
      case ScheduleKind::kZeroBubbleH1: peak[r] = std::min(p, m); break;
      // W waits until 2p - 1 micro-batches hold activations (every rank reaches the bound when
      // m allows: its warm-up plus one more forward per B in the steady phase).
      case ScheduleKind::kZeroBubbleH2: peak[r] = std::min(2 * p - 1, m); break;
      case ScheduleKind::kDualPipe: break;  // above
      case ScheduleKind::kZeroBubbleV: break;
      case ScheduleKind::kInterleaved1F1B: {
        // Warm-up of Megatron's interleaved schedule, then one more forward before a backward.
        const long long total = static_cast<long long>(m) * v;
        const long long warmup = std::min<long long>(2LL * (p - r - 1) + (v - 1LL) * p, total);
        peak[r] = static_cast<int>(std::min(total, warmup + 1));
        break;
      }
    }
  }
  return peak;
}

namespace {

// Forward (or backward, mirrored) steps 0 .. k - 1 of an interleaved rank that ran chunk c:
// step j runs chunk (j / p) % v, so each period of p v steps runs p of every chunk.
long long interleaved_steps_of_chunk(long long k, int p, int v, int c) {
  const long long period = static_cast<long long>(p) * v;
  return (k / period) * p + std::clamp<long long>(k % period - static_cast<long long>(c) * p, 0, p);
}

double interleaved_peak_held(int p, int m, int v, int r, const double* bytes) {
  const long long total = static_cast<long long>(m) * v;
  const long long warmup = std::min<long long>(2LL * (p - r - 1) + (v - 1LL) * p, total);
  // After the warm-up's forwards (no backward yet) the rank holds them all; then forward step
  // w + k adds its chunk's micro-batch and backward step k frees one of chunk v - 1 - (k / p) %
  // v. The order repeats every p v steps, so one period of k covers every distinct moment.
  double held = 0;
  for (int c = 0; c < v; ++c) held += static_cast<double>(interleaved_steps_of_chunk(warmup, p, v, c)) * bytes[c];
  double peak = held;
  const long long steady = std::min<long long>(total - warmup, static_cast<long long>(p) * v);
  for (long long k = 0; k < steady; ++k) {
    held += bytes[((warmup + k) / p) % v];
    peak = std::max(peak, held);
    held -= bytes[v - 1 - (k / p) % v];
  }
  return peak;
}

// Each rank's distinct held-per-chunk vectors after its forwards, from the op order.
const std::vector<std::vector<std::vector<int>>>& held_vectors(ScheduleKind kind, int p, int m, int v) {
  thread_local std::map<std::tuple<int, int, int, int>, std::vector<std::vector<std::vector<int>>>> memo;
  const auto key = std::make_tuple(static_cast<int>(kind), p, m, v);
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  if (memo.size() > 4096) memo.clear();
  const PipelineSchedule s = make_schedule(kind, p, m, v);
  const PipeOpKind frees = s.split_backward ? PipeOpKind::kWeight : PipeOpKind::kBackward;
  std::vector<std::vector<std::vector<int>>> out(s.per_rank.size());
  for (size_t r = 0; r < s.per_rank.size(); ++r) {
    std::vector<int> held(v, 0);
    std::set<std::vector<int>> seen;
    for (const PipeOp& op : s.per_rank[r]) {
      if (op.kind == PipeOpKind::kForward) {
        ++held[op.chunk];
        seen.insert(held);
      }
      if (op.kind == frees) --held[op.chunk];
    }
    out[r].assign(seen.begin(), seen.end());
  }
  return memo.emplace(key, std::move(out)).first->second;
}

}  // namespace

double peak_held_activation(ScheduleKind kind, int p, int m, int v, int r,
                            const std::vector<double>& chunk_bytes) {
  if (static_cast<int>(chunk_bytes.size()) < std::max(1, v)) {
    const double bytes = chunk_bytes.empty() ? 0.0 : chunk_bytes[0];
    return peak_in_flight(kind, p, m, v)[r] * bytes;
  }
  return peak_held_activation(kind, p, m, v, r, chunk_bytes.data());
}

double peak_held_activation(ScheduleKind kind, int p, int m, int v, int r, const double* chunk_bytes) {
  if (v <= 1) return peak_in_flight(kind, p, m, v)[r] * chunk_bytes[0];
  if (kind == ScheduleKind::kInterleaved1F1B) return interleaved_peak_held(p, m, v, r, chunk_bytes);
  double peak = 0;
  for (const std::vector<int>& held : held_vectors(kind, p, m, v)[r]) {
    double sum = 0;
    for (int c = 0; c < v; ++c) sum += held[c] * chunk_bytes[c];
    peak = std::max(peak, sum);
  }
  return peak;
}

double uniform_bubble_fraction(ScheduleKind kind, int p, int m, int v) {
  switch (kind) {
    case ScheduleKind::kGPipe:
    case ScheduleKind::k1F1B: return double(p - 1) / (m + p - 1);
    case ScheduleKind::kInterleaved1F1B: return double(p - 1) / (double(v) * m + p - 1);
    case ScheduleKind::kPipeDreamAsync: return 0;
    // F = B = W = 1: makespan 3m + (p - 1)(F + B - W) = 3m + p - 1 (Qi et al. 2024, Sec. 3.1).
    case ScheduleKind::kZeroBubbleH1: return double(p - 1) / (3.0 * m + p - 1);
    // Post-validated: each rank's span is 3m + (p - 1)(F + B - 2W) = 3m (Qi et al., Table 1).
    case ScheduleKind::kZeroBubbleH2: return 0;
    // No closed form: the op order run with F = B = W = 1 (m in all, v = 2).
    case ScheduleKind::kDualPipe:
    case ScheduleKind::kZeroBubbleV: {
      StageDurations d;
      d.forward_s.assign(2 * p, 1.0), d.backward_s.assign(2 * p, 1.0), d.weight_s.assign(2 * p, 1.0);
      return time_schedule(kind, p, m, 2, d).bubble_fraction;
    }
  }
  return 0;
}

}  // namespace stratasim
