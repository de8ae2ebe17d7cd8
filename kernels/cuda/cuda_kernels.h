// The CUDA versions of the kernels (issue 4), behind a plain C++ interface so that callers
// (calibrate, validate, tests) compile the same with or without the CUDA toolkit. Built with
// nvcc when CMake finds it (option STRATASIM_WITH_CUDA); otherwise this interface is
// implemented by cuda_unavailable.cpp, whose open_device() says the build has no CUDA.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/measurement.h"

namespace stratasim::kernels::cuda {

// True when this binary was built with the CUDA toolkit.
bool compiled_with_cuda();

// Number of usable CUDA devices; 0 when the build has no CUDA, there is no driver or no
// device. Never throws.
int device_count();

struct DeviceProperties {
  std::string name;
  int index = 0;
  int multiprocessors = 0;
  int compute_capability_major = 0, compute_capability_minor = 0;
  double memory_B = 0;
  double memory_bandwidth_Bps = 0;  // theoretical, from the memory clock and bus width
  double sm_clock_hz = 0;
};

// Checks that device `index` can be used. Throws InputError("command line", "--device",
// "cuda:<index>", rule) with the reason otherwise: the build has no CUDA, no driver, no
// device, or index out of range (naming how many devices there are).
DeviceProperties open_device(int index);

using Progress = std::function<void(std::string_view step)>;

// Microbenchmarks on device `index`: "copy" and "triad" over a range of sizes, "gemm_peak"
// per dtype (fp32, tf32, fp16, bf16) over a range of sizes, "launch" (an empty kernel: the
// launch overhead). Every Measurement counts work by the rules of kernels/measurement.h.
std::vector<Measurement> run_microbenchmarks(int index, bool quick, const Progress& progress);

// Every kernel family in its fused and unfused form on device `index`, after checking each
// fused result against the unfused one (throws std::runtime_error naming the family if they
// differ beyond the family's tolerance).
std::vector<Measurement> run_kernels(int index, bool quick, const Progress& progress);

}  // namespace stratasim::kernels::cuda
