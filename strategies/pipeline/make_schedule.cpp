#include <string>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {

std::optional<std::string> schedule_rule_violation(ScheduleKind kind, int p, int m, int v) {
  const auto n = [](int x) { return std::to_string(x); };
  if (p < 1) return "a pipeline needs at least 1 stage (pp=" + n(p) + ")";
  if (m < 1) return "a pipeline needs at least 1 micro-batch (m=" + n(m) + ")";
  if (v < 1) return "a pipeline needs at least 1 chunk per rank (v=" + n(v) + ")";
  if (kind == ScheduleKind::kDualPipe) {
    if (p % 2 != 0) return "DualPipe needs an even pp (pp=" + n(p) + ")";
    if (v != 2) return "DualPipe runs 2 chunks per rank, one per direction (v=" + n(v) + ")";
    if (m % 2 != 0) {
      return "DualPipe feeds half the micro-batches from each end and needs an even number (m=" +
             n(m) + ")";
    }
    if (m < 2 * p) {
      return "DualPipe needs at least pp micro-batches in each direction, 2 pp in all (m=" + n(m) +
             ", pp=" + n(p) + ")";
    }
    return std::nullopt;
  }
  if (kind == ScheduleKind::kZeroBubbleV) {
    if (v != 2) return "ZB-V runs 2 chunks per rank in a V (v=" + n(v) + ")";
    return std::nullopt;
  }
  if (kind == ScheduleKind::kInterleaved1F1B) {
    if (v < 2) return "interleaved 1F1B needs at least 2 chunks per rank (v=" + n(v) + ")";
    if (m % p != 0) {
      return "interleaved 1F1B needs micro-batches (" + n(m) + ") to be a multiple of pp (" + n(p) +
             ")";
    }
    return std::nullopt;
  }
  if (v != 1) {
    return std::string(schedule_name(kind)) + " runs 1 chunk per rank (v=" + n(v) +
           "); only interleaved 1F1B splits a rank into chunks";
  }
  return std::nullopt;
}

// Interleaved with v == 1 is accepted here (it is plain 1F1B order) although
// schedule_rule_violation() rejects it as a strategy choice.
PipelineSchedule make_schedule(ScheduleKind kind, int p, int m, int v, const StageDurations* d) {
  SS_ASSERT(p >= 1 && m >= 1 && v >= 1, "make_schedule needs p, m, v >= 1");
  SS_ASSERT(kind == ScheduleKind::kInterleaved1F1B || kind == ScheduleKind::kDualPipe ||
                kind == ScheduleKind::kZeroBubbleV || v == 1,
            "only interleaved 1F1B, DualPipe and ZB-V have more than one chunk per rank");
  SS_ASSERT(kind != ScheduleKind::kZeroBubbleV || v == 2, "ZB-V has two chunks per rank");
  SS_ASSERT(kind != ScheduleKind::kDualPipe || v == 2, "DualPipe has one chunk per direction");
  switch (kind) {
    case ScheduleKind::kGPipe:
      return schedule_gpipe(p, m);
    case ScheduleKind::k1F1B:
      return schedule_1f1b(p, m);
    case ScheduleKind::kInterleaved1F1B:
      return schedule_interleaved(p, m, v);
    case ScheduleKind::kPipeDreamAsync:
      return schedule_pipedream_async(p, m);
    case ScheduleKind::kZeroBubbleH1:
      return schedule_zb_h1(p, m);
    case ScheduleKind::kZeroBubbleH2:
      return schedule_zb_h2(p, m);
    case ScheduleKind::kDualPipe:  // m in all, half per direction
      SS_ASSERT(m % 2 == 0, "DualPipe splits the micro-batches evenly over its directions");
      return schedule_dualpipe(p, m / 2);
    case ScheduleKind::kZeroBubbleV:
      return schedule_zb_v(p, m, d);
  }
  SS_ASSERT(false, "unknown schedule kind");
  return schedule_1f1b(p, m);
}

}  // namespace stratasim
