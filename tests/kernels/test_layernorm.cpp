// Residual add + LayerNorm: one pass per row vs two passes vs double precision.
#include <cmath>

#include "kernels/layernorm.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("add_layernorm: fused equals unfused and the double reference on odd shapes") {
  for (int rows : {1, 3, 17}) {
    for (int cols : kOddSizes) {
      CAPTURE(rows);
      CAPTURE(cols);
      const std::size_t n = std::size_t(rows) * cols;
      const auto x = random_tensor(n, 21), r = random_tensor(n, 22);
      const auto gamma = random_tensor(cols, 23), beta = random_tensor(cols, 24);
      const LayerNormShape s{rows, cols, 1e-5f};
      std::vector<float> hf(n), yf(n), hu(n), yu(n), hr(n), yr(n);
      add_layernorm_fused(x, r, gamma, beta, hf, yf, s);
      add_layernorm_unfused(x, r, gamma, beta, hu, yu, s);
      add_layernorm_reference(x, r, gamma, beta, hr, yr, s);
      // Both forms call the same row normalization on the same h: equal to the last rounding.
      check_close(hf, hu, 0.0, 0.0, "h fused vs unfused");
      check_close(yf, yu, 1e-30, 4 * kUnitRoundoff, "y fused vs unfused");
      // h = x + r is one correctly rounded add of the double sum.
      check_close(hf, hr, 1e-30, kUnitRoundoff, "h fused vs reference");
      // y: the fp32 sums for mean and variance err by gamma_cols relative to sums of |h| <= 2
      // (Higham eq. 3.5), which propagates to (h - mean) * rstd with |normalized| <= sqrt(cols);
      // a few roundings more for the affine part: (cols + 16) u, times the magnitude 2.
      const double tol = (cols + 16) * kUnitRoundoff * 2 * std::sqrt(double(cols));
      check_close(yf, yr, tol, 0.0, "y fused vs reference");
    }
  }
}

TEST_CASE("add_layernorm: a hand-worked row") {
  // x + r = [1, 2, 3, 6]: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5,
  // y = (h - 3) / sqrt(3.5) = [-1.069045, -0.534522, 0, 1.603567] with gamma 1, beta 0.
  const std::vector<float> x = {0, 1, 2, 3}, r = {1, 1, 1, 3}, g = {1, 1, 1, 1}, b = {0, 0, 0, 0};
  std::vector<float> h(4), y(4);
  add_layernorm_fused(x, r, g, b, h, y, LayerNormShape{1, 4, 0.0f});
  CHECK(h == std::vector<float>{1, 2, 3, 6});
  CHECK(y[0] == doctest::Approx(-1.069045).epsilon(1e-6));
  CHECK(y[1] == doctest::Approx(-0.534522).epsilon(1e-6));
  CHECK(y[2] == doctest::Approx(0.0));
  CHECK(y[3] == doctest::Approx(1.603567).epsilon(1e-6));
}

TEST_CASE("add_layernorm: streamed stores give the bits of cached stores") {
  // Same arithmetic, other stores: bitwise equal outputs, also with h and y starting at
  // different offsets within a cache line (the streamed row cuts its tiles on y's lines and
  // catches h up on h's) and rows longer than a stream tile.
  for (int cols : {1, 17, 255, 257, 1000, 4099}) {
    for (std::size_t h_offset : {0, 3}) {
      for (std::size_t y_offset : {0, 1, 9}) {
        CAPTURE(cols);
        CAPTURE(h_offset);
        CAPTURE(y_offset);
        const int rows = 4;
        const std::size_t n = std::size_t(rows) * cols;
        const auto x = random_tensor(n, 41), r = random_tensor(n, 42);
        const auto gamma = random_tensor(cols, 43), beta = random_tensor(cols, 44);
        const LayerNormShape s{rows, cols, 1e-5f};
        for (const bool fused : {true, false}) {
          CAPTURE(fused);
          const auto run = fused ? add_layernorm_fused : add_layernorm_unfused;
          std::vector<float> hc(n), yc(n), hb(n + h_offset), yb(n + y_offset);
          const std::span<float> hs(hb.data() + h_offset, n), ys(yb.data() + y_offset, n);
          run(x, r, gamma, beta, hc, yc, s, StoreMode::cached);
          run(x, r, gamma, beta, hs, ys, s, StoreMode::streaming);
          check_close(hs, hc, 0.0, 0.0, "h streamed vs cached");
          check_close(ys, yc, 0.0, 0.0, "y streamed vs cached");
        }
      }
    }
  }
}

}  // namespace
}  // namespace stratasim::kernels
