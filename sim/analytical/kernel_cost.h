// Time of one kernel on one device: a roofline (Williams et al. 2009) with the device's
// size-dependent efficiency, plus a fixed per-kernel overhead. Pure functions.
#pragma once

#include "hardware_models/src/hardware_model.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

struct KernelTime {
  double compute_s = 0;
  double memory_s = 0;
  double total_s = 0;  // max(compute, memory) + overhead * launches
};

// Roofline: compute at peak * efficiency(FLOP), memory at bandwidth * efficiency(bytes).
KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype);

}  // namespace stratasim
