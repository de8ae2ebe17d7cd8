// Row softmax with scale and causal mask (attention probabilities), fp32. The input is
// `batch` square s x s score matrices; with `causal`, entry (i, j) with j > i is masked:
//   y[i, j] = exp(scale*x[i, j] - max_j') / sum_j' exp(scale*x[i, j'] - max_j')  over unmasked j'
//   y[i, j] = 0 for masked j.
// fused:     one kernel per row (max, exponentials and normalization while the row is in cache;
//            masked entries are never read past the last 16-float block holding valid ones).
// unfused:   the framework sequence as separate passes over the whole tensor: scale, mask
//            (-inf fill), row max, exp(x - max), row sum, divide.
// reference: double precision.
#pragma once

#include <span>

namespace stratasim::kernels {

struct SoftmaxShape {
  int batch = 0;  // number of s x s matrices (batch * heads)
  int s = 0;
  float scale = 1.0f;
  bool causal = true;
};

void scaled_masked_softmax_fused(std::span<const float> x, std::span<float> y, SoftmaxShape sh);
void scaled_masked_softmax_unfused(std::span<const float> x, std::span<float> y, SoftmaxShape sh);
void scaled_masked_softmax_reference(std::span<const float> x, std::span<float> y, SoftmaxShape sh);

// One row of the fused softmax (cols entries, the first `valid` unmasked). x and y may be the
// same row; so may the spans of scaled_masked_softmax_fused. next_x (optional): the next row's
// input, whose first next_valid entries the row prefetches into L2 while it computes.
void softmax_row(const float* x, float* y, int cols, int valid, float scale,
                 const float* next_x = nullptr, int next_valid = 0);

}  // namespace stratasim::kernels
