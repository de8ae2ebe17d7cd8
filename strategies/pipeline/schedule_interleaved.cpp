// Interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2.2), in the order of Megatron-LM's
// forward_backward_pipelining_with_interleaving. Each rank walks m * v "virtual steps" k;
// forward step k runs chunk (k / p) % v of micro-batch (k / (p v)) p + k % p, backward step k
// the same micro-batch on chunk v - 1 - (k / p) % v. Rank r warms up with
//   w = min(2 (p - r - 1) + (v - 1) p, m v)
// forward steps, then alternates forward step k + w and backward step k, then cools down with
// the remaining backward steps. Megatron's legacy special case "m == p: all forwards first" is
// not applied: the formula above (current Megatron-core) is used for every m.
#include <algorithm>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

PipeOp virtual_step_op(PipeOpKind kind, int k, int p, int v) {
  const int group = k / (p * v);
  int chunk = (k / p) % v;
  if (kind == PipeOpKind::kBackward) chunk = v - 1 - chunk;
  return {kind, group * p + k % p, chunk};
}

}  // namespace

PipelineSchedule schedule_interleaved(int p, int m, int v) {
  SS_ASSERT(p >= 1 && m >= 1 && v >= 1, "interleaved 1F1B needs p, m, v >= 1");
  if (v == 1) {  // one chunk per rank: interleaving degenerates to plain 1F1B
    PipelineSchedule s = schedule_1f1b(p, m);
    s.kind = ScheduleKind::kInterleaved1F1B;
    return s;
  }
  SS_ASSERT(m % p == 0, "interleaved 1F1B needs micro-batches to be a multiple of pp");
  PipelineSchedule s;
  s.kind = ScheduleKind::kInterleaved1F1B;
  s.stages = p;
  s.micro_batches = m;
  s.chunks = v;
  s.flush = true;
  s.per_rank.resize(p);
  const int total = m * v;
  for (int r = 0; r < p; ++r) {
    auto& ops = s.per_rank[r];
    ops.reserve(2 * static_cast<size_t>(total));
    const int warmup = std::min(2 * (p - r - 1) + (v - 1) * p, total);
    const auto fwd = [&](int k) { ops.push_back(virtual_step_op(PipeOpKind::kForward, k, p, v)); };
    const auto bwd = [&](int k) { ops.push_back(virtual_step_op(PipeOpKind::kBackward, k, p, v)); };
    for (int k = 0; k < warmup; ++k) fwd(k);
    for (int k = 0; k < total - warmup; ++k) {
      fwd(k + warmup);
      bwd(k);
    }
    for (int k = total - warmup; k < total; ++k) bwd(k);
  }
  return s;
}

}  // namespace stratasim
