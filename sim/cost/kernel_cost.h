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
  // The same work at the device's plateau rates (each curve's max_fraction, no wave tail, no
  // launch overhead): how long the kernel keeps the whole device busy. plateau_s / total_s is
  // the share of the device it occupies, what a concurrent stream cannot use
  // (concurrent_kernels.h).
  double plateau_s = 0;
  double cast_s = 0;  // of total_s, the FP8 casts of its operands (their kernels and launches)
};

// Wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide"): the m x n
// output is cut into tiles, one per SM at a time, so the last wave can leave SMs idle and edge
// tiles do wasted work. Fraction of the device doing useful work, best over the tile shapes.
double wave_efficiency(double m, double n, double batch, int compute_units);

// Roofline: a GEMM's compute is its FLOP at peak * plateau * wave efficiency plus the size
// curve's fixed cost (half_size at peak * plateau) per launch, memory at
// bandwidth * efficiency(bytes). With dtype fp8, only linear-layer GEMMs (Kernel::fp8_eligible)
// run at the fp8 peak and efficiency, plus their cast kernels; everything else runs at the
// 16-bit storage dtype. Fused attention uses the device's curves of the `attention` kernel
// (FusionPlan::attention_kernel). Compute runs `compute_slowdown` times
// longer: the slowest device of the job (device_variability.h); memory traffic does not.
// `scaling` is the FP8 recipe (Strategy::fp8_scaling): its cast kernels and GEMM curve.
KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype,
                       AttentionKernel attention = AttentionKernel::kFlash2,
                       double compute_slowdown = 1.0,
                       Fp8Scaling scaling = Fp8Scaling::kTensorwise);

}  // namespace stratasim
