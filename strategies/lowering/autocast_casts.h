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

// Strategy::hp_grad_accumulation: DeepSpeed's BF16_Optimizer adds each micro-batch's 16-bit
// gradients into its fp32 gradient buffers in a pass of its own after the backward
// (deepspeed/runtime/bf16_optimizer.py _update_hp_grad: hp_grad.add_(lp.grad.to(fp32)), called
// from update_hp_grads after every micro-batch's backward, pipe/engine.py _exec_backward_pass,
// since PR #1801 of April 2022). Per parameter element: the cast reads the 16-bit gradient and
// writes an fp32 copy (2 + 4 B), the add reads both fp32 tensors and writes the buffer
// (4 + 4 + 4 B): 18 B, two kernels a parameter tensor. Appends that backward-only pass over
// the `elements` parameter elements of g's `tensors` parameter tensors (its parameters after
// tensor parallelism).
void append_hp_grad_accumulation(LayerGraph& g, double elements, int tensors);

// The parameter tensors of g: its ops that read weights, each counted as one.
int parameter_tensors(const LayerGraph& g);

}  // namespace stratasim
