#include "kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/softmax_avx512.h"
#include "kernels/streaming_store.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void check(std::span<const float> x, std::span<const float> y, SoftmaxShape sh) {
  SS_ASSERT(sh.batch >= 0 && sh.s > 0, "softmax needs batch >= 0 and s > 0");
  const std::size_t n = std::size_t(sh.batch) * sh.s * sh.s;
  SS_ASSERT(x.size() == n && y.size() == n, "x and y must hold batch*s*s floats");
}

int valid_cols(SoftmaxShape sh, int row) { return sh.causal ? row + 1 : sh.s; }

}  // namespace

namespace {

// A row is processed in blocks of kLaneBlock lanes: the blocks wholly inside the valid entries
// run with no mask at all, then at most one block that straddles `valid` masks its lanes from
// `valid` on to -inf (exp_approx(-inf) = 0), so a causal row of any length needs no scalar
// remainder loop (which cost as much as the vector part on rows of a few hundred entries) and
// the unmasked blocks pay no per-lane compare and blend. Entries after that block are only
// written (zeros).
constexpr int kLaneBlock = 16;  // one AVX-512 vector of floats, two AVX2 ones

// x and y may be the same row (the unfused attention normalizes its scores in place): every
// loop reads x[j] before it writes y[j] at the same j only, and is marked omp simd, so it
// vectorizes without the __restrict such a call would violate.
STRATASIM_KERNEL_CLONES
void softmax_row_impl(const float* x, float* y, int cols, int valid, float scale) {
  const int full = valid / kLaneBlock * kLaneBlock;  // [0, full): unmasked blocks
  const int span = std::min(cols, full + (valid > full ? kLaneBlock : 0));  // + the straddler
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int j = 0; j < full; ++j) m = std::max(m, x[j] * scale);
  float tail_m = kNegInf;
#pragma omp simd reduction(max : tail_m)
  for (int j = full; j < span; ++j) tail_m = std::max(tail_m, j < valid ? x[j] * scale : kNegInf);
  m = std::max(m, tail_m);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < full; ++j) {
    y[j] = exp_approx(x[j] * scale - m);
    sum += y[j];
  }
  float tail_sum = 0.0f;
#pragma omp simd reduction(+ : tail_sum)
  for (int j = full; j < span; ++j) {
    const float v = x[j] * scale - m;
    y[j] = exp_approx(j < valid ? v : kNegInf);
    tail_sum += y[j];
  }
  const float inv = 1.0f / (sum + tail_sum);
#pragma omp simd
  for (int j = 0; j < span; ++j) y[j] *= inv;
  for (int j = span; j < cols; ++j) y[j] = 0.0f;
}

// The unfused form's exp pass over one row (pass 4), cloned like the fused row.
STRATASIM_KERNEL_CLONES
void exp_row(float* __restrict row, int s, float m) {
#pragma omp simd
  for (int j = 0; j < s; ++j) row[j] = exp_approx(row[j] - m);
}

}  // namespace

void softmax_row(const float* x, float* y, int cols, int valid, float scale, const float* next_x,
                 int next_valid) {
  if (avx512::available()) {
    avx512::softmax_row(x, y, cols, valid, scale, next_x, next_valid);
  } else {
    if (next_x != nullptr) prefetch_to_l2(next_x, std::size_t(next_valid));
    softmax_row_impl(x, y, cols, valid, scale);
  }
}

void scaled_masked_softmax_fused(std::span<const float> x, std::span<float> y, SoftmaxShape sh) {
  check(x, y, sh);
  const std::int64_t rows = std::int64_t(sh.batch) * sh.s;
  // One contiguous range of rows per thread, streamed in order (chunks dealt round-robin, which
  // would balance a causal mask over a single matrix, cut the DRAM rate by a third here).
  // Each row prefetches the valid entries of the next one into L2 while it computes: a causal
  // row reads a prefix of x's row, so the hardware prefetchers restart on every row (causal, 1
  // GiB, 2 threads: 22-23 GB/s without, 27.4-27.7 with the prefetches spread over the
  // exponential pass, 24-25 with them issued at the start of the row).
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::size_t base = std::size_t(r) * sh.s;
    const bool last = r + 1 == rows;
    softmax_row(x.data() + base, y.data() + base, sh.s, valid_cols(sh, int(r % sh.s)), sh.scale,
                last ? nullptr : x.data() + base + sh.s,
                last ? 0 : valid_cols(sh, int((r + 1) % sh.s)));
  }
}

void scaled_masked_softmax_unfused(std::span<const float> x, std::span<float> y, SoftmaxShape sh) {
  check(x, y, sh);
  const std::int64_t rows = std::int64_t(sh.batch) * sh.s, n = rows * sh.s;
  const int s = sh.s;
  const float* __restrict xp = x.data();
  float* __restrict yp = y.data();
  std::vector<float> row_stat(static_cast<std::size_t>(rows));
  float* __restrict stat = row_stat.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; ++e) yp[e] = xp[e] * sh.scale;  // pass 1: scale
  if (sh.causal) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {  // pass 2: mask
      float* row = yp + r * s;
      for (int j = int(r % s) + 1; j < s; ++j) row[j] = kNegInf;
    }
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {  // pass 3: row max
    float m = kNegInf;
    const float* row = yp + r * s;
#pragma omp simd reduction(max : m)
    for (int j = 0; j < s; ++j) m = std::max(m, row[j]);
    stat[r] = m;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {  // pass 4: exp(x - max); exp(-inf) = 0
    if (avx512::available()) {
      avx512::exp_row(yp + r * s, s, stat[r]);
    } else {
      exp_row(yp + r * s, s, stat[r]);
    }
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {  // pass 5: row sum
    float sum = 0.0f;
    const float* row = yp + r * s;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < s; ++j) sum += row[j];
    stat[r] = sum;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {  // pass 6: divide
    float* row = yp + r * s;
    const float inv = 1.0f / stat[r];
    for (int j = 0; j < s; ++j) row[j] *= inv;
  }
}

void scaled_masked_softmax_reference(std::span<const float> x, std::span<float> y,
                                     SoftmaxShape sh) {
  check(x, y, sh);
  const std::int64_t rows = std::int64_t(sh.batch) * sh.s;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::size_t base = std::size_t(r) * sh.s;
    const int valid = valid_cols(sh, int(r % sh.s));
    double m = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < valid; ++j) m = std::max(m, double(x[base + j]) * sh.scale);
    double sum = 0.0;
    for (int j = 0; j < valid; ++j) sum += std::exp(double(x[base + j]) * sh.scale - m);
    for (int j = 0; j < sh.s; ++j) {
      y[base + j] = j < valid ? float(std::exp(double(x[base + j]) * sh.scale - m) / sum) : 0.0f;
    }
  }
}

}  // namespace stratasim::kernels
