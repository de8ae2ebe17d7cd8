#include "strategies/pipeline/pipeline_schedule.h"

namespace stratasim {

std::string_view schedule_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::kGPipe:
      return "gpipe";
    case ScheduleKind::k1F1B:
      return "1f1b";
    case ScheduleKind::kInterleaved1F1B:
      return "interleaved";
    case ScheduleKind::kPipeDreamAsync:
      return "pipedream_async";
    case ScheduleKind::kZeroBubbleH1:
      return "zb_h1";
    case ScheduleKind::kZeroBubbleH2:
      return "zb_h2";
    case ScheduleKind::kDualPipe:
      return "dualpipe";
    case ScheduleKind::kZeroBubbleV:
      return "zb_v";
  }
  return "unknown";
}

}  // namespace stratasim
