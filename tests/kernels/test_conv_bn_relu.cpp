// Conv 3x3 + batch norm + ReLU: epilogue on the row in cache vs separate passes vs double.
#include <algorithm>

#include "kernels/conv_bn_relu.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("conv_bn_relu: fused equals unfused and the double reference on odd shapes") {
  for (int c : {1, 3, 17}) {
    for (int hw : {1, 3, 17, 33}) {
      for (int w : {1, 5, 65}) {
        const ConvShape s{2, c, 5, hw, w};
        CAPTURE(c);
        CAPTURE(hw);
        CAPTURE(w);
        const auto x = random_tensor(std::size_t(s.n) * c * hw * w, 51);
        const auto wt = random_tensor(std::size_t(s.k) * c * 9, 52);
        const auto gamma = random_tensor(s.k, 53), beta = random_tensor(s.k, 54);
        const auto mean = random_tensor(s.k, 55), var = random_tensor(s.k, 56, 0.5f, 2.0f);
        const BatchNorm bn{gamma, beta, mean, var, 1e-5f};
        std::vector<float> fused(std::size_t(s.n) * s.k * hw * w), unfused(fused.size()),
            ref(fused.size());
        conv_bn_relu_fused(x, wt, bn, fused, s);
        conv_bn_relu_unfused(x, wt, bn, unfused, s);
        conv_bn_relu_reference(x, wt, bn, ref, s);
        // Same convolution order and the same folded scale/shift in both forms.
        check_close(fused, unfused, 1e-30, 4 * kUnitRoundoff, "fused vs unfused");
        // The convolution sums 9c terms |w x| <= 1: gamma_{9c} * 9c (Higham eq. 3.5); batch
        // norm multiplies by |gamma| / sqrt(var + eps) <= 1.42 and adds a few roundings of
        // values <= 1.42 * 9c + 2; ReLU is 1-Lipschitz.
        const double tol = 1.42 * (9.0 * c) * (9.0 * c + 8) * kUnitRoundoff;
        check_close(fused, ref, tol, 0.0, "fused vs reference");
      }
    }
  }
}

TEST_CASE("conv_bn_relu: hand-worked 3x3 image with a box filter") {
  // All-ones 3x3 input, all-ones 3x3 filter, zero padding: the output counts the in-image
  // taps: corners 4, edges 6, centre 9. BN with mean 5, var 4 - eps, gamma 2, beta 0 maps v to
  // (v - 5) / 2 * 2 = v - 5; ReLU: corners 0, edges 1, centre 4.
  const std::vector<float> x(9, 1.0f), w(9, 1.0f);
  const std::vector<float> gamma = {2.0f}, beta = {0.0f}, mean = {5.0f}, var = {4.0f - 1e-5f};
  std::vector<float> y(9);
  conv_bn_relu_fused(x, w, BatchNorm{gamma, beta, mean, var, 1e-5f}, y, ConvShape{1, 1, 1, 3, 3});
  const std::vector<float> want = {0, 1, 0, 1, 4, 1, 0, 1, 0};
  for (int i = 0; i < 9; ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
