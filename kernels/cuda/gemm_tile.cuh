// Internal to kernels/cuda: the shared-memory tiled fp32 GEMM used by the GEMM family and by the
// unfused attention (Q K^T and P V). Row-major, batched over blockIdx.z:
//   C[m x n] = epilogue(A[m x k] * op(B)),  op(B) = B [k x n] or, with kTransB, B^T (B is n x k).
// A 256-thread block computes a 128 x 128 tile of C in steps of 8 along k: both operand tiles
// are staged in shared memory and each thread accumulates an 8 x 8 micro-tile in registers
// (rows ty + 16i, columns tx + 16j, so shared-memory reads are broadcasts or consecutive and the
// stores of C coalesce). Out-of-range rows/columns load zeros and are not stored, so any shape
// works. k is summed in order 0..k-1 for every element (one fma per step).
#pragma once

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

enum class Epilogue { kNone, kBiasGelu };

struct GemmArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;  // n floats, kBiasGelu only
  float* c = nullptr;
  int m = 0, n = 0, k = 0;
  long long batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;  // floats
};

inline constexpr int kTileM = 128, kTileN = 128, kTileK = 8, kGemmThreads = 256;

template <Epilogue E, bool kTransB>
__global__ void __launch_bounds__(kGemmThreads) gemm_tiled(GemmArgs g) {
  __shared__ float as[kTileK][kTileM + 4];  // A tile, transposed (k-major); +4: no bank clash
  __shared__ float bs[kTileK][kTileN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
  const float* a = g.a + blockIdx.z * g.batch_stride_a;
  const float* b = g.b + blockIdx.z * g.batch_stride_b;
  float* c = g.c + blockIdx.z * g.batch_stride_c;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < g.k; k0 += kTileK) {
#pragma unroll
    for (int i = 0; i < kTileM * kTileK / kGemmThreads; ++i) {
      const int e = tid + i * kGemmThreads;
      const int r = e / kTileK, kk = e % kTileK;
      const int gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < g.m && gk < g.k) ? a[(long long)gr * g.k + gk] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kTileN * kTileK / kGemmThreads; ++i) {
      const int e = tid + i * kGemmThreads;
      int kk, col;
      if constexpr (kTransB) {
        kk = e % kTileK, col = e / kTileK;  // consecutive threads read along a row of B (n x k)
      } else {
        kk = e / kTileN, col = e % kTileN;
      }
      const int gk = k0 + kk, gc = col0 + col;
      float v = 0.0f;
      if (gk < g.k && gc < g.n)
        v = kTransB ? b[(long long)gc * g.k + gk] : b[(long long)gk * g.n + gc];
      bs[kk][col] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float av[8], bv[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 8; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = row0 + ty + 16 * i;
    if (row >= g.m) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col >= g.n) continue;
      float v = acc[i][j];
      if constexpr (E == Epilogue::kBiasGelu) v = gelu_d(v + g.bias[col]);
      c[(long long)row * g.n + col] = v;
    }
  }
}

template <Epilogue E, bool kTransB>
void launch_gemm(const GemmArgs& g, int batch) {
  const dim3 grid((g.n + kTileN - 1) / kTileN, (g.m + kTileM - 1) / kTileM, batch);
  gemm_tiled<E, kTransB><<<grid, kGemmThreads>>>(g);
}

}  // namespace stratasim::kernels::cuda::detail
