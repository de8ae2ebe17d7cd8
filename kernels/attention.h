// Scaled dot-product attention per (batch*head), fp32, Q, K, V and O laid out [bh, s, d]:
//   O = softmax(Q K^T * scale + causal mask) V,  scale = 1/sqrt(d) (Vaswani et al. 2017, eq. 1).
// fused:     FlashAttention-style tiling (Dao et al. 2022, Alg. 1): per block of query rows,
//            key/value blocks stream through with an online softmax (running max and sum), so
//            the s x s scores never reach memory.
// unfused:   materializes the bh x s x s scores in a caller-provided workspace, softmax in place,
//            then P V.
// reference: double precision, one row at a time.
#pragma once

#include <cstddef>
#include <span>

namespace stratasim::kernels {

struct AttentionShape {
  int bh = 0;  // batch * heads
  int s = 0;   // sequence length
  int d = 0;   // head dimension
  bool causal = true;
};

void attention_fused(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                     std::span<float> o, AttentionShape sh);

// Floats of workspace attention_unfused needs: the scores plus a transposed K per bh.
std::size_t attention_unfused_workspace(AttentionShape sh);
void attention_unfused(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                       std::span<float> o, std::span<float> workspace, AttentionShape sh);
void attention_reference(std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, std::span<float> o, AttentionShape sh);

}  // namespace stratasim::kernels
