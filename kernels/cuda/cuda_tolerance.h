// Tolerances of the CUDA kernels: the worst-case bounds of tests/kernels/ (worked there for the
// CPU forms) hold for the GPU too, since they bound any summation order, a fused multiply-add
// rounds once where the CPU rounds twice, and CUDA's expf, erff and tanh-by-expf are within
// 2 ulp like exp_approx (CUDA C Programming Guide, "Mathematical functions", single precision).
// The fused-vs-unfused bounds are wider than on the CPU, where both forms share one summation
// order: on the GPU the forms' reductions may be ordered differently (tree vs sequential).
#pragma once

#include <cmath>
#include <cstddef>
#include <span>

namespace stratasim::kernels::cuda {

struct Tolerance {
  double abs = 0, rel = 0;  // |got - want| <= abs + rel * |want|
};

inline constexpr double kUnitRoundoff = 5.9604644775390625e-8;  // fp32, 2^-24

// C = gelu(A B + bias), |a|, |b| <= 1: gamma_k * k for the dot product (Higham eq. 3.5), GeLU
// slope <= 1.13, a few ulp for bias, erff and the final operations.
inline Tolerance gemm_tolerance(int k) {
  return {1.13 * (k * kUnitRoundoff) * k + 2 * kUnitRoundoff, 8 * kUnitRoundoff};
}
// Three roundings of values <= 3.7 (|x|, |bias|, |residual| <= 1, p = 0.25 or less).
inline Tolerance bias_dropout_residual_tolerance() { return {3 * 4 * 2 * kUnitRoundoff, 0}; }
// h = x + residual: one rounding (exact between the forms). y: sums for mean and variance.
inline Tolerance layernorm_h_tolerance() { return {0, kUnitRoundoff}; }
inline Tolerance layernorm_y_tolerance(int cols) {
  return {(cols + 16) * kUnitRoundoff * 2 * std::sqrt(double(cols)), 0};
}
// Scaled argument rounding, exp 2 ulp, fp32 row sum of s terms, the divide; masked exactly 0.
inline Tolerance softmax_tolerance(int s) { return {1e-30, (s + 12) * kUnitRoundoff}; }
// Dot products of d terms (d^1.5 u on the scores), online-softmax rescaling and the P V sum.
inline Tolerance attention_tolerance(int s, int d) {
  return {(std::pow(double(d), 1.5) + 2.0 * s + 16) * kUnitRoundoff, 0};
}
// 9c-term dot products of values <= 1, batch norm scale <= 1.42 (var >= 0.5).
inline Tolerance conv_tolerance(int c) {
  return {1.42 * (9.0 * c) * (9.0 * c + 8) * kUnitRoundoff, 0};
}
// Input in [0, 1]; blur, Sobel and sharpen error propagation worked in test_image_pipeline.
inline Tolerance image_pipeline_tolerance() { return {1000 * kUnitRoundoff, 0}; }
// Gates via sigmoid/tanh (<= 4 u, 8 u absolute) and three roundings (test_lstm_cell).
inline Tolerance lstm_c_tolerance() { return {24 * kUnitRoundoff, 0}; }
inline Tolerance lstm_h_tolerance() { return {40 * kUnitRoundoff, 0}; }

inline Tolerance twice(Tolerance t) { return {2 * t.abs, 2 * t.rel}; }

// Largest |got[i] - want[i]| / (abs + rel * |want[i]|); <= 1 means within tolerance. NaN in
// either gives infinity. Sizes must match (asserted by the callers).
inline double worst_ratio(std::span<const float> got, std::span<const float> want, Tolerance t) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    if (err == 0.0) continue;
    const double ratio = err / (t.abs + t.rel * std::fabs(double(want[i])));
    if (!(ratio <= worst)) worst = std::isnan(ratio) ? INFINITY : ratio;
  }
  return worst;
}

}  // namespace stratasim::kernels::cuda
