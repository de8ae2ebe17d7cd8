// Attention: FlashAttention-style online softmax vs materialized scores vs double precision.
#include <cmath>

#include "kernels/attention.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("attention: tiled online softmax equals materialized scores and the reference") {
  for (bool causal : {true, false}) {
    for (int s : {1, 3, 33, 65, 127}) {  // across the 32-row and 64-key tiles
      for (int d : {1, 17, 65}) {
        const int bh = 3;
        CAPTURE(causal);
        CAPTURE(s);
        CAPTURE(d);
        const AttentionShape sh{bh, s, d, causal};
        const std::size_t n = std::size_t(bh) * s * d;
        const auto q = random_tensor(n, 41), k = random_tensor(n, 42), v = random_tensor(n, 43);
        std::vector<float> fused(n), unfused(n), ref(n);
        std::vector<float> workspace(attention_unfused_workspace(sh));
        attention_fused(q, k, v, fused, sh);
        attention_unfused(q, k, v, unfused, workspace, sh);
        attention_reference(q, k, v, ref, sh);
        // |q|, |k|, |v| <= 1. A score is a d-term dot product: error gamma_d * d * scale =
        // d^1.5 u absolute, which becomes the relative error of each probability after exp,
        // plus (s + 8) u from the row sum, the online rescaling and the divide; the output
        // sum_j p_j v_j with |v| <= 1 adds gamma_s. Both fp32 forms carry this error, in
        // different summation orders, so each is checked against it.
        const double tol = (std::pow(double(d), 1.5) + 2.0 * s + 16) * kUnitRoundoff;
        check_close(fused, ref, tol, 0.0, "fused vs reference");
        check_close(unfused, ref, tol, 0.0, "unfused vs reference");
        check_close(fused, unfused, 2 * tol, 0.0, "fused vs unfused");
      }
    }
  }
}

TEST_CASE("attention: one query over two keys, worked by hand") {
  // d = 1, scale 1: q = 1, keys 0 and ln 3 -> weights 1/4, 3/4 over values 4 and 8 -> 7.
  // Causal: query 0 sees only key 0 -> output 4; query 1 sees both -> 7.
  const std::vector<float> q = {1.0f, 1.0f}, k = {0.0f, 1.0986123f}, v = {4.0f, 8.0f};
  std::vector<float> o(2);
  attention_fused(q, k, v, o, AttentionShape{1, 2, 1, true});
  CHECK(o[0] == doctest::Approx(4.0).epsilon(1e-6));
  CHECK(o[1] == doctest::Approx(7.0).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
