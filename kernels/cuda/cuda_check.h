// Correctness of the CUDA kernels on small odd shapes (sizes 1, below and just above the warp
// width and the kernels' tiles): every family in both forms on device `index`, each compared
// with the double-precision CPU reference of kernels/ and with the other form, within the
// family's tolerance (kernels/cuda/cuda_tolerance.h, the bounds of tests/kernels/ worked for
// the GPU's arithmetic). Used by tests/kernels/test_cuda.cpp when a GPU is present.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"

namespace stratasim::kernels::cuda {

struct KernelCheck {
  std::string family, shape, output;  // output: which tensor ("y", "h", "c_out", ...)
  // Worst |error| / (abs_tol + rel_tol * |want|) over the tensor: <= 1 is within tolerance.
  double fused_vs_reference = 0, unfused_vs_reference = 0, fused_vs_unfused = 0;
};

// Throws InputError (like open_device) when device `index` cannot be used.
std::vector<KernelCheck> check_kernels(int index, const Progress& progress);

}  // namespace stratasim::kernels::cuda
