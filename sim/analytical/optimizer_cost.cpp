#include "sim/analytical/optimizer_cost.h"

namespace stratasim {

double rank_params(const Plan& plan, int rank) {
  double params = 0;
  for (const VirtualStage& st : plan.stages) {
    if (st.rank == rank) params += st.params;
  }
  return params;
}

double optimizer_step_s(const Plan& plan, int rank) {
  const double shard = plan.strategy.zero_stage >= 1 ? plan.dp : 1;
  const double update_bytes =
      rank_params(plan, rank) / shard *
      (2 * plan.optimizer_bytes_per_param + plan.grad_bytes_per_param + plan.weight_bytes_per_param);
  const DeviceSpec& d = plan.hardware.device;
  return update_bytes / (d.memory_bandwidth_Bps * d.memory.at(update_bytes)) + d.kernel_overhead_s;
}

}  // namespace stratasim
