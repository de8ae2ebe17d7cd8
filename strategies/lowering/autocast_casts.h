// torch.autocast's weight casts (Strategy::autocast_weights): under PyTorch automatic mixed
// precision the parameters stay fp32 and each linear layer casts its weight (and bias) to the
// 16-bit dtype when it runs (ATen's autocast cached_cast, aten/src/ATen/autocast_mode.cpp,
// cached for one forward pass; flash-attention's FusedDense and FusedMLP call
// weight.to(autocast dtype) themselves, flash_attn/ops/fused_dense.py), saving the 16-bit copy
// for its input gradient. The weight gradient comes back 16-bit; autograd casts it to the
// parameter's fp32 (validate_outputs) and AccumulateGrad adds it into the fp32 .grad. Norm
// parameters are not cast: autocast runs layer_norm in fp32.
#pragma once

#include "strategies/lowering/layer_graph.h"

namespace stratasim {

// Puts first in g one pass over `elements` fp32 parameter elements held in `tensors`
// parameter tensors, each `element_bytes` once cast:
//   forward: read the fp32 parameter, write its copy, one cast a tensor; the copy is saved for
//   the backward (element_bytes an element of memory per micro-batch in flight);
//   backward: cast the 16-bit gradient to fp32 (read element_bytes, write 4) and accumulate
//   it into .grad (read 4 + 4, write 4), two kernels a tensor.
// Per micro-batch: the first one's AccumulateGrad takes the tensor without the add, and DDP's
// copies into its buckets and back (8 + 8 B on the last) come to about the same, so 16 +
// element_bytes B an element in all. First in the block, its copies are live beside every op a
// full recomputation rebuilds after it; full (and per-op) recomputation casts again, Megatron's
// selective recomputation of modules does not.
void prepend_autocast_casts(LayerGraph& g, double elements, int tensors, double element_bytes);

// The ops whose parameters autocast casts: GEMMs with weights and bias additions (not norms).
bool autocast_casts_parameters(const LayerOp& op);

}  // namespace stratasim
