// Device management and the two entry points of cuda_kernels.h: which device, then every
// microbenchmark or kernel family at sizes that fill an A100/H100-class GPU (quick: smaller
// sizes, fewer repeats, for a smoke run).
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_util.cuh"
#include "sim/core/error.h"

namespace stratasim::kernels::cuda {

namespace {

__global__ void probe_kernel() {}

[[noreturn]] void device_error(int index, const std::string& rule) {
  throw InputError("command line", "--device", "cuda:" + std::to_string(index), rule);
}

int attribute(cudaDeviceAttr a, int index) {
  int v = 0;
  detail::check_cuda(cudaDeviceGetAttribute(&v, a, index), "cudaDeviceGetAttribute");
  return v;
}

void report(const Progress& progress, const std::string& step) {
  if (progress) progress(step);
}

void append(std::vector<Measurement>& all, std::vector<Measurement> more) {
  for (auto& m : more) all.push_back(std::move(m));
}

detail::Timing timing(bool quick) { return quick ? detail::Timing{1, 3} : detail::Timing{2, 10}; }

}  // namespace

bool compiled_with_cuda() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error, so later calls start clean
    return 0;
  }
  return n;
}

DeviceProperties open_device(int index) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    device_error(index,
                 std::string("cannot be used: no CUDA device: cudaGetDeviceCount returned ") +
                     cudaGetErrorString(err) + " (is the NVIDIA driver loaded?)");
  }
  if (n == 0) device_error(index, "cannot be used: no CUDA device: the driver reports none");
  if (index < 0 || index >= n) {
    device_error(index, "is out of range: this machine has " + std::to_string(n) +
                            " CUDA device(s), cuda:0 to cuda:" + std::to_string(n - 1));
  }
  detail::check_cuda(cudaSetDevice(index), "cudaSetDevice");
  cudaDeviceProp p{};
  detail::check_cuda(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, probe_kernel) != cudaSuccess) {  // no SASS/PTX for this GPU
    cudaGetLastError();
    device_error(index, "cannot be used: " + std::string(p.name) + " has compute capability " +
                            std::to_string(p.major) + "." + std::to_string(p.minor) +
                            ", for which this build has no kernels (rebuild with "
                            "CMAKE_CUDA_ARCHITECTURES including " +
                            std::to_string(p.major * 10 + p.minor) + ")");
  }
  DeviceProperties d;
  d.name = p.name;
  d.index = index;
  d.multiprocessors = p.multiProcessorCount;
  d.compute_capability_major = p.major;
  d.compute_capability_minor = p.minor;
  d.memory_B = double(p.totalGlobalMem);
  // Double data rate: two transfers per memory clock over the bus (clock in kHz, width in bits).
  d.memory_bandwidth_Bps = 2.0 * attribute(cudaDevAttrMemoryClockRate, index) * 1e3 *
                           attribute(cudaDevAttrGlobalMemoryBusWidth, index) / 8.0;
  d.sm_clock_hz = attribute(cudaDevAttrClockRate, index) * 1e3;  // kHz -> Hz
  return d;
}

std::vector<Measurement> run_microbenchmarks(int index, bool quick, const Progress& progress) {
  open_device(index);
  const detail::Timing t = timing(quick);
  std::vector<Measurement> all;
  const std::vector<int> log2_floats =
      quick ? std::vector<int>{20, 26} : std::vector<int>{16, 18, 20, 22, 24, 26, 27, 28};
  const double l2_B = attribute(cudaDevAttrL2CacheSize, index);
  for (int e : log2_floats) {
    report(progress, "copy/triad 2^" + std::to_string(e) + " floats");
    append(all, detail::bench_stream(std::size_t(1) << e, l2_B, t));
  }
  const std::vector<int> sizes =
      quick ? std::vector<int>{1024, 4096} : std::vector<int>{512, 1024, 2048, 4096, 8192};
  for (int n : sizes) {
    report(progress, "gemm_peak " + std::to_string(n) + "^3 fp32/tf32/fp16/bf16");
    append(all, detail::bench_gemm_peak(n, t));
  }
  report(progress, "launch");
  append(all, detail::bench_launch(t));
  return all;
}

std::vector<Measurement> run_kernels(int index, bool quick, const Progress& progress) {
  open_device(index);
  const detail::Timing t = timing(quick);
  std::vector<Measurement> all;
  const auto step = [&](const char* name, auto&& bench) {
    report(progress, name);
    append(all, bench());
  };
  // Full sizes: transformer layers of a GPT-3-like model (hidden 4096, sequence 2048), a ResNet
  // stage, an 8k image; each tensor tens to hundreds of MiB, far beyond the L2 cache.
  const int q = quick ? 4 : 1;  // quick: 4x smaller along one or two dimensions
  step("gemm_bias_gelu", [&] {
    return detail::bench_gemm_bias_gelu({4096 / q, 4096 / q, 4096 / q}, t);
  });
  step("bias_dropout_residual",
       [&] { return detail::bench_bias_dropout_residual(8192 / q, 8192 / q, t); });
  step("layernorm", [&] { return detail::bench_layernorm({16384 / q, 4096, 1e-5f}, t); });
  step("softmax", [&] { return detail::bench_softmax({32 / q, 2048 / q, 0.125f, true}, t); });
  step("attention", [&] { return detail::bench_attention({32 / q, 2048 / q, 64, true}, t); });
  step("conv_bn_relu", [&] {
    return detail::bench_conv_bn_relu({8 / (quick ? 8 : 1), 64, 64, 56, 56}, t);
  });
  step("image_pipeline", [&] { return detail::bench_image_pipeline({8192 / q, 8192 / q}, t); });
  step("lstm_cell", [&] { return detail::bench_lstm_cell({4096 / q, 4096}, t); });
  return all;
}

}  // namespace stratasim::kernels::cuda
