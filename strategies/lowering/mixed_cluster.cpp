#include "strategies/lowering/mixed_cluster.h"

#include <algorithm>
#include <cmath>

namespace stratasim {
namespace {

double group_rate(const HardwareModel& hw, int g, DType dtype) {
  return sustained_matmul_flops(hw.groups.empty() ? hw.device : hw.groups[g].device, dtype);
}

// Split `total` into integer shares proportional to `weights`, each at least 1 (largest
// remainder; a share raised to 1 is paid for by the largest shares).
std::vector<int> proportional_split(int total, const std::vector<double>& weights) {
  const size_t n = weights.size();
  double sum = 0;
  for (double w : weights) sum += w;
  std::vector<double> exact(n);
  std::vector<int> out(n);
  int given = 0;
  for (size_t i = 0; i < n; ++i) {
    exact[i] = sum > 0 ? total * weights[i] / sum : double(total) / n;
    out[i] = std::max(1, static_cast<int>(std::floor(exact[i])));
    given += out[i];
  }
  while (given < total) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
      if (exact[i] - out[i] > exact[best] - out[best]) best = i;
    }
    ++out[best], ++given;
  }
  while (given > total) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (out[i] > 1 && (best == n || out[i] - exact[i] > out[best] - exact[best])) best = i;
    }
    if (best == n) break;  // fewer layers than stages: refused by lower_checks
    --out[best], --given;
  }
  return out;
}

std::vector<int> even_split(const Plan& plan, int layers, int positions) {
  const Strategy& s = plan.strategy;
  const bool op_graph = plan.model.family == ModelFamily::kOpGraph;
  const int first = op_graph ? 0 : s.first_stage_layers, last = op_graph ? 0 : s.last_stage_layers;
  const int middle = positions - (first > 0) - (last > 0);
  const int rest = layers - first - last;
  std::vector<int> out(positions);
  // The embedding and the loss counted as a layer each (lower_checks: not beside first/last).
  const int embedding = op_graph ? 0 : s.embedding_as_layer, loss = op_graph ? 0 : s.loss_as_layer;
  if (embedding + loss > 0) {
    const int units = layers + embedding + loss;
    for (int pos = 0; pos < positions; ++pos) out[pos] = units / positions + (pos < units % positions ? 1 : 0);
    out.front() -= embedding;
    out.back() -= loss;
    return out;
  }
  for (int pos = 0; pos < positions; ++pos) {
    const int m = pos - (first > 0);  // index among the middle stages
    out[pos] = (first > 0 && pos == 0)              ? first
               : (last > 0 && pos == positions - 1) ? last
                                                    : rest / middle + (m < rest % middle ? 1 : 0);
  }
  return out;
}

}  // namespace

int pipeline_rank_group(const Plan& plan, int rank) {
  const HardwareModel& hw = plan.hardware;
  if (!hw.mixed()) return 0;
  const long long width = static_cast<long long>(plan.tp) * plan.mp * plan.dp;
  const int first = hw.group_of_device(rank * width);
  const int last = hw.group_of_device((rank + 1) * width - 1);
  int slowest = first;
  for (int g = first + 1; g <= last; ++g) {
    if (group_rate(hw, g, plan.strategy.dtype) < group_rate(hw, slowest, plan.strategy.dtype)) slowest = g;
  }
  return slowest;
}

std::vector<int> pipeline_rank_groups(const Plan& plan, int rank) {
  const HardwareModel& hw = plan.hardware;
  if (!hw.mixed()) return {0};
  const long long width = static_cast<long long>(plan.tp) * plan.mp * plan.dp;
  std::vector<int> out;
  for (int g = hw.group_of_device(rank * width); g <= hw.group_of_device((rank + 1) * width - 1); ++g) {
    out.push_back(g);
  }
  return out;
}

std::vector<int> stage_layer_counts(const Plan& plan) {
  const StageMap map = plan.stage_map();
  const int positions = map.chain_length();
  const int layers = plan.model.family == ModelFamily::kOpGraph ? 1 : plan.model.transformer.layers;
  const Strategy& s = plan.strategy;
  if (s.stage_split == StageSplit::kExplicit) return s.stage_layers;
  // lower() has resolved kAuto (balanced on a mixed cluster).
  if (s.stage_split != StageSplit::kBalanced || positions < 2) return even_split(plan, layers, positions);
  std::vector<double> rates(positions);
  for (int pos = 0; pos < positions; ++pos) {
    rates[pos] = group_rate(plan.hardware, pipeline_rank_group(plan, map.rank_of(pos)), s.dtype);
  }
  return proportional_split(layers, rates);
}

}  // namespace stratasim
