#include "kernels/gemm.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/elementwise.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

// Tile sizes: a kKc x kNc panel of B (256 KiB) stays in L2 while kMc rows of A stream past it.
constexpr int kMc = 64;
constexpr int kNc = 256;
constexpr int kKc = 256;

void check_shapes(std::span<const float> a, std::span<const float> b, std::span<const float> c,
                  GemmShape s) {
  SS_ASSERT(s.m >= 0 && s.n >= 0 && s.k >= 0, "GEMM dimensions must be non-negative");
  SS_ASSERT(a.size() == std::size_t(s.m) * s.k, "A must hold m*k floats");
  SS_ASSERT(b.size() == std::size_t(s.k) * s.n, "B must hold k*n floats");
  SS_ASSERT(c.size() == std::size_t(s.m) * s.n, "C must hold m*n floats");
}

// C[i0:i1, j0:j0+nb] += A[i0:i1, p0:p1] * B[p0:p1, j0:j0+nb], four rows of C per sweep of B so
// each B vector load feeds four multiply-adds; the j loop vectorizes.
void tile_update(const float* a, const float* b, float* c, GemmShape s, int i0, int i1, int j0,
                 int nb, int p0, int p1) {
  const std::size_t n = s.n, k = s.k;
  int i = i0;
  for (; i + 4 <= i1; i += 4) {
    float* __restrict c0 = c + i * n + j0;
    float* __restrict c1 = c0 + n;
    float* __restrict c2 = c1 + n;
    float* __restrict c3 = c2 + n;
    for (int p = p0; p < p1; ++p) {
      const float a0 = a[i * k + p], a1 = a[(i + 1) * k + p];
      const float a2 = a[(i + 2) * k + p], a3 = a[(i + 3) * k + p];
      const float* __restrict bp = b + p * n + j0;
      for (int j = 0; j < nb; ++j) {
        const float bv = bp[j];
        c0[j] += a0 * bv;
        c1[j] += a1 * bv;
        c2[j] += a2 * bv;
        c3[j] += a3 * bv;
      }
    }
  }
  for (; i < i1; ++i) {
    float* __restrict c0 = c + i * n + j0;
    for (int p = p0; p < p1; ++p) {
      const float a0 = a[i * k + p];
      const float* __restrict bp = b + p * n + j0;
      for (int j = 0; j < nb; ++j) c0[j] += a0 * bp[j];
    }
  }
}

template <bool kEpilogue>
void gemm_blocked(const float* a, const float* b, const float* bias, float* c, GemmShape s) {
  const int mblocks = (s.m + kMc - 1) / kMc;
  const int nblocks = (s.n + kNc - 1) / kNc;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int bi = 0; bi < mblocks; ++bi) {
    for (int bj = 0; bj < nblocks; ++bj) {
      const int i0 = bi * kMc, i1 = std::min(s.m, i0 + kMc);
      const int j0 = bj * kNc, nb = std::min(s.n - j0, kNc);
      for (int i = i0; i < i1; ++i) std::fill_n(c + std::size_t(i) * s.n + j0, nb, 0.0f);
      for (int p0 = 0; p0 < s.k; p0 += kKc) {
        tile_update(a, b, c, s, i0, i1, j0, nb, p0, std::min(s.k, p0 + kKc));
      }
      if constexpr (kEpilogue) {  // the tile is still in L1/L2: bias and GeLU cost no traffic
        for (int i = i0; i < i1; ++i) {
          float* row = c + std::size_t(i) * s.n + j0;
          for (int j = 0; j < nb; ++j) row[j] = gelu(row[j] + bias[j0 + j]);
        }
      }
    }
  }
}

}  // namespace

void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, GemmShape s) {
  check_shapes(a, b, c, s);
  gemm_blocked<false>(a.data(), b.data(), nullptr, c.data(), s);
}

void bias_add_rows(std::span<float> c, std::span<const float> bias, int rows, int cols) {
  SS_ASSERT(c.size() == std::size_t(rows) * cols && bias.size() == std::size_t(cols),
            "bias_add_rows: C must be rows*cols and bias cols");
  float* __restrict cp = c.data();
  const float* __restrict bp = bias.data();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    float* row = cp + std::size_t(i) * cols;
    for (int j = 0; j < cols; ++j) row[j] += bp[j];
  }
}

void gelu_inplace(std::span<float> x) {
  float* xp = x.data();
  const std::int64_t n = std::int64_t(x.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) xp[i] = gelu(xp[i]);
}

void gemm_bias_gelu_fused(std::span<const float> a, std::span<const float> b,
                          std::span<const float> bias, std::span<float> c, GemmShape s) {
  check_shapes(a, b, c, s);
  SS_ASSERT(bias.size() == std::size_t(s.n), "bias must hold n floats");
  gemm_blocked<true>(a.data(), b.data(), bias.data(), c.data(), s);
}

void gemm_bias_gelu_unfused(std::span<const float> a, std::span<const float> b,
                            std::span<const float> bias, std::span<float> c, GemmShape s) {
  gemm(a, b, c, s);
  bias_add_rows(c, bias, s.m, s.n);
  gelu_inplace(c);
}

void gemm_bias_gelu_reference(std::span<const float> a, std::span<const float> b,
                              std::span<const float> bias, std::span<float> c, GemmShape s) {
  check_shapes(a, b, c, s);
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      double acc = 0.0;
      for (int p = 0; p < s.k; ++p) {
        acc += double(a[std::size_t(i) * s.k + p]) * double(b[std::size_t(p) * s.n + j]);
      }
      const double x = acc + double(bias[j]);
      c[std::size_t(i) * s.n + j] = float(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    }
  }
}

}  // namespace stratasim::kernels
