#include "strategies/lowering/op_graph_stages.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "strategies/lowering/plan.h"
#include "strategies/lowering/spatial_split.h"

namespace stratasim {

OpGraphStages split_op_graph(const OpGraphSpec& graph, const std::vector<int>& op_counts, int cp) {
  const int n = static_cast<int>(graph.ops.size());
  const std::vector<int> heights = spatial_heights(graph);
  std::vector<int> last_reader(n, -1);  // the last op reading each op's output
  for (int i = 0; i < n; ++i) {
    for (int in : graph.ops[i].inputs) {
      if (in >= 0) last_reader[in] = std::max(last_reader[in], i);
    }
  }
  OpGraphStages out;
  int begin = 0;
  for (size_t s = 0; s < op_counts.size(); ++s) {
    const int end = begin + op_counts[s];
    OpGraphSpec part;
    part.repeat = graph.repeat;
    part.source_offset = graph.source_offset + begin;
    std::map<int, int> external;  // producer op before `begin` -> external input index
    part.ops.reserve(end - begin);
    for (int i = begin; i < end; ++i) {
      const GraphOp& src = graph.ops[i];
      // Everything but the name (an op of the part names itself by source_offset + index).
      GraphOp op{.kind = src.kind, .flops = src.flops, .output_elements = src.output_elements,
                 .params = src.params, .inputs = src.inputs, .input_elements = src.input_elements,
                 .height = src.height, .halo = src.halo, .input_height = src.input_height,
                 .family = src.family};
      for (int& in : op.inputs) {
        if (in >= begin) {
          in -= begin;
        } else if (in >= 0) {
          auto [it, added] = external.try_emplace(in, static_cast<int>(external.size()));
          if (added) {
            part.external_inputs.push_back(graph.ops[in].output_elements);
            part.external_heights.push_back(heights[in]);
          }
          in = -1 - it->second;
        }
      }
      part.ops.push_back(std::move(op));
    }
    out.stages.push_back(std::move(part));
    if (s + 1 < op_counts.size()) {
      double crossing = 0;  // made before the boundary, read after it
      for (int j = 0; j < end; ++j) {
        if (last_reader[j] >= end) crossing += graph.ops[j].output_elements * spatial_share(heights[j], cp);
      }
      out.boundary_elements.push_back(crossing);
    }
    begin = end;
  }
  return out;
}

namespace {

// Splits `costs` greedily into exactly `parts` non-empty parts of at most `limit` each: a part
// ends when the next cost would exceed the limit or when only as many costs are left as parts
// still to fill. Empty when `limit` cannot be kept.
std::vector<int> greedy_parts(const std::vector<double>& costs, int parts, double limit) {
  const int n = static_cast<int>(costs.size());
  std::vector<int> counts;
  double sum = 0;
  int count = 0;
  for (int i = 0; i < n; ++i) {
    if (costs[i] > limit) return {};
    const int parts_left = parts - static_cast<int>(counts.size());  // including the open one
    const bool must_close = parts_left > 1 && n - i < parts_left;  // the rest, one cost a part
    if (count > 0 && (sum + costs[i] > limit || must_close)) {
      counts.push_back(count);
      sum = 0, count = 0;
      if (static_cast<int>(counts.size()) == parts) return {};
    }
    sum += costs[i], ++count;
  }
  counts.push_back(count);
  return static_cast<int>(counts.size()) == parts ? counts : std::vector<int>{};
}

}  // namespace

std::vector<int> min_max_partition(const std::vector<double>& costs, int parts) {
  // The smallest feasible limit by bisection (feasibility is monotone in the limit; the greedy
  // fill is optimal for a given limit), from the largest single cost to the total.
  double lo = 0, hi = 0;
  for (double c : costs) lo = std::max(lo, c), hi += c;
  std::vector<int> best = greedy_parts(costs, parts, hi);
  if (best.empty() || lo >= hi) return best.empty() ? std::vector<int>(parts, 0) : best;
  lo = std::max(0.0, std::nextafter(lo, 0.0));
  for (int iteration = 0; iteration < 200 && std::nextafter(lo, hi) < hi; ++iteration) {
    const double mid = lo + (hi - lo) / 2;
    std::vector<int> counts = greedy_parts(costs, parts, mid);
    if (counts.empty()) {
      lo = mid;
    } else {
      hi = mid, best = std::move(counts);
    }
  }
  return best;
}

std::vector<double> op_time_estimates(const Block& whole, const DeviceSpec& device, DType dtype,
                                      int ops) {
  const double peak = std::max(1.0, device.peak_flops[static_cast<int>(dtype)]);
  const double vector = std::max(1.0, device.vector_flops);
  const double bandwidth = std::max(1.0, device.memory_bandwidth_Bps);
  std::vector<double> out(ops, 0.0);
  for (const auto* list : {&whole.forward, &whole.backward}) {
    for (const Kernel& k : *list) {
      // The device's efficiency curves by kernel size (hardware_model.h), as the cost model's
      // roofline has them (without its GEMM wave quantization).
      const double matmul = peak * std::max(1e-3, device.matmul.at(k.matmul_flops));
      const double memory = bandwidth * std::max(1e-3, device.memory.at(k.bytes));
      const double t = std::max({k.matmul_flops / matmul, k.other_flops / vector, k.bytes / memory}) +
                       k.launches * device.kernel_overhead_s;
      const int op = whole.graph.ops[k.first_op].source_op;
      if (op >= 0 && op < ops) out[op] += t;
    }
  }
  return out;
}

}  // namespace stratasim
