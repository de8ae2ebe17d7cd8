// The optimizer step at the end of a rank's iteration, on the device or offloaded to the host
// (Strategy::offload), costed once for both engines.
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

// The time alone of an op of the optimizer step (kOptimizerStep, or offload's gradient copy
// to the host, the CPU's step and the weight copy back; 0 for any other op):
//   kOptimizerStep      one pass over `bytes` of device memory (memory_pass_s)
//   kOffloadGradients,  bytes / (host_link bandwidth x efficiency) + latency: the device's
//   kUploadParameters   PCIe path, alone (devices sharing a PCIe switch are not modelled)
//   kHostOptimizerStep  one pass over `bytes` of host memory, whose bandwidth the node's devices
//                       share while they all step at once: bytes x n / host_memory_bandwidth
//                       with n = min(devices per node, devices of the job)
double optimizer_op_s(const IterOp& op, const Plan& plan);

}  // namespace stratasim
