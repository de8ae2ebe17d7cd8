#include "strategies/lowering/op_graph_stages.h"

#include <algorithm>
#include <limits>
#include <map>

#include "strategies/lowering/plan.h"

namespace stratasim {

OpGraphStages split_op_graph(const OpGraphSpec& graph, const std::vector<int>& op_counts) {
  const int n = static_cast<int>(graph.ops.size());
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
    for (int i = begin; i < end; ++i) {
      GraphOp op = graph.ops[i];
      for (int& in : op.inputs) {
        if (in >= begin) {
          in -= begin;
        } else if (in >= 0) {
          auto [it, added] = external.try_emplace(in, static_cast<int>(external.size()));
          if (added) part.external_inputs.push_back(graph.ops[in].output_elements);
          in = -1 - it->second;
        }
      }
      part.ops.push_back(std::move(op));
    }
    out.stages.push_back(std::move(part));
    if (s + 1 < op_counts.size()) {
      double crossing = 0;  // made before the boundary, read after it
      for (int j = 0; j < end; ++j) crossing += last_reader[j] >= end ? graph.ops[j].output_elements : 0;
      out.boundary_elements.push_back(crossing);
    }
    begin = end;
  }
  return out;
}

std::vector<int> min_max_partition(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  constexpr double kNone = std::numeric_limits<double>::max();
  // best[k][i]: the smallest largest part splitting the first i costs into k parts; cut[k][i]
  // where the last of them starts.
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(n + 1, kNone));
  std::vector<std::vector<int>> cut(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k) {
    for (int i = k; i <= n - (parts - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kNone) continue;
        const double worst = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (worst < best[k][i]) best[k][i] = worst, cut[k][i] = j;
      }
    }
  }
  std::vector<int> counts(parts);
  for (int k = parts, i = n; k > 0; --k) {
    counts[k - 1] = i - cut[k][i];
    i = cut[k][i];
  }
  return counts;
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
