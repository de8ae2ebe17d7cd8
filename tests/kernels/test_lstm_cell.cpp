// LSTM cell gates: one pass vs nine framework ops vs double precision.
#include <cmath>

#include "kernels/lstm_cell.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::kUnitRoundoff;
using test::random_tensor;

TEST_CASE("lstm_cell: fused equals unfused and the double reference on odd shapes") {
  for (int batch : {1, 3, 17}) {
    for (int hidden : kOddSizes) {
      CAPTURE(batch);
      CAPTURE(hidden);
      const LstmShape s{batch, hidden};
      const std::size_t n = std::size_t(batch) * hidden;
      const auto gates = random_tensor(4 * n, 71, -4.0f, 4.0f);
      const auto bias = random_tensor(4 * std::size_t(hidden), 72);
      const auto c = random_tensor(n, 73);
      std::vector<float> cf(n), hf(n), cu(n), hu(n), cr(n), hr(n);
      std::vector<float> workspace(lstm_cell_unfused_workspace(s));
      lstm_cell_fused(gates, bias, c, cf, hf, s);
      lstm_cell_unfused(gates, bias, c, cu, hu, workspace, s);
      lstm_cell_reference(gates, bias, c, cr, hr, s);
      // The same float operations in the same order, except where a multiply-add contracts into
      // an FMA (v3/v4 clones): c' = f c + i g is one FMA in the fused form, c' += i g in pass 7
      // of the unfused one; they differ by the rounding of one product <= 1 (u) and the final
      // rounding of values <= 2 (2 u): 4 u. h' = o tanh(c'): each tanh_approx is within 8 u of
      // tanh of its own argument, the arguments differ by <= 4 u and tanh is 1-Lipschitz (20 u),
      // o <= 1 and one rounding each side (2 u): 22 u, say 24 u.
      check_close(cf, cu, 4 * kUnitRoundoff, 0.0, "c fused vs unfused");
      check_close(hf, hu, 24 * kUnitRoundoff, 0.0, "h fused vs unfused");
      // sigmoid and tanh_approx err by <= 4 u and 8 u absolute (test_elementwise); the gates
      // lie in (-1, 1), |c| <= 1, |c'| <= 2. c' = f c + i g: 4 u + 8 u from the gates plus three
      // roundings of values <= 2 (6 u) -> 18 u, say 24 u; h' = o tanh(c'): tanh is
      // 1-Lipschitz, so 24 u from c', 8 u from tanh, 4 u from o, 1 rounding: 40 u.
      check_close(cf, cr, 24 * kUnitRoundoff, 0.0, "c fused vs reference");
      check_close(hf, hr, 40 * kUnitRoundoff, 0.0, "h fused vs reference");
    }
  }
}

TEST_CASE("lstm_cell: hand-worked unit") {
  // All pre-activations 0: i = f = o = 1/2, g = 0; c = 0.8: c' = 0.4, h' = tanh(0.4) / 2.
  const std::vector<float> gates(4, 0.0f), bias(4, 0.0f), c = {0.8f};
  std::vector<float> c_out(1), h_out(1);
  lstm_cell_fused(gates, bias, c, c_out, h_out, LstmShape{1, 1});
  CHECK(c_out[0] == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(h_out[0] == doctest::Approx(std::tanh(0.4) / 2).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
