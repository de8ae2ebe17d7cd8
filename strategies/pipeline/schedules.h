// One function per schedule; each lives in its own file. All return std::nullopt-free values:
// callers (lowering) have already checked legality with schedule_rule_violation().
#pragma once

#include <optional>
#include <string>

#include "strategies/pipeline/pipeline_schedule.h"

namespace stratasim {

struct StageDurations;  // schedule_timing.h

// GPipe / all-forward-all-backward: every forward, then every backward, both in ascending
// micro-batch order 0..m-1 (the backward order changes neither makespan nor memory).
PipelineSchedule schedule_gpipe(int p, int m);
// 1F1B (PipeDream-Flush): rank r warms up with min(p - r - 1, m) forwards, then alternates
// one forward and one backward, then cools down with the remaining backwards.
PipelineSchedule schedule_1f1b(int p, int m);
// Interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2.2): v chunks per rank, m % p == 0.
PipelineSchedule schedule_interleaved(int p, int m, int v);
// PipeDream asynchronous (Narayanan et al. SOSP19) with weight stashing: 1F1B order without
// a flush; consecutive iterations overlap, so the steady state has no bubble.
PipelineSchedule schedule_pipedream_async(int p, int m);
// ZB-H1 (Qi et al. ICLR 2024): 1F1B with the backward split into B and W, each rank running its
// W r micro-batches late to fill the cool-down (schedule_zb_h1.cpp).
PipelineSchedule schedule_zb_h1(int p, int m);
// ZB-H2 (Qi et al. ICLR 2024): 2(p - r - 1) + 1 warm-up forwards, W deferred while fewer than
// 2p - 1 micro-batches hold activations, optimizer post-validation (schedule_zb_h2.cpp).
PipelineSchedule schedule_zb_h2(int p, int m);
// DualPipe (DeepSeek-V3 report, Sec. 3.2.1): p even ranks, m >= p micro-batches in each of two
// directions (2m in all); chunk 0 of rank r is stage r of the forward direction, chunk 1 stage
// p - 1 - r of the reverse one (bidirectional); B and W split (schedule_dualpipe.cpp).
PipelineSchedule schedule_dualpipe(int p, int m);
// ZB-V (Qi et al., NeurIPS 2024): 2 chunks per rank in a V (StageMap::v_shape), B and W split,
// at most 2p chunk activations per rank (1F1B's peak); built greedily with unit costs
// (schedule_zb_v.cpp) by simulating the ranks with the stages' durations `d` (unit costs when
// null).
PipelineSchedule schedule_zb_v(int p, int m, const StageDurations* d = nullptr);

// m: the iteration's micro-batches per pipeline (DualPipe: both directions together).
// `d`: the stage durations a cost-driven order (ZB-V) is built for (null: unit costs); the
// other schedules' orders do not depend on it.
PipelineSchedule make_schedule(ScheduleKind kind, int p, int m, int v,
                               const StageDurations* d = nullptr);

// Why (p, m, v) is illegal for this schedule, or std::nullopt when it is legal.
// e.g. "interleaved 1F1B needs micro-batches (6) to be a multiple of pp (4)".
std::optional<std::string> schedule_rule_violation(ScheduleKind kind, int p, int m, int v);

}  // namespace stratasim
