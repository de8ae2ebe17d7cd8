#include "kernels/layernorm.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/elementwise.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

void check(std::span<const float> x, std::span<const float> residual, std::span<const float> gamma,
           std::span<const float> beta, std::span<const float> h, std::span<const float> y,
           LayerNormShape s) {
  const std::size_t n = std::size_t(s.rows) * s.cols;
  SS_ASSERT(s.rows >= 0 && s.cols > 0, "LayerNorm needs rows >= 0 and cols > 0");
  SS_ASSERT(x.size() == n && residual.size() == n && h.size() == n && y.size() == n,
            "x, residual, h and y must hold rows*cols floats");
  SS_ASSERT(gamma.size() == std::size_t(s.cols) && beta.size() == std::size_t(s.cols),
            "gamma and beta must hold cols floats");
}

// Normalizes one row of h into y: mean, then the sum of squared deviations (two passes over a
// row that is in L1, numerically safer than E[h^2] - E[h]^2).
STRATASIM_KERNEL_CLONES
void normalize_row(const float* __restrict h, const float* __restrict gamma,
                   const float* __restrict beta, float* __restrict y, int cols, float eps) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < cols; ++j) sum += h[j];
  const float mean = sum / float(cols);
  float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
  for (int j = 0; j < cols; ++j) sq += (h[j] - mean) * (h[j] - mean);
  const float rstd = 1.0f / std::sqrt(sq / float(cols) + eps);
  for (int j = 0; j < cols; ++j) y[j] = (h[j] - mean) * rstd * gamma[j] + beta[j];
}

// The fused form's row: h = x + residual, then normalized while in L1.
STRATASIM_KERNEL_CLONES
void add_normalize_row(const float* __restrict x, const float* __restrict r, float* __restrict h,
                       const float* __restrict gamma, const float* __restrict beta,
                       float* __restrict y, int cols, float eps) {
  for (int j = 0; j < cols; ++j) h[j] = x[j] + r[j];
  normalize_row(h, gamma, beta, y, cols, eps);
}

}  // namespace

void add_layernorm_fused(std::span<const float> x, std::span<const float> residual,
                         std::span<const float> gamma, std::span<const float> beta,
                         std::span<float> h, std::span<float> y, LayerNormShape s) {
  check(x, residual, gamma, beta, h, y, s);
  const float* __restrict xp = x.data();
  const float* __restrict rp = residual.data();
  float* __restrict hp = h.data();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.rows; ++i) {
    const std::size_t base = std::size_t(i) * s.cols;
    add_normalize_row(xp + base, rp + base, hp + base, gamma.data(), beta.data(),
                      y.data() + base, s.cols, s.eps);
  }
}

void add_layernorm_unfused(std::span<const float> x, std::span<const float> residual,
                           std::span<const float> gamma, std::span<const float> beta,
                           std::span<float> h, std::span<float> y, LayerNormShape s) {
  check(x, residual, gamma, beta, h, y, s);
  const float* __restrict xp = x.data();
  const float* __restrict rp = residual.data();
  float* __restrict hp = h.data();
  const std::int64_t n = std::int64_t(h.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; ++e) hp[e] = xp[e] + rp[e];  // pass 1: residual add
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.rows; ++i) {  // pass 2: LayerNorm reads h back from memory
    const std::size_t base = std::size_t(i) * s.cols;
    normalize_row(hp + base, gamma.data(), beta.data(), y.data() + base, s.cols, s.eps);
  }
}

void add_layernorm_reference(std::span<const float> x, std::span<const float> residual,
                             std::span<const float> gamma, std::span<const float> beta,
                             std::span<float> h, std::span<float> y, LayerNormShape s) {
  check(x, residual, gamma, beta, h, y, s);
  for (int i = 0; i < s.rows; ++i) {
    const std::size_t base = std::size_t(i) * s.cols;
    double mean = 0.0;
    for (int j = 0; j < s.cols; ++j) mean += double(x[base + j]) + double(residual[base + j]);
    mean /= s.cols;
    double var = 0.0;
    for (int j = 0; j < s.cols; ++j) {
      const double d = double(x[base + j]) + double(residual[base + j]) - mean;
      var += d * d;
    }
    var /= s.cols;
    const double rstd = 1.0 / std::sqrt(var + double(s.eps));
    for (int j = 0; j < s.cols; ++j) {
      const double hv = double(x[base + j]) + double(residual[base + j]);
      h[base + j] = float(hv);
      y[base + j] = float((hv - mean) * rstd * double(gamma[j]) + double(beta[j]));
    }
  }
}

}  // namespace stratasim::kernels
