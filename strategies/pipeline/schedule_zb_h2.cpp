// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 3.1 and Fig. 3 bottom):
// ZB-H1's split backward with more forwards in the warm-up, so that no rank idles before its
// first B, and W deferred to fill the cool-down: the trapezoid becomes a parallelogram.
// Rank r of p runs
//   warm-up:   min(2 (p - r - 1) + 1, m) forwards (rank 0: 2p - 1, the last rank: 1),
//   steady:    B, then W only when 2p - 1 micro-batches hold activations, then F,
//   cool-down: B, W for the remaining micro-batches, then the W still pending,
// the order of the handcrafted schedule in the authors' implementation (sail-sg/
// zero-bubble-pipeline-parallelism, scheduler/zb.py manual_order, whose comment draws it for
// p = 4) with the paper's memory bound of 2p - 1 micro-batches per rank (Table 1: peak memory
// (2p - 1) M_B, twice 1F1B's p M_B). Every rank is then busy from its first op to its last one
// for m (F + B + W) + (p - 1)(F + B - 2W) at most (the paper's bubble), so with the optimizer
// step validated after the update (post-validation, Sec. 4: no all-ranks synchronization
// between iterations) the iteration costs each rank's own span, not the flushed makespan.
#include <algorithm>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

PipelineSchedule schedule_zb_h2(int p, int m) {
  SS_ASSERT(p >= 1 && m >= 1, "zb-h2 needs at least one stage and one micro-batch");
  PipelineSchedule s;
  s.kind = ScheduleKind::kZeroBubbleH2;
  s.stages = p;
  s.micro_batches = m;
  s.chunks = 1;
  s.flush = true;
  s.split_backward = true;
  s.post_validation = true;
  s.per_rank.resize(p);
  const int held_limit = 2 * p - 1;
  for (int r = 0; r < p; ++r) {
    auto& ops = s.per_rank[r];
    ops.reserve(3 * static_cast<size_t>(m));
    int f = 0, b = 0, w = 0;
    for (const int warmup = std::min(2 * (p - r - 1) + 1, m); f < warmup;) {
      ops.push_back({PipeOpKind::kForward, f++, 0});
    }
    while (f < m) {
      ops.push_back({PipeOpKind::kBackward, b++, 0});
      if (f - w >= held_limit) ops.push_back({PipeOpKind::kWeight, w++, 0});
      ops.push_back({PipeOpKind::kForward, f++, 0});
    }
    while (b < m) {
      ops.push_back({PipeOpKind::kBackward, b++, 0});
      ops.push_back({PipeOpKind::kWeight, w++, 0});
    }
    while (w < m) ops.push_back({PipeOpKind::kWeight, w++, 0});
  }
  return s;
}

}  // namespace stratasim
