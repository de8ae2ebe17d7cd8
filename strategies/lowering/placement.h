// Model parallelism by placement (Strategy::placement): which device of a replica runs each op
// of an operator graph, and what each device then holds. The engines time the placed graph in
// sim/cost/placed_kernels.h; this pass only decides where things are.
#pragma once

#include <optional>
#include <vector>

#include "sim/core/error.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

// The device of every op of `graph` under `rules`: a rule's key is an op name, a name prefix up
// to a dot ("tower0" takes "tower0.fc1", not "tower01.fc1") or "*"; the longest matching key
// wins. Infeasible (reason kModel, field "placement") when an op matches no rule, a key matches
// no op or a device below the highest one named holds no op.
std::optional<Infeasible> op_devices(const OpGraphSpec& graph, const std::vector<PlacementRule>& rules,
                                     std::vector<int>* devices);

// Per device of the replica (LayerOp::device of the block's graph): the parameters of its ops,
// the activations it keeps from forward to backward and its backward's extra working set, per
// repetition of the block. A tensor an op saves is kept on that op's device, so a tensor sent to
// another device and saved there is kept on both sides; under full recomputation every device
// checkpoints what enters its part of the graph (the block input or a received tensor), as
// torch.utils.checkpoint around each device's module does.
std::vector<PlacedDevice> placed_devices(const Block& block, const OpGraphSpec& graph,
                                         Recompute mode, int devices);

}  // namespace stratasim
