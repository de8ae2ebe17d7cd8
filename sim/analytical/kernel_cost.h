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

// Wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide"): the m x n
// output is cut into tiles, one per SM at a time, so the last wave can leave SMs idle and edge
// tiles do wasted work. Fraction of the device doing useful work, best over the tile shapes.
double wave_efficiency(double m, double n, double batch, int compute_units);

// Roofline: compute at peak * efficiency(FLOP) * wave efficiency, memory at
// bandwidth * efficiency(bytes).
KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype);

}  // namespace stratasim
