// Lowering passes over one block's graph (each small and testable on its own):
//   fuse_kernels      - groups ops into kernels by the enabled fusion rules; a fused kernel
//                       moves only the tensors that enter it, leave it or must be saved
//   add_backward      - backward kernels (conjugate collectives, 2x GEMM FLOP) preceded by
//                       the recomputation the strategy asks for
//   activation memory - bytes saved from forward to backward per micro-batch
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

// Which tensors stay in memory from forward to backward under a recomputation mode.
std::vector<bool> saved_tensors(const LayerGraph& g, Recompute mode);
double saved_activation_bytes(const LayerGraph& g, Recompute mode);

std::vector<Kernel> fuse_kernels(const LayerGraph& g, Recompute mode);
std::vector<Kernel> backward_kernels(const LayerGraph& g, const std::vector<Kernel>& forward,
                                     Recompute mode);

// Runs the passes and fills block.forward, block.backward and the memory figures.
// `forward_only` (inference): no backward kernels and nothing saved for one; the block's
// peak working set is its largest op's inputs, output and workspace.
void lower_block(Block& block, Recompute mode, bool forward_only = false);

}  // namespace stratasim
