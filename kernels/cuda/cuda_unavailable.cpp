// kernels/cuda/cuda_kernels.h in a build without the CUDA toolkit (STRATASIM_WITH_CUDA=OFF or no
// nvcc at configure time): no devices, and every use of one says why.
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "sim/core/error.h"

namespace stratasim::kernels::cuda {

bool compiled_with_cuda() { return false; }

int device_count() { return 0; }

DeviceProperties open_device(int index) {
#ifdef STRATASIM_NVCC_WAS_FOUND
  const char* why = "(STRATASIM_WITH_CUDA=OFF: turned off at configure time)";
#else
  const char* why = "(STRATASIM_WITH_CUDA=OFF: no nvcc found at configure time)";
#endif
  throw InputError("command line", "--device", "cuda:" + std::to_string(index),
                   std::string("cannot be used: this stratasim was built without CUDA ") + why);
}

std::vector<Measurement> run_microbenchmarks(int index, bool, const Progress&) {
  open_device(index);  // throws
  return {};
}

std::vector<Measurement> run_kernels(int index, bool, const Progress&) {
  open_device(index);  // throws
  return {};
}

std::vector<KernelCheck> check_kernels(int index, const Progress&) {
  open_device(index);  // throws
  return {};
}

}  // namespace stratasim::kernels::cuda
