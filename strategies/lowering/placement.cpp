#include "strategies/lowering/placement.h"

#include <algorithm>
#include <string>

#include "strategies/lowering/block_lowering.h"

namespace stratasim {
namespace {

// Length of the key's match on `name` (0 for "*"), or -1 when the key does not take it.
int match_length(const std::string& key, const std::string& name) {
  if (key == "*") return 0;
  if (key == name) return static_cast<int>(key.size());
  if (name.size() > key.size() && name.compare(0, key.size(), key) == 0 && name[key.size()] == '.') {
    return static_cast<int>(key.size());
  }
  return -1;
}

Infeasible placement_error(const std::string& detail) {
  return Infeasible{InfeasibleReason::kModel, detail, "placement"};
}

// Which tensors device d keeps for its backward under `mode`, in bytes.
double held_bytes(const LayerGraph& g, const std::vector<int>& producer, int d, Recompute mode) {
  const std::vector<bool> saved = saved_tensors(g, mode);
  std::vector<bool> held(g.tensors.size(), false);
  for (const LayerOp& op : g.ops) {
    if (op.device != d) continue;
    for (int j = 0; j < kMaxOpInputs; ++j) {
      const int t = op.inputs[j];
      if (t < 0) continue;
      const bool enters = producer[t] < 0 || g.ops[producer[t]].device != d;
      // Op-level recomputation reruns ops from what their device holds, received inputs too.
      const bool keeps = mode == Recompute::kFull ? enters
                         : saved[t] && ((op.saves & (1u << j)) || (enters && mode == Recompute::kOpSelective));
      if (keeps) held[t] = true;
    }
    if (mode != Recompute::kFull && op.output >= 0 && saved[op.output] &&
        ((op.saves & kSaveOutput) || mode == Recompute::kOpSelective)) {
      held[op.output] = true;
    }
  }
  double bytes = 0;
  for (size_t t = 0; t < held.size(); ++t) bytes += held[t] ? g.tensors[t].saved_bytes : 0.0;
  return bytes;
}

}  // namespace

std::optional<Infeasible> op_devices(const OpGraphSpec& graph, const std::vector<PlacementRule>& rules,
                                     std::vector<int>* devices) {
  devices->assign(graph.ops.size(), -1);
  std::vector<int> best(graph.ops.size(), -1);
  std::vector<bool> used(rules.size(), false);
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    for (size_t r = 0; r < rules.size(); ++r) {
      const int len = match_length(rules[r].ops, graph.ops[i].name);
      if (len > best[i]) best[i] = len, (*devices)[i] = static_cast<int>(r);
    }
    if ((*devices)[i] < 0) {
      return placement_error("op '" + graph.ops[i].name +
                             "' matches no placement key; name it, a prefix of it, or add \"*\"");
    }
    used[(*devices)[i]] = true;
    (*devices)[i] = rules[(*devices)[i]].device;
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (!used[r]) {
      return placement_error("placement key '" + rules[r].ops + "' takes no op of the model");
    }
  }
  int highest = 0;
  for (const PlacementRule& r : rules) highest = std::max(highest, r.device);
  for (int d = 0; d <= highest; ++d) {
    if (std::find(devices->begin(), devices->end(), d) == devices->end()) {
      return placement_error("device " + std::to_string(d) + " of " + std::to_string(highest + 1) +
                             " holds no op; number the devices 0.." + std::to_string(highest) +
                             " without gaps");
    }
  }
  return std::nullopt;
}

std::vector<PlacedDevice> placed_devices(const Block& block, const OpGraphSpec& graph,
                                         Recompute mode, int devices) {
  const LayerGraph& g = block.graph;
  std::vector<int> producer(g.tensors.size(), -1);
  for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
    if (g.ops[i].output >= 0) producer[g.ops[i].output] = i;
  }
  std::vector<PlacedDevice> out(devices);
  for (const LayerOp& op : g.ops) {
    PlacedDevice& d = out[op.device];
    ++d.ops;
    if (op.source_op >= 0) d.params += graph.ops[op.source_op].params;
    d.peak_transient_B = std::max(d.peak_transient_B, op.workspace_B);
  }
  for (int d = 0; d < devices; ++d) {
    out[d].activation_B = held_bytes(g, producer, d, mode);
    if (mode != Recompute::kNone) {
      out[d].peak_transient_B = std::max(
          out[d].peak_transient_B, held_bytes(g, producer, d, Recompute::kNone) - out[d].activation_B);
    }
  }
  return out;
}

}  // namespace stratasim
