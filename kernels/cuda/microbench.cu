// Microbenchmarks on the GPU (what calibration fits a DeviceSpec to):
//   copy and triad (STREAM, McCalpin 1995; float4 accesses, bytes 8 and 12 per element, no
//     write-allocate traffic counted, as in kernels/stream.h);
//   gemm_peak: square GEMMs through cuBLAS per dtype: fp32 (FFMA), tf32 (fp32 data, tensor-core
//     math), fp16 and bf16 (16-bit data and output, fp32 accumulation). cuBLAS rather than our
//     own WMMA kernel because the peak is a property of the device: Hopper reaches its tensor
//     core peak only with wgmma/TMA pipelines that cuBLAS has and a hand-written WMMA kernel
//     would miss by 2-3x, which would then be calibrated in as the device's peak;
//   launch: one empty kernel (launch to completion), and 1000 back to back (the per-kernel
//     overhead of a stream of launches: Measurement::launches = 1000, seconds for all).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

__global__ void copy_kernel(const float4* a, float4* b, std::size_t n4) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4;
       i += std::size_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

__global__ void triad_kernel(float4* a, const float4* b, const float4* c, float q, std::size_t n4) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + q * y.x, x.y + q * y.y, x.z + q * y.z, x.w + q * y.w);
  }
}

__global__ void empty_kernel() {}

// cuBLAS is opened with dlopen at the first gemm_peak, not linked: libcublasLt is ~500 MB and
// linking it made every start of stratasim (which never touches a GPU for most commands) 20x
// slower (140 ms vs 6 ms for `stratasim presets`, measured here).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  // The C entry point (C++ also sees an overload taking cublasDataType_t).
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const void*, const void*, cudaDataType, int,
                                    const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

template <class F>
void load_symbol(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw std::runtime_error(std::string("cuBLAS: symbol ") + name + " not found");
}

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    const std::string so = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      throw std::runtime_error("gemm_peak needs cuBLAS, but " + so + " could not be loaded: " +
                               (why ? why : "unknown error"));
    }
    CublasApi a;
    load_symbol(lib, "cublasCreate_v2", a.create);
    load_symbol(lib, "cublasDestroy_v2", a.destroy);
    load_symbol(lib, "cublasGemmEx", a.gemm_ex);
    load_symbol(lib, "cublasGetStatusString", a.status_string);
    return a;  // the library stays loaded for the life of the process
  }();
  return api;
}

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": " +
                             cublas_api().status_string(st));
  }
}

class Cublas {
 public:
  Cublas() { check_cublas(cublas_api().create(&h_), "cublasCreate"); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas() { cublas_api().destroy(h_); }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

struct PeakCase {
  const char* dtype;
  cudaDataType_t data;
  cublasComputeType_t compute;
  double element_B;
};

template <class T>
Measurement time_gemm(const Cublas& blas, const PeakCase& pc, int n, const Timing& t) {
  const std::size_t nn = std::size_t(n) * n;
  const DeviceBuffer<T> a(nn), b(nn), c(nn);
  fill_uniform(a, 81), fill_uniform(b, 82);
  const float alpha = 1.0f, beta = 0.0f;
  const TimeStats ts = time_on_device(
      [&] {
        check_cublas(cublas_api().gemm_ex(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                                          a.get(), pc.data, n, b.get(), pc.data, n, &beta,
                                          c.get(), pc.data, n, pc.compute, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
      },
      t, "gemm_peak");
  Work w;
  w.matmul_flop = 2.0 * n * double(n) * n;
  w.bytes = pc.element_B * 3 * double(nn);  // A and B read, C written (beta = 0)
  return to_measurement("gemm_peak", "",
                        std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n), w,
                        ts, pc.dtype);
}

}  // namespace

std::vector<Measurement> bench_stream(std::size_t floats, double l2_B, const Timing& t) {
  const std::size_t n4 = (floats + 3) / 4, n = 4 * n4;
  const DeviceBuffer<float> a(n), b(n), c(n);
  fill_uniform(a, 91), fill_uniform(c, 92);
  const int grid = grid_for(n4, 256);
  const double array_B = kF32 * double(n);
  const std::string shape = std::to_string(n) + " floats" +
                            (array_B * 8 <= l2_B   ? " cache"
                             : array_B >= 2 * l2_B ? " dram"
                                                   : "");
  const auto* a4 = reinterpret_cast<float4*>(a.get());
  auto* b4 = reinterpret_cast<float4*>(b.get());
  const auto* c4 = reinterpret_cast<float4*>(c.get());
  std::vector<Measurement> out;
  Work copy;
  copy.bytes = kF32 * 2 * double(n);
  out.push_back(
      to_measurement("copy", "", shape, copy,
                     time_on_device([&] { copy_kernel<<<grid, 256>>>(a4, b4, n4); }, t, "copy")));
  Work triad;
  triad.bytes = kF32 * 3 * double(n);
  triad.vector_flop = 2 * double(n);
  auto* a4w = reinterpret_cast<float4*>(a.get());
  out.push_back(to_measurement(
      "triad", "", shape, triad,
      time_on_device([&] { triad_kernel<<<grid, 256>>>(a4w, b4, c4, 3.0f, n4); }, t, "triad")));
  return out;
}

std::vector<Measurement> bench_gemm_peak(int n, const Timing& t) {
  const Cublas blas;
  std::vector<Measurement> out;
  out.push_back(time_gemm<float>(blas, {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4}, n, t));
  out.push_back(
      time_gemm<float>(blas, {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4}, n, t));
  out.push_back(time_gemm<__half>(blas, {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2}, n, t));
  out.push_back(time_gemm<__nv_bfloat16>(blas, {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2}, n, t));
  return out;
}

std::vector<Measurement> bench_launch(const Timing& t) {
  std::vector<Measurement> out;
  Work one;
  out.push_back(to_measurement("launch", "", "1 empty kernel", one,
                               time_on_device([] { empty_kernel<<<1, 1>>>(); }, t, "launch")));
  constexpr int kBatch = 1000;
  Work batch;
  batch.launches = kBatch;
  out.push_back(to_measurement("launch", "", std::to_string(kBatch) + " empty kernels", batch,
                               time_on_device(
                                   [] {
                                     for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 1>>>();
                                   },
                                   t, "launch")));
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
