// 1F1B with a flush at the end of the iteration (PipeDream-Flush, Narayanan et al. ICML21;
// Megatron-LM's forward_backward_pipelining_without_interleaving). Rank r runs
//   warm-up:   w = min(p - r - 1, m) forwards of micro-batches 0..w-1,
//   steady:    m - w pairs (forward of micro-batch k + w, backward of micro-batch k),
//   cool-down: the w remaining backwards, micro-batches m-w..m-1.
#include <algorithm>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

PipelineSchedule schedule_1f1b(int p, int m) {
  SS_ASSERT(p >= 1 && m >= 1, "1f1b needs at least one stage and one micro-batch");
  PipelineSchedule s;
  s.kind = ScheduleKind::k1F1B;
  s.stages = p;
  s.micro_batches = m;
  s.chunks = 1;
  s.flush = true;
  s.per_rank.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.per_rank[r];
    ops.reserve(2 * static_cast<size_t>(m));
    const int warmup = std::min(p - r - 1, m);
    for (int k = 0; k < warmup; ++k) ops.push_back({PipeOpKind::kForward, k, 0});
    for (int k = 0; k < m - warmup; ++k) {
      ops.push_back({PipeOpKind::kForward, k + warmup, 0});
      ops.push_back({PipeOpKind::kBackward, k, 0});
    }
    for (int k = m - warmup; k < m; ++k) ops.push_back({PipeOpKind::kBackward, k, 0});
  }
  return s;
}

}  // namespace stratasim
