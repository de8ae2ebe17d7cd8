#include "sim/cost/optimizer_cost.h"

#include <algorithm>

namespace stratasim {

double optimizer_op_s(const IterOp& op, const Plan& plan) {
  const HardwareModel& hw = plan.hardware;
  switch (op.kind) {
    case IterOpKind::kOptimizerStep:
    case IterOpKind::kFp8WeightCast: return memory_pass_s(hw.device, op.bytes);
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

double offload_copy_exposed_s(const IterOp& op, const Plan& plan, double last_backward_s,
                              double sync_after_backward_s) {
  const double total = optimizer_op_s(op, plan);
  if (!op.overlaps_last_backward) return total;
  const double b = std::max(1, op.repeats), t = total / b;
  const double sync = std::max(0.0, sync_after_backward_s);
  const double end = std::max({sync + t, t, b * t - last_backward_s * (b - 1) / b});
  return end - sync;
}

}  // namespace stratasim
