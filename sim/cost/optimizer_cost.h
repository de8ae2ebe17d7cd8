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

// The part of offload's gradient copy (kOffloadGradients) that lengthens the iteration after
// the rank's gradient reduction, which ended `sync_after_backward_s` after its last backward
// (of length `last_backward_s`). Without overlap (op.overlaps_last_backward false) the copy
// follows the reduction: all of it, T. With overlap (DeepSpeed overlap_comm) it runs in
// op.repeats = B buckets of t = T / B, bucket k ready at (k + 1) / B of the last backward (as
// the gradient buckets, step_timing.h) and back to back on the PCIe path, and the last bucket
// cannot go before the reduction is over:
//   end = max(sync_after_backward_s + t, t, B t - L (B - 1) / B)   after the last backward,
//   exposed = end - sync_after_backward_s.
double offload_copy_exposed_s(const IterOp& op, const Plan& plan, double last_backward_s,
                              double sync_after_backward_s);

}  // namespace stratasim
