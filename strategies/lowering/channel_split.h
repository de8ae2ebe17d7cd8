// Channel (filter) parallelism for operator graphs (issue 16): Strategy::tp on a CNN splits each
// convolution's and matmul's filters over the tp devices of a tensor group, as Dryden et al.'s
// filter parallelism does ("Channel and Filter Parallelism for Large-Scale CNN Training", SC'19,
// Sec. III-B): a device computes 1/tp of every layer's output channels from all of its input
// channels, so before each such layer it all-gathers its channel-split input, and in the
// backward it reduce-scatters the input gradient it computed for every channel (the
// all-gather's dual). Ops without weights of their own (elementwise, pooling, norms: their
// statistics are per channel) run on the device's channels without communication; a loss mixes
// every class: it runs whole after a forward-only all-gather of its input (every device
// computes the whole gradient and keeps its channels). build_op_graph (edge_blocks.cpp) sizes
// the split tensors, FLOPs and parameters; this pass adds the gathers.
#pragma once

#include <optional>

#include "sim/core/error.h"
#include "strategies/lowering/layer_graph.h"
#include "strategies/model/model_spec.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

// Before every op that needs its whole input (model_spec.h channel_split), an all-gather over
// the tensor group of each channel-split tensor it reads (once per tensor). g is the block
// build_op_graph made of `spec`, micro_batch samples of element_bytes each.
void insert_channel_exchanges(LayerGraph& g, const OpGraphSpec& spec, int tp, double micro_batch,
                              double element_bytes);

// Parameters one of tp devices holds: the split ones' 1/tp, the others whole.
double channel_split_params(const OpGraphSpec& spec, int tp);

// A split the strategy cannot combine: channel parallelism with pipeline stages, a spatial
// split or op placement.
std::optional<Infeasible> check_channel_split(const Strategy& s);

}  // namespace stratasim
