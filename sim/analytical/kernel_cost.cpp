#include "sim/analytical/kernel_cost.h"

#include <algorithm>

namespace stratasim {

KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype) {
  KernelTime t;
  const double peak = d.peak_flops[static_cast<int>(dtype)];
  if (k.matmul_flops > 0) t.compute_s += k.matmul_flops / (peak * d.matmul.at(k.matmul_flops));
  if (k.other_flops > 0 && d.vector_flops > 0) t.compute_s += k.other_flops / d.vector_flops;
  if (k.bytes > 0) t.memory_s = k.bytes / (d.memory_bandwidth_Bps * d.memory.at(k.bytes));
  // A kernel whose input arrives fused from its predecessor adds no launch of its own.
  const double launches = k.reads_input_fused ? 0 : k.launches;
  t.total_s = std::max(t.compute_s, t.memory_s) + d.kernel_overhead_s * launches;
  return t;
}

}  // namespace stratasim
