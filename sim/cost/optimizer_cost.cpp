#include "sim/cost/optimizer_cost.h"

#include <algorithm>

namespace stratasim {

double optimizer_op_s(const IterOp& op, const Plan& plan) {
  const HardwareModel& hw = plan.hardware;
  switch (op.kind) {
    case IterOpKind::kOptimizerStep: return memory_pass_s(hw.device, op.bytes);
    case IterOpKind::kOffloadGradients:
    case IterOpKind::kUploadParameters: {
      const LinkSpec& l = hw.node.host_link;
      const double bandwidth = l.bandwidth_Bps * l.efficiency;
      return bandwidth > 0 ? op.bytes / bandwidth + l.latency_s : 0.0;
    }
    case IterOpKind::kHostOptimizerStep: {
      const double sharing = std::max(1, std::min(hw.node.devices, hw.num_devices));
      const double bandwidth = hw.node.host_memory_bandwidth_Bps;
      return bandwidth > 0 ? op.bytes * sharing / bandwidth : 0.0;
    }
    default: return 0;
  }
}

}  // namespace stratasim
