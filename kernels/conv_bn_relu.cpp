#include "kernels/conv_bn_relu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

void check(std::span<const float> x, std::span<const float> w, std::span<const float> y,
           ConvShape s) {
  SS_ASSERT(s.n >= 0 && s.c > 0 && s.k >= 0 && s.h > 0 && s.w > 0, "conv shape must be positive");
  SS_ASSERT(x.size() == std::size_t(s.n) * s.c * s.h * s.w, "x must hold n*c*h*w floats");
  SS_ASSERT(w.size() == std::size_t(s.k) * s.c * 9, "w must hold k*c*3*3 floats");
  SS_ASSERT(y.size() == std::size_t(s.n) * s.k * s.h * s.w, "y must hold n*k*h*w floats");
}

void check_bn(const BatchNorm& bn, ConvShape s) {
  const std::size_t k = s.k;
  SS_ASSERT(
      bn.gamma.size() == k && bn.beta.size() == k && bn.mean.size() == k && bn.var.size() == k,
      "batch-norm parameters must hold k floats each");
}

// Batch norm folded to y*scale + shift; the same two floats serve the fused and unfused forms.
struct Affine {
  float scale, shift;
};
Affine bn_affine(const BatchNorm& bn, int k) {
  const float scale = bn.gamma[k] / std::sqrt(bn.var[k] + bn.eps);
  return {scale, bn.beta[k] - bn.mean[k] * scale};
}

// One output row y[n, k, r, :] = sum over c and the 3x3 taps; the column loop is clipped to the
// taps' valid range so it has no branches and vectorizes.
void conv_row(const float* x, const float* w, float* __restrict out, ConvShape s, int n, int k,
              int r) {
  std::fill_n(out, s.w, 0.0f);
  for (int c = 0; c < s.c; ++c) {
    const float* wk = w + (std::size_t(k) * s.c + c) * 9;
    for (int dr = -1; dr <= 1; ++dr) {
      const int rr = r + dr;
      if (rr < 0 || rr >= s.h) continue;
      const float* __restrict xrow = x + ((std::size_t(n) * s.c + c) * s.h + rr) * s.w;
      for (int dc = -1; dc <= 1; ++dc) {
        const float wv = wk[(dr + 1) * 3 + (dc + 1)];
        const int lo = std::max(0, -dc), hi = std::min(s.w, s.w - dc);
        for (int col = lo; col < hi; ++col) out[col] += wv * xrow[col + dc];
      }
    }
  }
}

}  // namespace

void conv3x3(std::span<const float> x, std::span<const float> w, std::span<float> y, ConvShape s) {
  check(x, w, y, s);
#pragma omp parallel for collapse(3) schedule(static)
  for (int n = 0; n < s.n; ++n) {
    for (int k = 0; k < s.k; ++k) {
      for (int r = 0; r < s.h; ++r) {
        conv_row(x.data(), w.data(), y.data() + ((std::size_t(n) * s.k + k) * s.h + r) * s.w, s, n,
                 k, r);
      }
    }
  }
}

void batchnorm_inplace(std::span<float> y, const BatchNorm& bn, ConvShape s) {
  check_bn(bn, s);
  const std::size_t plane = std::size_t(s.h) * s.w;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < s.n; ++n) {
    for (int k = 0; k < s.k; ++k) {
      const Affine a = bn_affine(bn, k);
      float* __restrict p = y.data() + (std::size_t(n) * s.k + k) * plane;
      for (std::size_t e = 0; e < plane; ++e) p[e] = p[e] * a.scale + a.shift;
    }
  }
}

void relu_inplace(std::span<float> y) {
  float* yp = y.data();
  const std::int64_t n = std::int64_t(y.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < n; ++e) yp[e] = std::max(yp[e], 0.0f);
}

void conv_bn_relu_fused(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                        std::span<float> y, ConvShape s) {
  check(x, w, y, s);
  check_bn(bn, s);
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < s.n; ++n) {
    for (int k = 0; k < s.k; ++k) {
      const Affine a = bn_affine(bn, k);
      for (int r = 0; r < s.h; ++r) {
        float* __restrict out = y.data() + ((std::size_t(n) * s.k + k) * s.h + r) * s.w;
        conv_row(x.data(), w.data(), out, s, n, k, r);
        for (int col = 0; col < s.w; ++col) out[col] = std::max(out[col] * a.scale + a.shift, 0.0f);
      }
    }
  }
}

void conv_bn_relu_unfused(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                          std::span<float> y, ConvShape s) {
  conv3x3(x, w, y, s);
  batchnorm_inplace(y, bn, s);
  relu_inplace(y);
}

void conv_bn_relu_reference(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                            std::span<float> y, ConvShape s) {
  check(x, w, y, s);
  check_bn(bn, s);
  for (int n = 0; n < s.n; ++n) {
    for (int k = 0; k < s.k; ++k) {
      const double scale = double(bn.gamma[k]) / std::sqrt(double(bn.var[k]) + double(bn.eps));
      for (int r = 0; r < s.h; ++r) {
        for (int col = 0; col < s.w; ++col) {
          double acc = 0.0;
          for (int c = 0; c < s.c; ++c) {
            for (int dr = -1; dr <= 1; ++dr) {
              for (int dc = -1; dc <= 1; ++dc) {
                const int rr = r + dr, cc = col + dc;
                if (rr < 0 || rr >= s.h || cc < 0 || cc >= s.w) continue;
                acc += double(w[(std::size_t(k) * s.c + c) * 9 + (dr + 1) * 3 + (dc + 1)]) *
                       double(x[((std::size_t(n) * s.c + c) * s.h + rr) * s.w + cc]);
              }
            }
          }
          const double v = (acc - double(bn.mean[k])) * scale + double(bn.beta[k]);
          y[((std::size_t(n) * s.k + k) * s.h + r) * s.w + col] = float(std::max(v, 0.0));
        }
      }
    }
  }
}

}  // namespace stratasim::kernels
