// Bias + dropout + residual add (the transformer's output of attention and MLP), fp32:
//   out[i, j] = residual[i, j] + keep(seed, i*cols + j) * (x[i, j] + bias[j]) / (1 - p).
// fused:     one pass (reads x and residual, writes out).
// unfused:   three passes over out: out = x + bias; out = dropout(out); out += residual.
// Both forms stream out with non-temporal stores when it is larger than the caches (mode
// automatic, see streaming_store.h) or when mode says so; the values do not depend on mode.
// reference: a plain scalar loop.
// The mask is the counter-based hash of elementwise.h, so all three forms drop the same elements.
#pragma once

#include <span>

#include "kernels/elementwise.h"
#include "kernels/streaming_store.h"

namespace stratasim::kernels {

void bias_dropout_residual_fused(std::span<const float> x, std::span<const float> bias,
                                 std::span<const float> residual, std::span<float> out, int rows,
                                 int cols, DropoutParams d,
                                 StoreMode mode = StoreMode::automatic);
void bias_dropout_residual_unfused(std::span<const float> x, std::span<const float> bias,
                                   std::span<const float> residual, std::span<float> out, int rows,
                                   int cols, DropoutParams d,
                                   StoreMode mode = StoreMode::automatic);
void bias_dropout_residual_reference(std::span<const float> x, std::span<const float> bias,
                                     std::span<const float> residual, std::span<float> out,
                                     int rows, int cols, DropoutParams d);

}  // namespace stratasim::kernels
