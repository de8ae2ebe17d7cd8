#include "kernels/layernorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/streaming_store.h"
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

// Row sums with kLanes independent partial sums: a single vector accumulator would serialize
// the loop on the add latency (3-4 cycles per vector on current cores, twice the cost of the
// loads). kLanes is 4 AVX-512 or 8 AVX2 registers. The partial sums are added pairwise in a
// fixed tree (vector adds, 6 levels; a sequential scalar sum of the 64 would cost ~200 cycles a
// row), so every caller rounds the same way.
constexpr int kLanes = 64;

[[gnu::always_inline]] inline float add_lanes(float (&part)[kLanes], float tail) {
  static_assert(kLanes == 64, "the tree below has 6 levels");
  for (int k = 0; k < 32; ++k) part[k] += part[k + 32];
  for (int k = 0; k < 16; ++k) part[k] += part[k + 16];
  for (int k = 0; k < 8; ++k) part[k] += part[k + 8];
  for (int k = 0; k < 4; ++k) part[k] += part[k + 4];
  return ((part[0] + part[2]) + (part[1] + part[3])) + tail;
}

// sum of h[0..cols).
[[gnu::always_inline]] inline float row_sum(const float* __restrict h, int cols) {
  float part[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= cols; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) part[k] += h[j + k];
  }
  float tail = 0.0f;
  for (; j < cols; ++j) tail += h[j];
  return add_lanes(part, tail);
}

// h = x + r over the row, returning the row's sum (the same partial sums as row_sum).
[[gnu::always_inline]] inline float add_and_sum(const float* __restrict x,
                                                const float* __restrict r, float* __restrict h,
                                                int cols) {
  float part[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= cols; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      h[j + k] = x[j + k] + r[j + k];
      part[k] += h[j + k];
    }
  }
  float tail = 0.0f;
  for (; j < cols; ++j) {
    h[j] = x[j] + r[j];
    tail += h[j];
  }
  return add_lanes(part, tail);
}

// sum of (h - mean)^2 over the row.
[[gnu::always_inline]] inline float row_squared_deviations(const float* __restrict h, float mean,
                                                           int cols) {
  float part[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= cols; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) part[k] += (h[j + k] - mean) * (h[j + k] - mean);
  }
  float tail = 0.0f;
  for (; j < cols; ++j) tail += (h[j] - mean) * (h[j] - mean);
  return add_lanes(part, tail);
}

struct RowStats {
  float mean, rstd;
};

// The row's mean and 1/sqrt(var + eps), given its sum: the squared deviations from the mean
// take a second pass over a row that is in L1, numerically safer than E[h^2] - E[h]^2.
[[gnu::always_inline]] inline RowStats row_stats(const float* __restrict h, float sum, int cols,
                                                 float eps) {
  const float mean = sum / float(cols);
  const float sq = row_squared_deviations(h, mean, cols);
  return {mean, 1.0f / std::sqrt(sq / float(cols) + eps)};
}

// y = (h - mean) * rstd * gamma + beta over n entries.
[[gnu::always_inline]] inline void normalize(const float* __restrict h, RowStats st,
                                             const float* __restrict gamma,
                                             const float* __restrict beta, float* __restrict y,
                                             int n) {
  for (int j = 0; j < n; ++j) y[j] = (h[j] - st.mean) * st.rstd * gamma[j] + beta[j];
}

// The unfused form's LayerNorm of one row of h, read back from memory.
STRATASIM_KERNEL_CLONES
void normalize_row(const float* __restrict h, const float* __restrict gamma,
                   const float* __restrict beta, float* __restrict y, int cols, float eps) {
  normalize(h, row_stats(h, row_sum(h, cols), cols, eps), gamma, beta, y, cols);
}

// The fused form's row: h = x + residual, summed as it is written, then normalized while in L1.
STRATASIM_KERNEL_CLONES
void add_normalize_row(const float* __restrict x, const float* __restrict r, float* __restrict h,
                       const float* __restrict gamma, const float* __restrict beta,
                       float* __restrict y, int cols, float eps) {
  const float sum = add_and_sum(x, r, h, cols);
  normalize(h, row_stats(h, sum, cols, eps), gamma, beta, y, cols);
}

// add_normalize_row for outputs larger than the caches: h is built in the L1 row h_row, and y
// tile by tile in y_tile (tiles cut on y_out's lines); after each tile of y is streamed out,
// h_row is streamed out up to the same column, rounded down to a line of h_out, so that h and
// y leave in step even when the two outputs are aligned differently. Same arithmetic as
// add_normalize_row. While a row is normalized and stored, nothing demands its inputs, so the
// hardware prefetchers stall; each tile therefore prefetches the same columns of the next
// row's x and residual (next_x, next_r; null on the last row) into L2. Measured on a Zen 4 VM,
// 1 GiB, 2 threads: 29-32 GB/s without, 33-39 GB/s with (prefetching into L1 instead: 32-37).
STRATASIM_KERNEL_CLONES
void add_normalize_row_streamed(const float* __restrict x, const float* __restrict r,
                                const float* next_x, const float* next_r, float* __restrict h_row,
                                float* __restrict y_tile, const float* __restrict gamma,
                                const float* __restrict beta, float* h_out, float* y_out, int cols,
                                float eps) {
  const float sum = add_and_sum(x, r, h_row, cols);
  const RowStats st = row_stats(h_row, sum, cols, eps);
  const std::size_t n = std::size_t(cols);
  std::size_t h_done = 0;
  for (std::size_t j0 = 0, j1; j0 < n; j0 = j1) {
    j1 = stream_tile_end(y_out, j0, n);
    if (next_x != nullptr) {
      prefetch_to_l2(next_x + j0, j1 - j0);
      prefetch_to_l2(next_r + j0, j1 - j0);
    }
    normalize(h_row + j0, st, gamma + j0, beta + j0, y_tile, int(j1 - j0));
    stream_floats(y_out + j0, y_tile, j1 - j0);
    const std::size_t h_end = j1 == n ? n : line_start_at_or_before(h_out, j1);
    if (h_end > h_done) {
      stream_floats(h_out + h_done, h_row + h_done, h_end - h_done);
      h_done = h_end;
    }
  }
}

// The unfused form's LayerNorm of one row of h (read from memory) for outputs larger than the
// caches: y tile by tile into y_tile, streamed out to y_out, prefetching next_h (the next row
// of h; null on the last row) into L2 as the fused form does with its inputs.
STRATASIM_KERNEL_CLONES
void normalize_row_streamed(const float* __restrict h, const float* next_h,
                            float* __restrict y_tile, const float* __restrict gamma,
                            const float* __restrict beta, float* y_out, int cols, float eps) {
  const RowStats st = row_stats(h, row_sum(h, cols), cols, eps);
  const std::size_t n = std::size_t(cols);
  for (std::size_t j0 = 0, j1; j0 < n; j0 = j1) {
    j1 = stream_tile_end(y_out, j0, n);
    if (next_h != nullptr) prefetch_to_l2(next_h + j0, j1 - j0);
    normalize(h + j0, st, gamma + j0, beta + j0, y_tile, int(j1 - j0));
    stream_floats(y_out + j0, y_tile, j1 - j0);
  }
}

// h[j] = x[j] + r[j] (the unfused form's first pass).
STRATASIM_KERNEL_CLONES
void add_row(const float* __restrict x, const float* __restrict r, float* __restrict h, int n) {
  for (int j = 0; j < n; ++j) h[j] = x[j] + r[j];
}

// The fused pass for outputs larger than the caches: h and y of a row are computed into L1
// scratch rows and copied out with non-temporal stores (streaming_store.h), so neither is read
// from memory before it is written.
void add_layernorm_streamed(const float* __restrict xp, const float* __restrict rp,
                            const float* __restrict gamma, const float* __restrict beta,
                            float* __restrict hp, float* __restrict yp, LayerNormShape s) {
  const std::size_t cols = std::size_t(s.cols);
#pragma omp parallel
  {
    std::vector<float> h_row(cols);
    alignas(64) float y_tile[kStreamTileFloats];
#pragma omp for schedule(static) nowait
    for (int i = 0; i < s.rows; ++i) {
      const std::size_t base = std::size_t(i) * cols;
      const bool last = i + 1 == s.rows;
      add_normalize_row_streamed(xp + base, rp + base, last ? nullptr : xp + base + cols,
                                 last ? nullptr : rp + base + cols, h_row.data(), y_tile, gamma,
                                 beta, hp + base, yp + base, s.cols, s.eps);
    }
    streaming_store_fence();
  }
}

// The unfused form with the fused form's store policy: pass 1 streams h out, pass 2 reads h
// back and streams y out (the two forms then differ by fusion only).
void add_layernorm_unfused_streamed(const float* xp, const float* rp, const float* gamma,
                                    const float* beta, float* hp, float* yp, LayerNormShape s) {
  const std::size_t cols = std::size_t(s.cols);
#pragma omp parallel
  {
    alignas(64) float tile[kStreamTileFloats];
#pragma omp for schedule(static) nowait
    for (int i = 0; i < s.rows; ++i) {  // pass 1: residual add
      const std::size_t base = std::size_t(i) * cols;
      stream_row(hp + base, cols, tile, [&](std::size_t j0, std::size_t n, float* t) {
        add_row(xp + base + j0, rp + base + j0, t, int(n));
      });
    }
    streaming_store_fence();  // h is complete and visible before any thread reads it back
#pragma omp barrier
#pragma omp for schedule(static) nowait
    for (int i = 0; i < s.rows; ++i) {  // pass 2: LayerNorm reads h back from memory
      const std::size_t base = std::size_t(i) * cols;
      const float* next_h = i + 1 == s.rows ? nullptr : hp + base + cols;
      normalize_row_streamed(hp + base, next_h, tile, gamma, beta, yp + base, s.cols, s.eps);
    }
    streaming_store_fence();
  }
}

}  // namespace

void add_layernorm_fused(std::span<const float> x, std::span<const float> residual,
                         std::span<const float> gamma, std::span<const float> beta,
                         std::span<float> h, std::span<float> y, LayerNormShape s, StoreMode mode) {
  check(x, residual, gamma, beta, h, y, s);
  if (use_streaming_stores(mode, h.size_bytes() + y.size_bytes())) {
    add_layernorm_streamed(x.data(), residual.data(), gamma.data(), beta.data(), h.data(), y.data(),
                           s);
    return;
  }
  const float* __restrict xp = x.data();
  const float* __restrict rp = residual.data();
  float* __restrict hp = h.data();
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.rows; ++i) {
    const std::size_t base = std::size_t(i) * s.cols;
    add_normalize_row(xp + base, rp + base, hp + base, gamma.data(), beta.data(), y.data() + base,
                      s.cols, s.eps);
  }
}

void add_layernorm_unfused(std::span<const float> x, std::span<const float> residual,
                           std::span<const float> gamma, std::span<const float> beta,
                           std::span<float> h, std::span<float> y, LayerNormShape s,
                           StoreMode mode) {
  check(x, residual, gamma, beta, h, y, s);
  if (use_streaming_stores(mode, h.size_bytes() + y.size_bytes())) {
    add_layernorm_unfused_streamed(x.data(), residual.data(), gamma.data(), beta.data(), h.data(),
                                   y.data(), s);
    return;
  }
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
