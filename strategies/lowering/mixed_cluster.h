// Mixed clusters (HardwareModel::groups): which node group each pipeline rank runs on, and the
// layer counts that balance a pipeline over groups of different speed.
#pragma once

#include <vector>

#include "strategies/lowering/plan.h"

namespace stratasim {

// The devices of pipeline rank r are [r w, (r + 1) w), w = tp * mp * dp (Megatron order: pp is
// the outermost rank dimension). A rank whose devices span groups (data parallel across them)
// runs at the pace of the slowest: its group is the one with the lowest sustained GEMM rate.
// 0 on a cluster of one kind of node.
int pipeline_rank_group(const Plan& plan, int rank);
// Every group rank r's devices lie in, in device order ({0} on a cluster of one kind of node).
std::vector<int> pipeline_rank_groups(const Plan& plan, int rank);

// Layers of each stage of the chain (StageMap::position order) for Strategy::stage_split:
// explicit, even (first/last_stage_layers honoured) or balanced. Balanced gives position i
//   share_i = layers * rate_i / sum(rate)
// with rate_i the sustained GEMM rate (sustained_matmul_flops) of its rank's group, rounded
// by largest remainder, every stage keeping at least one layer.
std::vector<int> stage_layer_counts(const Plan& plan);

}  // namespace stratasim
