#include "kernels/bias_dropout_residual.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/streaming_store.h"

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

// out[j] = residual[j] + keep(first + j) * (x[j] + bias[j]) * scale for one row.
STRATASIM_KERNEL_CLONES
void fused_row(const float* __restrict xp, const float* __restrict bp, const float* __restrict rp,
               float* __restrict op, int cols, std::uint64_t first, std::uint64_t seed,
               std::uint32_t threshold, float scale) {
  for (std::uint64_t j0 = 0; j0 < std::uint64_t(cols);) {
    const std::uint64_t n = dropout_run_length(first + j0, cols - j0);
    const DropoutRun d(seed, static_cast<std::uint32_t>((first + j0) >> 32));
    const auto lo0 = static_cast<std::uint32_t>(first + j0);
    const float* __restrict x = xp + j0;
    const float* __restrict b = bp + j0;
    const float* __restrict r = rp + j0;
    float* __restrict o = op + j0;
    for (std::uint32_t j = 0; j < std::uint32_t(n); ++j) {
      const float kept = d.keep(lo0 + j, threshold) ? scale : 0.0f;
      o[j] = r[j] + (x[j] + b[j]) * kept;
    }
    j0 += n;
  }
}

// op[e] *= keep(first + e) * scale for a stretch of the flat tensor.
STRATASIM_KERNEL_CLONES
void dropout_stretch(float* __restrict op, std::uint64_t count, std::uint64_t first,
                     std::uint64_t seed, std::uint32_t threshold, float scale) {
  for (std::uint64_t e0 = 0; e0 < count;) {
    const std::uint64_t n = dropout_run_length(first + e0, count - e0);
    const DropoutRun d(seed, static_cast<std::uint32_t>((first + e0) >> 32));
    const auto lo0 = static_cast<std::uint32_t>(first + e0);
    float* __restrict o = op + e0;
    for (std::uint32_t e = 0; e < std::uint32_t(n); ++e) {
      o[e] = o[e] * (d.keep(lo0 + e, threshold) ? scale : 0.0f);
    }
    e0 += n;
  }
}

constexpr std::int64_t kStretch = 1 << 14;  // elements per dropout call in the unfused pass

// out[j] = x[j] + bias[j] for one row (the unfused form's first pass).
STRATASIM_KERNEL_CLONES
void add_bias_row(const float* __restrict xp, const float* __restrict bp, float* __restrict op,
                  int cols) {
  for (int j = 0; j < cols; ++j) op[j] = xp[j] + bp[j];
}

// The fused pass for outputs larger than the caches: each row goes through an L1 tile that is
// copied out with non-temporal stores (streaming_store.h), so out is never read from memory.
void fused_streamed(const float* xp, const float* bp, const float* rp, float* op, int rows,
                    int cols, DropoutParams d) {
  const std::uint32_t threshold = d.threshold();
  const float scale = d.scale();
#pragma omp parallel
  {
    alignas(64) float tile[kStreamTileFloats];
#pragma omp for schedule(static) nowait
    for (int i = 0; i < rows; ++i) {
      const std::size_t base = std::size_t(i) * cols;
      stream_row(op + base, std::size_t(cols), tile, [&](std::size_t j0, std::size_t n, float* t) {
        fused_row(xp + base + j0, bp + j0, rp + base + j0, t, int(n), base + j0, d.seed, threshold,
                  scale);
      });
    }
    streaming_store_fence();
  }
}

// The unfused form's first pass, out = x + bias, with the same store policy as the fused form
// (streamed when out is larger than the caches), so that the two forms differ by fusion only.
void add_bias_pass(const float* xp, const float* bp, float* op, int rows, int cols, bool streamed) {
#pragma omp parallel
  {
    alignas(64) float tile[kStreamTileFloats];
#pragma omp for schedule(static) nowait
    for (int i = 0; i < rows; ++i) {
      const std::size_t base = std::size_t(i) * cols;
      if (!streamed) {
        add_bias_row(xp + base, bp, op + base, cols);
        continue;
      }
      stream_row(op + base, std::size_t(cols), tile, [&](std::size_t j0, std::size_t n, float* t) {
        add_bias_row(xp + base + j0, bp + j0, t, int(n));
      });
    }
    if (streamed) streaming_store_fence();
  }
}

}  // namespace

void bias_dropout_residual_fused(std::span<const float> x, std::span<const float> bias,
                                 std::span<const float> residual, std::span<float> out, int rows,
                                 int cols, DropoutParams d, StoreMode mode) {
  check(x, bias, residual, out, rows, cols);
  if (use_streaming_stores(mode, out.size_bytes())) {
    fused_streamed(x.data(), bias.data(), residual.data(), out.data(), rows, cols, d);
    return;
  }
  const std::uint32_t threshold = d.threshold();
  const float scale = d.scale();
  const float* __restrict xp = x.data();
  const float* __restrict bp = bias.data();
  const float* __restrict rp = residual.data();
  float* __restrict op = out.data();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; ++i) {
    const std::size_t base = std::size_t(i) * cols;
    fused_row(xp + base, bp, rp + base, op + base, cols, base, d.seed, threshold, scale);
  }
}

// Passes 2 and 3 read out back and write it in place: the lines are in cache when written, so
// a non-temporal store would save no read there.
void bias_dropout_residual_unfused(std::span<const float> x, std::span<const float> bias,
                                   std::span<const float> residual, std::span<float> out, int rows,
                                   int cols, DropoutParams d, StoreMode mode) {
  check(x, bias, residual, out, rows, cols);
  const std::uint32_t threshold = d.threshold();
  const float scale = d.scale();
  const float* __restrict rp = residual.data();
  float* __restrict op = out.data();
  const std::int64_t n = std::int64_t(out.size());
  add_bias_pass(x.data(), bias.data(), op, rows, cols,  // pass 1: bias
                use_streaming_stores(mode, out.size_bytes()));
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; e += kStretch) {  // pass 2: dropout
    dropout_stretch(op + e, std::uint64_t(std::min(kStretch, n - e)), std::uint64_t(e), d.seed,
                    threshold, scale);
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
