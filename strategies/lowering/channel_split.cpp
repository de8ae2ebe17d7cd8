#include "strategies/lowering/channel_split.h"

#include <map>
#include <string>
#include <vector>

namespace stratasim {

void insert_channel_exchanges(LayerGraph& g, const OpGraphSpec& spec, int tp, double micro_batch,
                              double element_bytes) {
  if (tp <= 1) return;
  const std::vector<char> split = channel_split(spec);
  const int n = static_cast<int>(spec.ops.size());
  std::map<int, int> gathered;  // channel-split tensor -> the whole copy its all-gather writes
  std::vector<LayerOp> ops;
  ops.reserve(g.ops.size() * 2);
  for (int i = 0; i < n; ++i) {
    const GraphOp& op = spec.ops[i];
    LayerOp reader = g.ops[i];
    const bool loss = op.kind == GraphOpKind::kLoss;
    if (holds_filters(op) || loss) {
      for (size_t j = 0; j < op.inputs.size() && j < kMaxOpInputs; ++j) {
        const int in = op.inputs[j];
        const int tensor = reader.inputs[j];
        if (in < 0 || !split[in] || tensor < 0) continue;
        auto it = gathered.find(tensor);
        if (it == gathered.end()) {
          LayerOp x;
          x.name = "channel_gather";
          x.cls = OpClass::kCollective;
          x.comm = CommKind::kAllGather;
          x.comm_bytes = spec.ops[in].output_elements * micro_batch * element_bytes;  // the whole tensor
          x.comm_phases = loss ? CommPhases::kForwardOnly : CommPhases::kBoth;
          x.group = GroupKind::kTensor;
          x.device = reader.device;
          x.inputs[0] = static_cast<int16_t>(tensor);
          g.tensors.push_back(TensorInfo{x.comm_bytes, x.comm_bytes});
          x.output = static_cast<int16_t>(g.tensors.size() - 1);
          it = gathered.emplace(tensor, x.output).first;
          ops.push_back(x);
        }
        reader.inputs[j] = static_cast<int16_t>(it->second);
      }
    }
    ops.push_back(reader);
  }
  g.ops = std::move(ops);
}

double channel_split_params(const OpGraphSpec& spec, int tp) {
  const std::vector<char> split = channel_split(spec);
  double params = 0;
  for (size_t i = 0; i < spec.ops.size(); ++i) {
    const bool divided = tp > 1 && params_split(spec, split, static_cast<int>(i));
    params += spec.ops[i].params / (divided ? tp : 1);
  }
  return params;
}

std::optional<Infeasible> check_channel_split(const Strategy& s) {
  if (s.tp <= 1) return std::nullopt;
  const std::string tp = "tp=" + std::to_string(s.tp) + " splits an operator graph's channels (filter parallelism)";
  if (s.sequence_parallel) {
    return Infeasible{InfeasibleReason::kModel, tp + "; sequence parallelism is a transformer's", "sequence_parallel"};
  }
  if (s.pp > 1) {
    return Infeasible{InfeasibleReason::kModel, tp + " on one pipeline stage only: use pp=1 with tp > 1", "tp"};
  }
  if (s.cp > 1) {
    return Infeasible{InfeasibleReason::kModel, tp + ", not together with a spatial split (cp > 1)", "tp"};
  }
  if (!s.placement.empty()) {
    return Infeasible{InfeasibleReason::kModel, tp + ", not together with op placement", "tp"};
  }
  return std::nullopt;
}

}  // namespace stratasim
