// The FLOP conventions published throughput figures are stated in, so that a measured
// TFLOP/s per GPU (or an MFU) converts back to the iteration time the source measured. Each
// convention is a formula from its source. A case's group may name the convention; a case of a
// source no group knows states it in its own `flop_convention` text, which
// convention_from_text() reads.
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "strategies/model/model_spec.h"

namespace stratasim {

// The conventions, by name (B sequences of s tokens per iteration, l layers, hidden h, a query
// heads of width d, g K/V heads, MLP width f, vocabulary V):
//   "narayanan_hardware": Narayanan et al. SC21, Eq. 3 (hardware FLOPs, counting the
//     recomputed forward pass): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
//   "narayanan_model": the same without recomputation (Korthikanti et al. 2022, Sec. 6):
//     72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
//   "narayanan_three_quarters": Eq. 3 scaled by 3/4 (flash-attention's training README):
//     72 B s l h^2 (1 + s/(6h) + V/(16 l h)).
//   "megatron_model_noncausal": Megatron-LM's num_floating_point_operations and NeMo 24.x:
//     per token 6 N_matmul + 12 l s a d, N_matmul the linear layers' weights one token passes
//     (QKV with GQA, the output projection, the MLP's 2 or 3 matrices, for MoE the top-k
//     routed and the shared experts) and the logits (V h).
//   "megatron_model_causal": the same with the attention halved (6 l s a d; Megatron-Bridge's
//     flop_utils).
//   "six_n_attention": PaLM's MFU (Chowdhery et al. 2022, App. B), as TorchTitan counts it: per
//     token 6 N + 12 l a d s, N the parameters without the input embedding (the output
//     projection counted), no causal discount.
//   "six_n_attention_causal": the same with the attention halved (6 l a d s).
//   "six_n": 6 N per token, N every parameter (Kaplan et al. 2020; Hoffmann et al. 2022's
//     C = 6 N D); for MoE the parameters one token passes.
// `c` is the published case (its parallel.global_batch), `t` its translated model.
// Throws InputError for an unknown convention or a case without the fields it needs.
double iteration_flops(const std::string& convention, const Json& c, const TransformerSpec& t);
const std::vector<std::string>& flop_convention_names();

// The convention a source's own text states (a case's `flop_convention`), read from the
// formula it writes (96*B*s*l*h^2..., 6*N + 12*l*..., l*h^2*(12 + ... + 12*s/h ...)) or the
// words it uses ("non-causal", "Narayanan", "PaLM"); "" when the text states none of them.
std::string convention_from_text(const std::string& text);

// When a GPT case (GeLU, 4h MLP) gives both its iteration time and the TFLOP/s it derived from
// it, the FLOP count tells whether recomputation ran: Narayanan Eq. 3 counts
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with it and 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
// without (Korthikanti et al. 2022, Sec. 6). Returns "full", "none", or "" when not decidable.
std::string recompute_implied_by_flops(const Json& c);

}  // namespace stratasim
