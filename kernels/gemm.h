// GEMM with a bias + GeLU epilogue (the transformer MLP's first linear layer), fp32, row-major:
//   C[m x n] = gelu(A[m x k] * B[k x n] + bias[n]).
// fused:     blocked, multi-threaded GEMM that applies bias and GeLU to each C tile while it is
//            still in cache (one write of C).
// unfused:   the same GEMM, then a bias pass and a GeLU pass over C (C crosses memory 3 times).
// reference: naive triple loop accumulating in double.
#pragma once

#include <span>

namespace stratasim::kernels {

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// C = A * B (blocked, OpenMP over C tiles; k is summed in order 0..k-1 for every element).
void gemm(std::span<const float> a, std::span<const float> b, std::span<float> c, GemmShape s);
void bias_add_rows(std::span<float> c, std::span<const float> bias, int rows, int cols);
void gelu_inplace(std::span<float> x);

void gemm_bias_gelu_fused(std::span<const float> a, std::span<const float> b,
                          std::span<const float> bias, std::span<float> c, GemmShape s);
void gemm_bias_gelu_unfused(std::span<const float> a, std::span<const float> b,
                            std::span<const float> bias, std::span<float> c, GemmShape s);
void gemm_bias_gelu_reference(std::span<const float> a, std::span<const float> b,
                              std::span<const float> bias, std::span<float> c, GemmShape s);

}  // namespace stratasim::kernels
