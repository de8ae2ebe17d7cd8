// Lowered transformer blocks depend only on the model's shape and a few strategy knobs
// (micro-batch, tp, sp, dtype, fusion, recomputation), not on pp, dp, the schedule or the
// cluster. A strategy sweep lowers the same block thousands of times, so lower() memoizes
// them per thread. Blocks are immutable and shared by the plans that use them.
#pragma once

#include <memory>

#include "strategies/lowering/plan.h"
#include "strategies/lowering/transformer_layer.h"

namespace stratasim {

enum class BlockKind : uint8_t { kLayer, kEmbedding, kHead };

struct TransformerBlocks {
  std::shared_ptr<const Block> layer, embedding, head;
  std::shared_ptr<const Block> dense_layer;  // MoE models with first_dense_layers; else null
};

// Lowered layer, embedding and head for this shape; from the per-thread cache when present.
TransformerBlocks transformer_blocks(const TransformerSpec& t, const LayerShape& shape,
                                     Recompute recompute, int pp);

}  // namespace stratasim
