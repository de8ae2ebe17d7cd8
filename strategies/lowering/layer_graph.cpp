#include "strategies/lowering/layer_graph.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

std::string_view comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::kAllReduce: return "all-reduce";
    case CommKind::kAllGather: return "all-gather";
    case CommKind::kReduceScatter: return "reduce-scatter";
    case CommKind::kAllToAll: return "all-to-all";
    case CommKind::kBroadcast: return "broadcast";
    case CommKind::kHaloExchange: return "halo exchange";
  }
  return "?";
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kRecompute: return "recompute";
  }
  return "?";
}

}  // namespace stratasim
