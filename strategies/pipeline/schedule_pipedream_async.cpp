// PipeDream asynchronous 1F1B (Narayanan et al. SOSP19) with weight stashing. The op order
// of one iteration is the 1F1B order; flush == false marks that the next iteration's forwards
// start while this one drains, so in steady state every rank alternates forward and backward
// without a bubble and rank r keeps p - r micro-batches in flight (see peak_in_flight and
// time_schedule, which model the steady state rather than a cold start).
#include "strategies/pipeline/schedules.h"

namespace stratasim {

PipelineSchedule schedule_pipedream_async(int p, int m) {
  PipelineSchedule s = schedule_1f1b(p, m);
  s.kind = ScheduleKind::kPipeDreamAsync;
  s.flush = false;
  return s;
}

}  // namespace stratasim
