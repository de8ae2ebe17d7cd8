// GEMM + bias + GeLU: fused epilogue vs separate passes vs a double-precision triple loop.
#include <algorithm>

#include "kernels/gemm.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("gemm_bias_gelu: fused equals unfused and the double reference on odd shapes") {
  for (int m : {1, 17, 65}) {
    for (int n : kOddSizes) {
      for (int k : {1, 33, 127, 300}) {  // 300 crosses the 256-deep k block
        const GemmShape s{m, n, k};
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        const auto a = random_tensor(std::size_t(m) * k, 1);
        const auto b = random_tensor(std::size_t(k) * n, 2);
        const auto bias = random_tensor(n, 3);
        std::vector<float> fused(std::size_t(m) * n), unfused(fused.size()), ref(fused.size());
        gemm_bias_gelu_fused(a, b, bias, fused, s);
        gemm_bias_gelu_unfused(a, b, bias, unfused, s);
        gemm_bias_gelu_reference(a, b, bias, ref, s);
        // Fused and unfused sum k in the same order and apply the same bias and GeLU
        // arithmetic, so they agree to rounding of the final operations: 4 ulp.
        check_close(fused, unfused, 1e-30, 4 * 2 * kUnitRoundoff, "fused vs unfused");
        // Against double: a sequential fp32 dot product of k terms errs by at most
        // gamma_k * sum|a_p b_p| <= k*u * k (|a|, |b| <= 1) (Higham, eq. 3.5), bias adds one
        // rounding, GeLU has slope <= 1.13 and erff is accurate to a few ulp of its value.
        const double gemm_bound = 1.13 * (k * kUnitRoundoff) * k + 2 * kUnitRoundoff;
        check_close(fused, ref, gemm_bound, 8 * kUnitRoundoff, "fused vs reference");
      }
    }
  }
}

TEST_CASE("gemm: a hand-worked 2x2 product") {
  // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]; gelu(x) = x * Phi(x) is x to fp32 precision for
  // x >= 19 and bias -19.5 gives gelu(-0.5) = -0.5 * Phi(-0.5) = -0.5 * 0.308538 = -0.154269.
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c(4);
  gemm(a, b, c, GemmShape{2, 2, 2});
  CHECK(c == std::vector<float>{19, 22, 43, 50});
  const std::vector<float> bias = {-19.5f, 0.0f};
  gemm_bias_gelu_fused(a, b, bias, c, GemmShape{2, 2, 2});
  CHECK(c[0] == doctest::Approx(-0.154269).epsilon(1e-5));
  CHECK(c[1] == doctest::Approx(22.0).epsilon(1e-6));
  CHECK(c[3] == doctest::Approx(50.0).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
