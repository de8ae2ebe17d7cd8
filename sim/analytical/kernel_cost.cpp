#include "sim/analytical/kernel_cost.h"

#include <algorithm>
#include <cmath>

namespace stratasim {
namespace {

struct Tile {
  double m, n, relative_efficiency;
};

// Tensor-core GEMM tiles cuBLAS/CUTLASS choose between on NVIDIA GPUs (and their analogues on
// AMD). The smaller tile quantizes more finely but keeps less data per SM; 0.93 of the large
// tiles' per-SM throughput is a modelling estimate.
constexpr Tile kTiles[] = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.93}};

// Time of one GEMM launch of `flops` producing an m x n output `batch` times.
double gemm_s(double flops, double m, double n, double batch, const DeviceSpec& d, double peak) {
  return flops / (peak * d.matmul.at(flops) * wave_efficiency(m, n, batch, d.compute_units));
}

double matmul_s(const Kernel& k, const DeviceSpec& d, double peak) {
  if (k.gemm_m <= 0) return k.matmul_flops / (peak * d.matmul.at(k.matmul_flops / k.launches));
  if (k.phase != Phase::kBackward) {
    return gemm_s(k.matmul_flops, k.gemm_m, k.gemm_n, k.gemm_batch, d, peak);
  }
  // Backward of C = A B: dA = dC B^T (an m x k output) and dB = A^T dC (k x n), half each.
  const double half = k.matmul_flops / 2;
  return gemm_s(half, k.gemm_m, k.gemm_k, k.gemm_batch, d, peak) +
         gemm_s(half, k.gemm_k, k.gemm_n, k.gemm_batch, d, peak);
}

}  // namespace

double wave_efficiency(double m, double n, double batch, int compute_units) {
  if (compute_units <= 0 || m <= 0 || n <= 0) return 1.0;
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles = batch * std::ceil(m / t.m) * std::ceil(n / t.n);
    const double waves = std::ceil(tiles / compute_units);
    // Partial tiles at the matrix edge do wasted work too.
    const double useful = (batch * m * n) / (tiles * t.m * t.n);
    best = std::max(best, t.relative_efficiency * useful * tiles / (waves * compute_units));
  }
  return best;
}

KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype) {
  KernelTime t;
  const double peak = d.peak_flops[static_cast<int>(dtype)];
  if (k.matmul_flops > 0) t.compute_s += matmul_s(k, d, peak);
  if (k.other_flops > 0 && d.vector_flops > 0) t.compute_s += k.other_flops / d.vector_flops;
  if (k.bytes > 0) t.memory_s = k.bytes / (d.memory_bandwidth_Bps * d.memory.at(k.bytes));
  // A kernel whose input arrives fused from its predecessor adds no launch of its own.
  const double launches = k.reads_input_fused ? 0 : k.launches;
  t.total_s = std::max(t.compute_s, t.memory_s) + d.kernel_overhead_s * launches;
  return t;
}

}  // namespace stratasim
