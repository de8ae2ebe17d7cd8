// Internal to kernels/cuda (.cu files only): error checks, device buffers, event timing, the
// device-side elementwise pieces (the same formulas as kernels/elementwise.h) and helpers that
// turn a timing into a Measurement.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_families.h"
#include "kernels/cuda/cuda_tolerance.h"
#include "kernels/kernel_cases.h"
#include "kernels/measurement.h"

namespace stratasim::kernels::cuda::detail {

// A failed CUDA call after open_device() succeeded is a runtime failure, not an input error.
inline void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(err) +
                             " (" + cudaGetErrorString(err) + ")");
  }
}
inline void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    check_cuda(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) {
    check_cuda(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  void download(std::span<T> host) const {
    check_cuda(
        cudaMemcpy(host.data(), p_, std::min(n_, host.size()) * sizeof(T), cudaMemcpyDeviceToHost),
        "download");
  }
  std::vector<T> to_host() const {
    std::vector<T> v(n_);
    download(v);
    return v;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Blocks for a grid-stride loop over n elements: enough to fill any current GPU, few enough
// that each thread loops a little.
inline int grid_for(std::size_t n, int threads) {
  const std::size_t blocks = (n + threads - 1) / threads;
  return int(std::clamp<std::size_t>(blocks, 1, 65536));
}

__device__ __forceinline__ std::uint32_t hash32_d(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Values uniform in [lo, hi) from a hash of (seed, index): inputs filled on the device, so large
// benchmarks need no host data.
template <class T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint32_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t h = hash32_d(hash32_d(std::uint32_t(i) ^ seed) ^ std::uint32_t(i >> 32));
    p[i] = T(lo + (hi - lo) * float(h >> 8) * (1.0f / 16777216.0f));
  }
}
template <class T>
void fill_uniform(const DeviceBuffer<T>& b, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  fill_uniform_kernel<<<grid_for(b.size(), 256), 256>>>(b.get(), b.size(), seed, lo, hi);
  check_launch("fill_uniform");
}

// --- The elementwise formulas of kernels/elementwise.h, on the device (expf, erff: <= 2 ulp).
__device__ __forceinline__ float gelu_d(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float sigmoid_d(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float tanh_d(float x) { return 1.0f - 2.0f / (1.0f + expf(2.0f * x)); }
__device__ __forceinline__ std::uint64_t mix64_d(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// dropout_keep of elementwise.h with key = mix64(seed) computed once on the host.
__device__ __forceinline__ bool dropout_keep_d(std::uint64_t key, std::uint64_t index,
                                               std::uint32_t threshold) {
  const std::uint64_t run_key = mix64_d(key + (index >> 32));
  const std::uint32_t h = hash32_d(std::uint32_t(index) ^ std::uint32_t(run_key));
  return (h ^ std::uint32_t(run_key >> 32)) >= threshold;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

struct TimeStats {
  double median_s = 0, min_s = 0;
  int repeats = 0;
};

// Runs `launch` (which enqueues one form on the default stream) t.warmup times, then times
// t.repeats runs one by one with CUDA events.
template <class Launch>
TimeStats time_on_device(Launch&& launch, const Timing& t, const char* what) {
  for (int i = 0; i < t.warmup; ++i) launch();
  check_launch(what);
  check_cuda(cudaDeviceSynchronize(), what);
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < t.repeats; ++i) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    const cudaError_t err = cudaEventSynchronize(stop);
    float ms = 0;
    if (err == cudaSuccess) cudaEventElapsedTime(&ms, start, stop);
    if (err != cudaSuccess) {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      check_cuda(err, what);
    }
    times.push_back(double(ms) * 1e-3);  // ms -> s
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check_launch(what);
  std::sort(times.begin(), times.end());
  TimeStats s;
  s.repeats = int(times.size());
  if (!times.empty()) {
    const std::size_t n = times.size();
    s.median_s = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    s.min_s = times.front();
  }
  return s;
}

inline Measurement timed(Measurement m, const TimeStats& t) {
  m.seconds = t.median_s;
  m.min_seconds = t.min_s;
  m.repeats = t.repeats;
  return m;
}

// The work of one form of a kernel case by the CPU's rules (kernels/kernel_cases.h: the GPU
// forms make the same passes, so the same counts), with the shape text the CPU uses.
inline Measurement counted(KernelFamily family, std::array<int, 4> dims, Form f) {
  return kernel_work(KernelCase{family, dims}, f == Form::kFused);
}

// The work of a microbenchmark, by kernels/measurement.h's rules.
struct Work {
  double matmul_flop = 0, vector_flop = 0, bytes = 0;
  int launches = 1;
};

inline Measurement to_measurement(std::string family, std::string form, std::string shape,
                                  const Work& w, const TimeStats& t, std::string dtype = "fp32") {
  Measurement m;
  m.family = std::move(family);
  m.form = std::move(form);
  m.dtype = std::move(dtype);
  m.shape = std::move(shape);
  m.matmul_flop = w.matmul_flop;
  m.vector_flop = w.vector_flop;
  m.bytes = w.bytes;
  m.launches = w.launches;
  return timed(std::move(m), t);
}

// Before timing: the fused output must match the unfused one within the tolerance.
inline void require_forms_agree(const std::string& family, const std::string& shape,
                                const char* output, std::span<const float> fused,
                                std::span<const float> unfused, Tolerance tol) {
  const double r = worst_ratio(fused, unfused, tol);
  if (!(r <= 1.0)) {
    throw std::runtime_error("CUDA kernel " + family + " (" + shape + "): fused and unfused " +
                             output + " differ by " + std::to_string(r) + " times the tolerance");
  }
}

inline constexpr double kF32 = 4.0;  // bytes per fp32 element

}  // namespace stratasim::kernels::cuda::detail
