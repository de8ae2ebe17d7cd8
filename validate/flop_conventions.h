// The FLOP conventions published throughput figures are stated in, so that a measured
// TFLOP/s per GPU converts back to the iteration time the source measured. Each convention is
// a formula from its source; a case's group names which one applies.
#pragma once

#include <string>

#include "sim/core/json_reader.h"

namespace stratasim {

// FLOP of one iteration of a published case (its `model` and `parallel.global_batch`) in the
// named convention:
//   "narayanan_hardware": Narayanan et al. SC21, Eq. 3 (hardware FLOPs, counting the
//     recomputed forward pass): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
//   "megatron_model_noncausal": NeMo 24.x model FLOPs per token without the causal halving,
//     6 N_matmul + 12 l s h (attention scores and values over the whole sequence), where
//     N_matmul counts the linear layers' weights (QKV with GQA, output projection, the MLP's
//     2 or 3 matrices) and the output logits (V h); README-published.md worked it back.
// Throws InputError for an unknown convention or a case without the fields it needs.
double iteration_flops(const std::string& convention, const Json& c);

// When a GPT case (GeLU, 4h MLP) gives both its iteration time and the TFLOP/s it derived from
// it, the FLOP count tells whether recomputation ran: Narayanan Eq. 3 counts
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with it and 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
// without (Korthikanti et al. 2022, Sec. 6). Returns "full", "none", or "" when not decidable.
std::string recompute_implied_by_flops(const Json& c);

}  // namespace stratasim
