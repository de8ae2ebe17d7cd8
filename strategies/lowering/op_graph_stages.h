// An operator graph over pipeline stages (GPipe, Huang et al. 2019, Sec. 2.2; torchgpipe's
// `balance`, Kim et al. 2020): each stage runs a contiguous range of the op list. A tensor made
// before a boundary and read after it crosses that boundary (a residual block's identity as
// well as its main path, torchgpipe's skip portals), and every boundary it passes carries it.
#pragma once

#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "strategies/model/model_spec.h"

namespace stratasim {

struct Block;

struct OpGraphStages {
  std::vector<OpGraphSpec> stages;        // each stage's ops; inputs from earlier stages external
  // Per sample and device, crossing stage s -> s + 1: under a spatial split (cp > 1) a device
  // sends its rows of each spatial tensor (spatial_split.h).
  std::vector<double> boundary_elements;
};

// `op_counts`: ops per stage, each >= 1, summing to the graph's op count (checked by the caller).
OpGraphStages split_op_graph(const OpGraphSpec& graph, const std::vector<int>& op_counts, int cp = 1);

// The contiguous split of `costs` into `parts` non-empty parts whose largest sum is smallest
// (the linear partition problem): the smallest limit a greedy left-to-right fill keeps, found
// by bisection to double precision, O(n) per step. parts <= costs.size().
std::vector<int> min_max_partition(const std::vector<double>& costs, int parts);

// Each op's share of one micro-batch's forward, recomputation and backward on `device`, by
// the roofline of the kernels `whole` (the graph lowered as one block) runs: a fused kernel's
// time goes to its first op. What the balanced split weighs: GPipe's and torchgpipe's
// partitioners balance measured per-layer time (torchgpipe.balance.balance_by_time).
std::vector<double> op_time_estimates(const Block& whole, const DeviceSpec& device, DType dtype,
                                      int ops);

}  // namespace stratasim
