// Closed forms of peak_in_flight(schedule) that need no schedule to be built, for any m
// (a search may ask for millions of micro-batches). Tests check them against the op orders.
#include <algorithm>
#include <map>
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
