#include "strategies/lowering/spatial_split.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace stratasim {
namespace {

double rows_per_device(int height, int cp) { return (height + cp - 1) / cp; }

// A tensor an op reads, as the spatial pass sees it: its block tensor, its rows and elements per
// sample.
struct Read {
  int tensor = -1;
  int rows = 0;
  double elements = 0;
};

std::vector<Read> reads_of(const LayerGraph& g, const OpGraphSpec& spec, const std::vector<int>& heights,
                           int i) {
  const GraphOp& op = spec.ops[i];
  std::vector<Read> out;
  if (op.inputs.empty()) {
    out.push_back({g.ops[i].inputs[0], op.model_input_rows(), op.input_elements});
    return out;
  }
  for (size_t j = 0; j < op.inputs.size() && j < kMaxOpInputs; ++j) {
    const int in = op.inputs[j];
    const size_t k = static_cast<size_t>(-1 - in);
    const double elements = in >= 0 ? spec.ops[in].output_elements
                            : k < spec.external_inputs.size() ? spec.external_inputs[k] : 0.0;
    out.push_back({g.ops[i].inputs[j], input_rows(spec, heights, in), elements});
  }
  return out;
}

bool fused_with_previous(const LayerGraph& g, int i) {
  if (i == 0) return false;
  const LayerOp& a = g.ops[i - 1];
  const LayerOp& b = g.ops[i];
  return a.fusion_group >= 0 && a.fusion == b.fusion && a.fusion_group == b.fusion_group && a.device == b.device;
}

// What to insert before op i of the block: halo exchanges (tensor, rows from each neighbour) and
// all-gathers (tensor) of spatial tensors.
struct Exchanges {
  std::vector<std::pair<int, int>> halos;  // (reader's tensor, rows), rows over the fused chain
  std::vector<int> gathers;
  double norm_stats_B = 0;  // a batch norm's per-channel sums, all-reduced over the group
};

void add_halo(Exchanges& x, int tensor, int rows) {
  for (auto& [t, r] : x.halos) {
    if (t == tensor) {
      r = std::max(r, rows);
      return;
    }
  }
  x.halos.emplace_back(tensor, rows);
}

std::string rows_text(int cp, int height) {
  const long long per = (height + cp - 1) / cp;
  return "cp=" + std::to_string(cp) + " leaves " + std::to_string(per) + " row" + (per == 1 ? "" : "s") +
         " per device of its " + std::to_string(height) + "-row input";
}

}  // namespace

double spatial_share(int height, int cp) {
  if (cp <= 1 || height <= 0) return 1;
  return rows_per_device(height, cp) / height;
}

std::optional<Infeasible> check_spatial_split(const OpGraphSpec& g, int cp) {
  if (cp <= 1) return std::nullopt;
  const std::vector<int> h = spatial_heights(g);
  if (std::none_of(h.begin(), h.end(), [](int rows) { return rows > 0; })) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "cp=" + std::to_string(cp) +
                          " splits an operator graph's rows over devices (spatial parallelism); no op of this "
                          "graph declares a height",
                      "cp"};
  }
  return std::nullopt;
}

std::optional<Infeasible> insert_spatial_exchanges(LayerGraph& g, const OpGraphSpec& spec, int cp,
                                                   double micro_batch, double element_bytes) {
  if (cp <= 1) return std::nullopt;
  const int n = static_cast<int>(spec.ops.size());
  const std::vector<int> heights = spatial_heights(spec);
  std::vector<int> first(n);  // first op of each op's fused run
  for (int i = 0; i < n; ++i) first[i] = fused_with_previous(g, i) ? first[i - 1] : i;
  // Rows beyond its own each op's output must have for the rest of its fused chain: the
  // largest halo + downstream need over the chain's readers of it.
  std::vector<int> downstream(n, 0);
  for (int c = n - 1; c >= 0; --c) {
    for (int in : spec.ops[c].inputs) {
      if (in >= 0 && first[in] == first[c] && heights[c] > 0) {
        downstream[in] = std::max(downstream[in], spec.ops[c].halo + downstream[c]);
      }
    }
  }
  std::vector<Exchanges> before(n);
  std::map<int, int> gathered;  // spatial tensor -> the tensor its all-gather writes
  for (int i = 0; i < n; ++i) {
    const GraphOp& op = spec.ops[i];
    // A batch norm over split rows (its gamma and beta: params = 2 C) needs every device's sums
    // of x and x^2 per channel before it normalizes, and of dy and dy x-hat in the backward:
    // 2 C fp32 values all-reduced over the group each way (Dryden et al. 2019, Sec. III-B).
    if (op.kind == GraphOpKind::kNorm && heights[i] > 0 && op.params > 0) before[i].norm_stats_B = op.params * 4;
    std::vector<Read> reads = reads_of(g, spec, heights, i);
    for (size_t j = 0; j < reads.size(); ++j) {
      const Read& r = reads[j];
      const bool inside = !op.inputs.empty() && op.inputs[j] >= 0 && first[op.inputs[j]] == first[i];
      if (r.rows <= 0 || r.tensor < 0) continue;
      if (heights[i] > 0) {
        if (inside) continue;  // computed in the chain's tile, halo included
        const int rows = op.halo + downstream[i];
        if (rows <= 0) continue;
        if (rows > rows_per_device(r.rows, cp)) {
          return Infeasible{InfeasibleReason::kContextParallel,
                            "op '" + op.name + "': " + rows_text(cp, r.rows) + ", fewer than the " +
                                std::to_string(rows) + " halo rows it reads from each neighbour" +
                                (downstream[i] > 0 ? " (over its fused chain)" : ""),
                            "cp"};
        }
        add_halo(before[first[i]], r.tensor, rows);
      } else if (!gathered.count(r.tensor)) {
        gathered[r.tensor] = -1;
        before[i].gathers.push_back(r.tensor);
      }
    }
  }
  // A fused chain recomputes the rows its readers' halos add at each device edge (two edges
  // for an inner device).
  for (int i = 0; i < n; ++i) {
    if (downstream[i] <= 0 || heights[i] <= 0) continue;
    const double extra = 2.0 * downstream[i] / rows_per_device(heights[i], cp);
    g.ops[i].matmul_flops *= 1 + extra;
    g.ops[i].other_flops *= 1 + extra;
  }
  // Elements per row of each block tensor that is read across the split, per sample.
  std::map<int, std::pair<double, int>> tensor_rows;  // tensor -> (elements per sample, rows)
  for (int i = 0; i < n; ++i) {
    for (const Read& r : reads_of(g, spec, heights, i)) {
      if (r.rows > 0 && r.tensor >= 0) tensor_rows[r.tensor] = {r.elements, r.rows};
    }
  }
  std::vector<LayerOp> ops;
  ops.reserve(g.ops.size() * 2);
  const double bytes_per_element = micro_batch * element_bytes;
  for (int i = 0; i < n; ++i) {
    for (const auto& [tensor, rows] : before[i].halos) {
      const auto [elements, height] = tensor_rows[tensor];
      const double side = rows * elements / height * bytes_per_element;
      LayerOp x;
      x.name = "halo_exchange";
      x.cls = OpClass::kCollective;
      x.comm = CommKind::kHaloExchange;
      x.comm_bytes = side;
      x.group = GroupKind::kContext;
      x.device = g.ops[i].device;
      x.inputs[0] = static_cast<int16_t>(tensor);
      g.tensors.push_back(TensorInfo{2 * side, 2 * side});
      x.output = static_cast<int16_t>(g.tensors.size() - 1);
      ops.push_back(x);
      // The chain's first reader of the tensor also reads the received rows.
      for (int m = i; m < n && first[m] == i; ++m) {
        LayerOp& reader = g.ops[m];
        if (std::find(std::begin(reader.inputs), std::end(reader.inputs), tensor) == std::end(reader.inputs)) continue;
        auto slot = std::find(std::begin(reader.inputs), std::end(reader.inputs), int16_t{-1});
        if (slot != std::end(reader.inputs)) *slot = x.output;
        break;
      }
    }
    for (int tensor : before[i].gathers) {
      const auto [elements, height] = tensor_rows[tensor];
      (void)height;
      LayerOp x;
      x.name = "spatial_gather";
      x.cls = OpClass::kCollective;
      x.comm = CommKind::kAllGather;
      x.comm_bytes = elements * bytes_per_element;  // the whole tensor, as each device ends with it
      x.comm_phases = CommPhases::kForwardOnly;      // every device computes the whole gradient
      x.group = GroupKind::kContext;
      x.device = g.ops[i].device;
      x.inputs[0] = static_cast<int16_t>(tensor);
      g.tensors.push_back(TensorInfo{x.comm_bytes, x.comm_bytes});
      x.output = static_cast<int16_t>(g.tensors.size() - 1);
      gathered[tensor] = x.output;
      ops.push_back(x);
    }
    if (before[i].norm_stats_B > 0) {
      LayerOp x;
      x.name = "spatial_norm_stats";
      x.cls = OpClass::kCollective;
      x.comm = CommKind::kAllReduce;
      x.comm_bytes = before[i].norm_stats_B;
      x.group = GroupKind::kContext;
      x.device = g.ops[i].device;
      x.inputs[0] = g.ops[i].inputs[0];
      g.tensors.push_back(TensorInfo{x.comm_bytes, 0});
      x.output = static_cast<int16_t>(g.tensors.size() - 1);
      ops.push_back(x);
    }
    LayerOp op = g.ops[i];
    if (heights[i] == 0) {  // reads the gathered copies
      for (int16_t& in : op.inputs) {
        auto it = gathered.find(in);
        if (in >= 0 && it != gathered.end() && it->second >= 0) in = static_cast<int16_t>(it->second);
      }
    }
    ops.push_back(op);
  }
  g.ops = std::move(ops);
  return std::nullopt;
}

}  // namespace stratasim
