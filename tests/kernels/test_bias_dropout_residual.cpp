// Bias + dropout + residual: the three forms drop the same elements and agree on the rest.
#include <cstddef>

#include "kernels/bias_dropout_residual.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("bias_dropout_residual: same mask and values in all three forms on odd shapes") {
  for (int rows : {1, 3, 33}) {
    for (int cols : kOddSizes) {
      CAPTURE(rows);
      CAPTURE(cols);
      const std::size_t n = std::size_t(rows) * cols;
      const auto x = random_tensor(n, 11), residual = random_tensor(n, 12);
      const auto bias = random_tensor(cols, 13);
      const DropoutParams d{0.25f, 42};
      std::vector<float> fused(n), unfused(n), ref(n);
      bias_dropout_residual_fused(x, bias, residual, fused, rows, cols, d);
      bias_dropout_residual_unfused(x, bias, residual, unfused, rows, cols, d);
      bias_dropout_residual_reference(x, bias, residual, ref, rows, cols, d);
      for (std::size_t e = 0; e < n; ++e) {  // a dropped element is exactly the residual
        const bool dropped = !dropout_keep(d.seed, e, d.threshold());
        CHECK((fused[e] == residual[e]) == (unfused[e] == residual[e]));
        if (dropped) CHECK(fused[e] == residual[e]);
      }
      // Same float operations in the same order, except that the fused form's (x + b) s + r may
      // contract into one FMA (v3/v4 clones) while the unfused passes round s (x + b) first:
      // the results may then differ by that rounding, up to half an ulp of values <= 3.7
      // (4 u), which cancellation against r can leave as a large relative error. Absolute:
      // both within 3 ulp of 4 (24 u) of the exact value, so within 48 u of each other.
      check_close(fused, unfused, 2 * 3 * 4 * 2 * kUnitRoundoff, 0.0, "fused vs unfused");
      // Three roundings (add, multiply, add) of values <= 1/(1-p) * 2 + 1 = 3.7: 3 ulp of 4.
      check_close(fused, ref, 3 * 4 * 2 * kUnitRoundoff, 0.0, "fused vs reference");
    }
  }
}

TEST_CASE("bias_dropout_residual: the mask drops close to p of the elements") {
  // 2^16 Bernoulli(0.25) draws: mean 16384, sd sqrt(n p (1-p)) = 110.9; 5 sd = 555.
  const int rows = 256, cols = 256;
  const std::size_t n = std::size_t(rows) * cols;
  const std::vector<float> x(n, 1.0f), residual(n, 0.0f), bias(cols, 0.0f);
  std::vector<float> out(n);
  bias_dropout_residual_fused(x, bias, residual, out, rows, cols, DropoutParams{0.25f, 7});
  std::size_t dropped = 0;
  for (float v : out) {
    if (v == 0.0f) {
      ++dropped;
    } else {
      CHECK(v == doctest::Approx(1.0 / 0.75).epsilon(1e-6));  // kept: scaled by 1/(1-p)
    }
  }
  CHECK(double(dropped) == doctest::Approx(16384.0).epsilon(555.0 / 16384.0));
  // Another seed, another mask.
  std::vector<float> other(n);
  bias_dropout_residual_fused(x, bias, residual, other, rows, cols, DropoutParams{0.25f, 8});
  CHECK(other != out);
}

TEST_CASE("bias_dropout_residual: streamed stores give the bits of cached stores") {
  // Same arithmetic, other stores: the outputs must be bitwise equal, for outputs that start
  // anywhere within a cache line and rows that span several stream tiles.
  const DropoutParams d{0.3f, 9};
  for (int cols : {1, 17, 255, 257, 1000, 4099}) {
    for (std::size_t offset : {0, 1, 7}) {
      CAPTURE(cols);
      CAPTURE(offset);
      const int rows = 5;
      const std::size_t n = std::size_t(rows) * cols;
      const auto x = random_tensor(n, 31), residual = random_tensor(n, 32);
      const auto bias = random_tensor(cols, 33);
      std::vector<float> cached(n), streamed_buffer(n + offset), unfused_buffer(n + offset),
          unfused_cached(n);
      const std::span<float> streamed(streamed_buffer.data() + offset, n);
      const std::span<float> unfused(unfused_buffer.data() + offset, n);
      bias_dropout_residual_fused(x, bias, residual, cached, rows, cols, d, StoreMode::cached);
      bias_dropout_residual_fused(x, bias, residual, streamed, rows, cols, d,
                                  StoreMode::streaming);
      bias_dropout_residual_unfused(x, bias, residual, unfused_cached, rows, cols, d,
                                    StoreMode::cached);
      bias_dropout_residual_unfused(x, bias, residual, unfused, rows, cols, d,
                                    StoreMode::streaming);
      check_close(streamed, cached, 0.0, 0.0, "fused: streamed vs cached");
      check_close(unfused, unfused_cached, 0.0, 0.0, "unfused: streamed vs cached");
    }
  }
}

}  // namespace
}  // namespace stratasim::kernels
