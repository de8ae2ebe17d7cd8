// Spatial parallelism for operator graphs (issue 16): Strategy::cp on a CNN or an image/stencil
// pipeline splits each sample's rows over the cp devices of a context group, as LBANN's and
// Dryden et al.'s "spatial parallelism" does (Dryden et al., "Improving Strong-Scaling of CNN
// Training by Exploiting Finer-Grained Parallelism", IPDPS 2019, Sec. III: each process holds a
// block of rows, a convolution with a k x k filter first exchanges (k - 1)/2 halo rows with each
// neighbour, forward and backward; layers without spatial dims run replicated after the rows are
// gathered; batch norm all-reduces its per-channel statistics over the partition). A device holds ceil(height / cp) rows of each spatial tensor and runs that share of
// each spatial op; an op without rows (GraphOp::height 0: a classifier, a loss) runs whole on
// every device of the group after an all-gather of its spatial input (its gradient needs no
// exchange: every device computes all of it and keeps its rows). Parameters are replicated over
// the group and their gradients reduced with the data-parallel replicas'.
//
// A fused chain of stencils (FusionPlan::whole_chain) is one tiled kernel, as Halide's
// compute_at schedules blur -> Sobel -> sharpen: it exchanges its input's halo once, the sum of
// the members' halos along the chain, and recomputes the intermediate rows that halo implies
// (Ragan-Kelley et al., PLDI 2013, Sec. 2: "redundant computation at tile boundaries").
#pragma once

#include <optional>
#include <vector>

#include "sim/core/error.h"
#include "strategies/lowering/layer_graph.h"
#include "strategies/model/model_spec.h"

namespace stratasim {

// The share of a tensor of `height` rows one of cp devices holds: ceil(height / cp) / height (the
// device with the most rows sets the time); 1 for a tensor without rows or cp = 1.
double spatial_share(int height, int cp);

// A split the graph cannot take: no op has rows.
std::optional<Infeasible> check_spatial_split(const OpGraphSpec& g, int cp);

// After fusion grouping: the halo exchanges before each spatial op (a fused chain: before its
// first op, for the chain), the all-gathers before an op without rows that reads a spatial
// tensor, and a fused chain's recomputed halo rows in its members' FLOPs. g is the block
// build_op_graph made of `spec` (ops in the spec's order, tensors already at a device's share),
// micro_batch samples of element_bytes each. Infeasible when a device's rows are fewer than the
// halo an op (a fused chain: the chain) reads from each neighbour.
std::optional<Infeasible> insert_spatial_exchanges(LayerGraph& g, const OpGraphSpec& spec, int cp,
                                                   double micro_batch, double element_bytes);

}  // namespace stratasim
