// A device with round figures for hand-worked kernel times: 1000 TFLOP/s bf16, 1 TB/s, GEMMs at
// 0.8 of peak at every size, memory at full bandwidth, 1 us per launch.
#pragma once

#include "hardware_models/src/hardware_model.h"

namespace stratasim::testing {

inline DeviceSpec simple_device() {
  DeviceSpec d;
  d.peak_flops[static_cast<int>(DType::kBf16)] = 1000e12;
  d.memory_bandwidth_Bps = 1e12;
  d.matmul = {0.8, 0};
  d.memory = {1.0, 0};
  d.kernel_overhead_s = 1e-6;
  return d;
}

}  // namespace stratasim::testing
