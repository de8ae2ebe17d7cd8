// The shared scalar functions: the vectorizable exp, sigmoid, tanh and the dropout hash.
#include <cmath>
#include <limits>

#include "kernels/elementwise.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

TEST_CASE("exp_approx: within 2 ulp of exp over the whole fp32 range, 0 for -inf") {
  double worst_ulp = 0.0;
  for (double x = -87.0; x <= 88.0; x += 0.001953125) {  // 89601 points, step 2^-9
    const double want = std::exp(x);
    // One ulp of the result: 2^(exponent - 23) for a normal float.
    const double ulp = std::ldexp(1.0, std::ilogb(float(want)) - 23);
    worst_ulp = std::max(worst_ulp, std::fabs(double(exp_approx(float(x))) - want) / ulp);
  }
  CHECK(worst_ulp <= 2.0);
  CHECK(exp_approx(0.0f) == 1.0f);
  CHECK(exp_approx(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(exp_approx(-1000.0f) == 0.0f);
}

TEST_CASE("sigmoid and tanh_approx: a few ulp of 1 absolute, exact limits") {
  double worst_sig = 0.0, worst_tanh = 0.0;
  for (double x = -20.0; x <= 20.0; x += 0.0009765625) {
    worst_sig = std::max(worst_sig, std::fabs(sigmoid(float(x)) - 1.0 / (1.0 + std::exp(-x))));
    worst_tanh = std::max(worst_tanh, std::fabs(tanh_approx(float(x)) - std::tanh(x)));
  }
  CHECK(worst_sig <= 4 * test::kUnitRoundoff);
  CHECK(worst_tanh <= 8 * test::kUnitRoundoff);
  CHECK(sigmoid(0.0f) == 0.5f);
  CHECK(tanh_approx(0.0f) == 0.0f);
  CHECK(tanh_approx(100.0f) == 1.0f);
  CHECK(tanh_approx(-100.0f) == -1.0f);
}

TEST_CASE("dropout_keep: depends on seed and index only, and on the high index bits too") {
  const std::uint32_t half = DropoutParams{0.5f, 0}.threshold();
  CHECK(half == 2147483648u);  // 0.5 * 2^32
  int differ_seed = 0, differ_high = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    CHECK(dropout_keep(3, i, half) == dropout_keep(3, i, half));
    differ_seed += dropout_keep(3, i, half) != dropout_keep(4, i, half);
    differ_high += dropout_keep(3, i, half) != dropout_keep(3, i + (std::uint64_t(1) << 32), half);
  }
  // Independent fair coins differ half the time: 500 +- 5 sd (sd = sqrt(1000/4) = 15.8).
  CHECK(differ_seed == doctest::Approx(500).epsilon(80.0 / 500));
  CHECK(differ_high == doctest::Approx(500).epsilon(80.0 / 500));
}

TEST_CASE("dropout_keep: the draw written out in elementwise.h") {
  // key = mix64(mix64(seed) + (index >> 32)); draw = hash32(lo ^ key_lo) ^ key_hi; keep when
  // draw >= threshold. Worked here from the two hash functions, for indices on both sides of
  // 2^32 and thresholds around the draw itself.
  for (const std::uint64_t seed : {0ull, 5ull, 0xFFFFFFFFFFFFFFFFull}) {
    for (const std::uint64_t index : {0ull, 1ull, 4294967295ull, 4294967296ull, 12345678901ull}) {
      const std::uint64_t key = mix64(mix64(seed) + (index >> 32));
      const std::uint32_t draw =
          hash32(std::uint32_t(index) ^ std::uint32_t(key)) ^ std::uint32_t(key >> 32);
      CHECK(dropout_keep(seed, index, draw));
      if (draw > 0) CHECK(dropout_keep(seed, index, draw - 1));
      if (draw < 0xFFFFFFFFu) CHECK_FALSE(dropout_keep(seed, index, draw + 1));
    }
  }
}

}  // namespace
}  // namespace stratasim::kernels
