// The AVX-512 softmax row functions: the exponential's accuracy and limits, and the row against
// the portable path's arithmetic (both forms of the softmax go through them on such CPUs).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/softmax_avx512.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

TEST_CASE("avx512 exp_row: within 2 ulp of exp over the fp32 range, subnormals, 0 for -inf") {
  if (!avx512::available()) {
    MESSAGE("this CPU has no AVX-512F: the portable softmax path runs instead (test_softmax)");
    return;
  }
  std::vector<float> xs;
  for (double x = -87.0; x <= 88.0; x += 0.001953125) xs.push_back(float(x));  // step 2^-9
  std::vector<float> e = xs;
  avx512::exp_row(e.data(), int(e.size()), 0.0f);
  double worst_ulp = 0.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double want = std::exp(double(xs[i]));
    const double ulp = std::ldexp(1.0, std::ilogb(float(want)) - 23);  // of a normal float
    worst_ulp = std::max(worst_ulp, std::fabs(double(e[i]) - want) / ulp);
  }
  CHECK(worst_ulp <= 2.0);
  // Below -87.3 the result is subnormal: within 2 ulp of the smallest normal's spacing, 2^-149.
  // From about -103.97 on, exp(x) < 2^-150 rounds to 0; -inf and -1000 give exactly 0; m is
  // subtracted first (exp(x - m)).
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> edge = {-90.0f, -100.0f, -105.0f, -1000.0f, -inf, 1.5f, 89.0f};
  avx512::exp_row(edge.data(), int(edge.size()), 0.5f);  // exp(x - 0.5)
  CHECK(std::fabs(double(edge[0]) - std::exp(-90.5)) <= 2 * std::ldexp(1.0, -149));
  CHECK(std::fabs(double(edge[1]) - std::exp(-100.5)) <= 2 * std::ldexp(1.0, -149));
  CHECK(edge[2] == 0.0f);
  CHECK(edge[3] == 0.0f);
  CHECK(edge[4] == 0.0f);
  CHECK(edge[5] == doctest::Approx(std::exp(1.0)).epsilon(4 * test::kUnitRoundoff));
  CHECK(edge[6] == doctest::Approx(std::exp(88.5)).epsilon(4 * test::kUnitRoundoff));
}

TEST_CASE("avx512 softmax_row: equals the portable row's arithmetic within the exp's ulps") {
  if (!avx512::available()) {
    MESSAGE("this CPU has no AVX-512F: nothing to compare");
    return;
  }
  // Both compute exp(scale x - max) / sum: the exponentials differ by at most 2 + 2 ulp (4 ulp
  // = 8 u relative), the sums of `valid` terms by gamma_valid (different orders), the divide
  // by 1 ulp: (8 + valid + 2) u relative. Masked entries are exactly 0 in both.
  for (const int cols : test::kOddSizes) {
    for (const int valid : {1, cols / 2 + 1, cols}) {
      CAPTURE(cols);
      CAPTURE(valid);
      const auto x = test::random_tensor(std::size_t(cols), 7, -8.0f, 8.0f);
      const std::size_t n = std::size_t(cols);
      std::vector<float> fast(n, -1.0f), portable(n, 0.0f);
      avx512::softmax_row(x.data(), fast.data(), cols, valid, 0.35f, x.data(), valid);
      float m = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < valid; ++j) m = std::max(m, x[j] * 0.35f);
      float sum = 0.0f;
      for (int j = 0; j < valid; ++j) sum += (portable[j] = exp_approx(x[j] * 0.35f - m));
      for (int j = 0; j < cols; ++j) portable[j] = j < valid ? portable[j] / sum : 0.0f;
      test::check_close(fast, portable, 1e-30, (10 + valid) * test::kUnitRoundoff,
                        "avx512 vs portable");
      for (int j = valid; j < cols; ++j) CHECK(fast[j] == 0.0f);
      // A row with no valid entry (and a next row to prefetch) is all zeros, without a fault.
      avx512::softmax_row(x.data(), fast.data(), cols, 0, 0.35f, x.data(), cols);
      for (int j = 0; j < cols; ++j) CHECK(fast[j] == 0.0f);
    }
  }
}

}  // namespace
}  // namespace stratasim::kernels
