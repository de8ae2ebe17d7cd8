// The iteration program expanded by the pipeline schedule into a graph of nodes per pipeline
// rank, in a JSON form close to Chakra's execution trace (node types COMP_NODE,
// COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE; data_deps and ctrl_deps; attributes named
// as Chakra names them: num_ops, tensor_size, comm_type, comm_size, comm_src, comm_dst,
// comm_tag). The format is documented in docs/iteration_graph.md.
#pragma once

#include <string>

#include "strategies/lowering/plan.h"
#include "strategies/pipeline/schedule_timing.h"

namespace stratasim {

inline constexpr int kIterationGraphVersion = 1;

// The whole graph as one JSON document (stratasim explain --graph writes it). `durations`:
// the stage durations the engines time (sim/cost stage_costs), for a schedule whose op order
// depends on them (ZB-V); null: its unit-cost order.
std::string iteration_graph_json(const Plan& plan, const StageDurations* durations = nullptr);

}  // namespace stratasim
