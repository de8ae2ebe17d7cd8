// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 3.1 and Fig. 3): the
// backward pass is split into B (gradient of the input, on the critical path) and W (gradient
// of the weights, needed only by the optimizer step). Rank r keeps 1F1B's warm-up and order of
// F and B, and runs each W r micro-batches after its B:
//   warm-up:   min(p - r - 1, m) forwards,
//   steady:    F, B, and from the (r+1)-th B on, the oldest pending W,
//   cool-down: B, W for the remaining micro-batches, then the W still pending.
// The delayed W fill the cool-down bubbles: with F = B = W and free transfers the bubble is
// (p - 1)(F + B - W), a third of 1F1B's (p - 1)(F + B + W). A rank holds at most p micro-batches'
// activations (forwards run, W not yet run), 1F1B's peak (rank 0).
#include <algorithm>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

PipelineSchedule schedule_zb_h1(int p, int m) {
  SS_ASSERT(p >= 1 && m >= 1, "zb-h1 needs at least one stage and one micro-batch");
  PipelineSchedule s;
  s.kind = ScheduleKind::kZeroBubbleH1;
  s.stages = p;
  s.micro_batches = m;
  s.chunks = 1;
  s.flush = true;
  s.split_backward = true;
  s.per_rank.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.per_rank[r];
    ops.reserve(3 * static_cast<size_t>(m));
    int f = 0, b = 0, w = 0;
    auto backward = [&] {
      ops.push_back({PipeOpKind::kBackward, b++, 0});
      if (b > r) ops.push_back({PipeOpKind::kWeight, w++, 0});
    };
    for (const int warmup = std::min(p - r - 1, m); f < warmup;) {
      ops.push_back({PipeOpKind::kForward, f++, 0});
    }
    while (f < m) {
      ops.push_back({PipeOpKind::kForward, f++, 0});
      backward();
    }
    while (b < m) backward();
    while (w < m) ops.push_back({PipeOpKind::kWeight, w++, 0});
  }
  return s;
}

}  // namespace stratasim
