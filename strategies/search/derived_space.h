// The search space of a scenario that lists no axes: what its users would search by hand,
// derived from the model and the cluster (issue 17). Every value is legal on its own; lower()
// prunes combinations (a tp that does not divide the heads with this pp, memory) as for any
// space, and point_at() normalizes knobs that do not apply at a point.
#pragma once

#include "hardware_models/src/hardware_model.h"
#include "strategies/model/model_spec.h"
#include "strategies/search/search_space.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

// Transformers: tp (powers of two up to a node, dividing the heads), pp (powers of two up to
// the layers, the devices and 64), cp (long sequences only: 32k tokens and more), ep and its
// all-to-all overlap (MoE: 1 and powers of two from 4 dividing the experts), micro-batch
// 1/2/4, schedule 1F1B / interleaved with 2 chunks, recomputation, ZeRO stage 0-3, sequence
// parallelism, DP overlap, TP overlap and fusion (megatron, all; dense models: an MoE space
// keeps the scenario's) and fp8 where the device has an fp8 peak. Operator graphs (data parallel only):
// micro-batch, ZeRO stage, DP overlap, fusion, and fp16/bf16 where the device has them.
SearchSpace derive_search_space(const ModelSpec& model, const HardwareModel& hw,
                                const Strategy& base);

}  // namespace stratasim
