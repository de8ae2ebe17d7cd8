// Scaled, causally masked softmax: one kernel per row vs six passes vs double precision.
#include "kernels/softmax.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("scaled_masked_softmax: fused equals unfused and the double reference on odd shapes") {
  for (bool causal : {true, false}) {
    for (int batch : {1, 3}) {
      for (int s : kOddSizes) {
        CAPTURE(causal);
        CAPTURE(batch);
        CAPTURE(s);
        const std::size_t n = std::size_t(batch) * s * s;
        const auto x = random_tensor(n, 31, -8.0f, 8.0f);
        const SoftmaxShape sh{batch, s, 0.35f, causal};
        std::vector<float> fused(n), unfused(n), ref(n);
        scaled_masked_softmax_fused(x, fused, sh);
        scaled_masked_softmax_unfused(x, unfused, sh);
        scaled_masked_softmax_reference(x, ref, sh);
        // Same scale, max and exp in both forms; the row sums are vectorized reductions over
        // different lengths (the unfused one adds the masked zeros), so they may round
        // differently: gamma_s relative, plus the divide.
        check_close(fused, unfused, 1e-30, (s + 2) * kUnitRoundoff, "fused vs unfused");
        // Per entry: the scaled argument |x*scale - max| <= 5.6 is rounded (5.6 u absolute, so
        // 5.6 u relative after exp), exp_approx adds <= 2 ulp (test_elementwise), the fp32 row sum
        // of s terms <= 1 errs by gamma_s relative, the divide 1 ulp: (s + 12) u relative; masked
        // entries exactly 0.
        check_close(fused, ref, 1e-30, (s + 12) * kUnitRoundoff, "fused vs reference");
      }
    }
  }
}

TEST_CASE("scaled_masked_softmax: hand-worked rows") {
  // Row 0 of a causal 2x2 keeps only column 0: [1, 0]. Row 1 = [0, ln 3] with scale 1 gives
  // [1/(1+3), 3/(1+3)] = [0.25, 0.75].
  const std::vector<float> x = {5.0f, 7.0f, 0.0f, 1.0986123f};
  std::vector<float> y(4);
  scaled_masked_softmax_fused(x, y, SoftmaxShape{1, 2, 1.0f, true});
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == doctest::Approx(0.25).epsilon(1e-6));
  CHECK(y[3] == doctest::Approx(0.75).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
