// GPipe / all-forward-all-backward (Huang et al. 2019; Megatron-LM's non-interleaved schedule
// with a full warm-up): every rank runs the forward of micro-batches 0..m-1, then their
// backwards in the same ascending order 0..m-1. (The backward order does not change the
// makespan or the peak memory: the backward of micro-batch 0 on the last stage only waits for
// that stage's own forwards, and the rank holds all m activations either way.)
#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

PipelineSchedule schedule_gpipe(int p, int m) {
  SS_ASSERT(p >= 1 && m >= 1, "gpipe needs at least one stage and one micro-batch");
  PipelineSchedule s;
  s.kind = ScheduleKind::kGPipe;
  s.stages = p;
  s.micro_batches = m;
  s.chunks = 1;
  s.flush = true;
  s.per_rank.resize(p);
  for (auto& ops : s.per_rank) {
    ops.reserve(2 * static_cast<size_t>(m));
    for (int mb = 0; mb < m; ++mb) ops.push_back({PipeOpKind::kForward, mb, 0});
    for (int mb = 0; mb < m; ++mb) ops.push_back({PipeOpKind::kBackward, mb, 0});
  }
  return s;
}

}  // namespace stratasim
