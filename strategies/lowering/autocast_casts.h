// torch.autocast's weight casts (Strategy::autocast_weights): under PyTorch automatic mixed
// precision the parameters stay fp32 and each linear layer casts its weight to the 16-bit
// dtype when it runs (torch/csrc/autograd autocast's cached_cast, cached for one forward pass;
// flash-attention's FusedDense and FusedMLP call weight.to(autocast dtype) themselves,
// flash_attn/ops/fused_dense.py), saving the 16-bit copy for its input gradient. The weight
// gradient comes back 16-bit; autograd casts it to the parameter's fp32 (validate_outputs)
// and AccumulateGrad adds it into the fp32 .grad.
#pragma once

#include "strategies/lowering/layer_graph.h"

namespace stratasim {

// Appends one pass over `elements` fp32 parameter elements held in `weights` weight tensors:
// forward, read 4 B and write the e-byte copy (saved for the backward: e B an element of
// memory per micro-batch in flight); backward, cast the e-byte gradient to fp32 (read e,
// write 4) and accumulate it into .grad (read 4 + 4, write 4). Per micro-batch: the first
// one's AccumulateGrad takes the tensor without the add, and DDP's copies into its buckets
// and back (8 + 8 B on the last) come to about the same: 16 + e B an element in all. With
// recomputation the casts run again, as the recomputed forward casts anew.
void append_autocast_casts(LayerGraph& g, double elements, int weights, double e);

}  // namespace stratasim
