// The blocks at the ends of a transformer pipeline and the op-graph block.
#pragma once

#include "strategies/lowering/layer_graph.h"
#include "strategies/lowering/transformer_layer.h"

namespace stratasim {

// Token (+ learned position) embedding, vocabulary-parallel over tp (Megatron).
LayerGraph build_embedding(const TransformerSpec& t, const LayerShape& shape);
// Final norm, output projection to the (tp-sharded) vocabulary, cross-entropy loss.
LayerGraph build_head(const TransformerSpec& t, const LayerShape& shape);
// A generic operator graph for one micro-batch (CNN, RNN step).
// `devices`: the device of each op under Strategy::placement (empty: all on one); epilogue
// fusion stays on one device.
LayerGraph build_op_graph(const OpGraphSpec& g, const LayerShape& shape,
                          const std::vector<int>& devices = {});

}  // namespace stratasim
