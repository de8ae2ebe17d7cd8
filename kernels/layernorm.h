// LayerNorm fused with the residual add (pre-LN transformer), fp32, one row per token:
//   h = x + residual;  y = (h - mean(h)) / sqrt(var(h) + eps) * gamma + beta
// (Ba, Kiros & Hinton 2016, eq. 4; biased variance as in PyTorch). Both h (the new residual
// stream) and y are outputs.
// fused:     one pass per row (the row stays in cache between the add, the statistics and the
//            normalization).
// unfused:   pass 1 writes h for the whole tensor, pass 2 is a LayerNorm kernel reading h back.
// Both forms stream h and y out with non-temporal stores when they are larger than the caches
// (mode automatic, see streaming_store.h) or when mode says so; the values do not depend on
// mode.
// reference: double precision.
#pragma once

#include <span>

#include "kernels/streaming_store.h"

namespace stratasim::kernels {

struct LayerNormShape {
  int rows = 0, cols = 0;
  float eps = 1e-5f;
};

void add_layernorm_fused(std::span<const float> x, std::span<const float> residual,
                         std::span<const float> gamma, std::span<const float> beta,
                         std::span<float> h, std::span<float> y, LayerNormShape s,
                         StoreMode mode = StoreMode::automatic);
void add_layernorm_unfused(std::span<const float> x, std::span<const float> residual,
                           std::span<const float> gamma, std::span<const float> beta,
                           std::span<float> h, std::span<float> y, LayerNormShape s,
                           StoreMode mode = StoreMode::automatic);
void add_layernorm_reference(std::span<const float> x, std::span<const float> residual,
                             std::span<const float> gamma, std::span<const float> beta,
                             std::span<float> h, std::span<float> y, LayerNormShape s);

}  // namespace stratasim::kernels
