#include "kernels/bias_dropout_residual.h"

#include <cstddef>
#include <cstdint>

namespace stratasim::kernels {
namespace {

void check(std::span<const float> x, std::span<const float> bias, std::span<const float> residual,
           std::span<const float> out, int rows, int cols) {
  const std::size_t n = std::size_t(rows) * cols;
  SS_ASSERT(rows >= 0 && cols >= 0, "rows and cols must be non-negative");
  SS_ASSERT(x.size() == n && residual.size() == n && out.size() == n,
            "x, residual and out must hold rows*cols floats");
  SS_ASSERT(bias.size() == std::size_t(cols), "bias must hold cols floats");
}

}  // namespace

void bias_dropout_residual_fused(std::span<const float> x, std::span<const float> bias,
                                 std::span<const float> residual, std::span<float> out, int rows,
                                 int cols, DropoutParams d) {
  check(x, bias, residual, out, rows, cols);
  const std::uint32_t threshold = d.threshold();
  const float scale = d.scale();
  const float* __restrict xp = x.data();
  const float* __restrict bp = bias.data();
  const float* __restrict rp = residual.data();
  float* __restrict op = out.data();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const std::size_t base = std::size_t(i) * cols;
    for (int j = 0; j < cols; ++j) {
      const float kept = dropout_keep(d.seed, base + j, threshold) ? scale : 0.0f;
      op[base + j] = rp[base + j] + (xp[base + j] + bp[j]) * kept;
    }
  }
}

void bias_dropout_residual_unfused(std::span<const float> x, std::span<const float> bias,
                                   std::span<const float> residual, std::span<float> out, int rows,
                                   int cols, DropoutParams d) {
  check(x, bias, residual, out, rows, cols);
  const std::uint32_t threshold = d.threshold();
  const float scale = d.scale();
  const float* __restrict xp = x.data();
  const float* __restrict bp = bias.data();
  const float* __restrict rp = residual.data();
  float* __restrict op = out.data();
  const std::int64_t n = std::int64_t(out.size());
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {  // pass 1: bias
    const std::size_t base = std::size_t(i) * cols;
    for (int j = 0; j < cols; ++j) op[base + j] = xp[base + j] + bp[j];
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; ++e) {  // pass 2: dropout
    op[e] = op[e] * (dropout_keep(d.seed, std::uint64_t(e), threshold) ? scale : 0.0f);
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; ++e) op[e] = rp[e] + op[e];  // pass 3: residual
}

void bias_dropout_residual_reference(std::span<const float> x, std::span<const float> bias,
                                     std::span<const float> residual, std::span<float> out,
                                     int rows, int cols, DropoutParams d) {
  check(x, bias, residual, out, rows, cols);
  const std::uint32_t threshold = d.threshold();
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const std::size_t e = std::size_t(i) * cols + j;
      const bool keep = dropout_keep(d.seed, e, threshold);
      const double v = keep ? (double(x[e]) + double(bias[j])) / (1.0 - double(d.p)) : 0.0;
      out[e] = float(double(residual[e]) + v);
    }
  }
}

}  // namespace stratasim::kernels
