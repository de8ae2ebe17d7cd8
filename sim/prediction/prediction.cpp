#include "sim/prediction/prediction.h"
#include "sim/prediction/prediction_json.h"

namespace stratasim {

std::string_view comm_category_name(CommCategory c) {
  switch (c) {
    case CommCategory::kTensorParallel: return "tp";
    case CommCategory::kDataParallel: return "dp";
    case CommCategory::kZero: return "zero";
    case CommCategory::kPipelineP2P: return "pp";
    case CommCategory::kEmbeddingSync: return "embedding";
    case CommCategory::kContextParallel: return "cp";
    case CommCategory::kExpertParallel: return "ep";
    case CommCategory::kPlacement: return "mp";
    case CommCategory::kFp8Amax: return "fp8_amax";
  }
  return "?";
}

std::string_view event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::kForward: return "forward";
    case EventKind::kBackward: return "backward";
    case EventKind::kRecompute: return "recompute";
    case EventKind::kComm: return "comm";
    case EventKind::kIdle: return "idle";
    case EventKind::kOptimizer: return "optimizer";
    case EventKind::kWeightGrad: return "weight_grad";
  }
  return "?";
}

std::string CommStat::description() const {
  std::string s = what;
  if (group_size > 0) {
    s += " over " + std::to_string(group_size) + " ranks (" + std::to_string(group_nodes) +
         (group_nodes == 1 ? " node)" : " nodes)");
  }
  return s;
}

void set_runtime_reserve(MemoryBreakdown& m, double reserved_memory_B, double cuda_context_B) {
  m.context_B = cuda_context_B;
  m.workspace_B = reserved_memory_B - cuda_context_B;
}

Json to_json(const MemoryBreakdown& m) {
  Json j{{"weights_B", m.weights_B},         {"gradients_B", m.gradients_B},
              {"optimizer_B", m.optimizer_B},     {"activations_B", m.activations_B},
              {"transient_B", m.transient_B},     {"buffers_B", m.buffers_B},
              {"workspace_B", m.workspace_B},     {"fragmentation_B", m.fragmentation_B},
              {"context_B", m.context_B},
              {"allocated_B", m.allocated()},     {"reserved_B", m.reserved()},
              {"total_B", m.total()}};
  if (m.host_B > 0) j["host_B"] = m.host_B;
  return j;
}

Json to_json(const Prediction& p) {
  Json comms = Json::array();
  for (const CommStat& c : p.comms) {
    comms.push_back({{"category", std::string(comm_category_name(c.category))},
                     {"description", c.description()}, {"bytes", c.bytes},
                     {"total_s", c.total_s}, {"exposed_s", c.exposed_s}});
  }
  Json memory = Json::array();
  for (const MemoryBreakdown& m : p.rank_memory) memory.push_back(to_json(m));
  Json timeline = Json::array();
  for (const TimelineEvent& e : p.timeline) {
    Json event{{"device", e.device}, {"kind", std::string(event_kind_name(e.kind))},
               {"micro_batch", e.micro_batch}, {"chunk", e.chunk},
               {"start_s", e.start_s}, {"end_s", e.end_s}, {"name", e.name}};
    if (e.bytes > 0) event["bytes"] = e.bytes;
    timeline.push_back(std::move(event));
  }
  Json j{{"engine", p.engine},
              {"iteration_s", p.iteration_s},
              {"tokens_per_s", p.tokens_per_s},
              {"samples_per_s", p.samples_per_s},
              {"model_flops", p.model_flops},
              {"hardware_flops", p.hardware_flops},
              {"model_flops_per_device_s", p.model_flops_per_device_s},
              {"hardware_flops_per_device_s", p.hardware_flops_per_device_s},
              {"mfu", p.mfu},
              {"hfu", p.hfu},
              {"compute_s", p.compute_s},
              {"recompute_s", p.recompute_s},
              {"bubble_s", p.bubble_s},
              {"bubble_fraction", p.bubble_fraction},
              {"uniform_bubble_fraction", p.uniform_bubble_fraction},
              {"pipeline_s", p.pipeline_s},
              {"optimizer_s", p.optimizer_s},
              {"forward_s", p.forward_s},
              {"backward_s", p.backward_s},
              {"comms", comms},
              {"comm_total_s", p.comm_total_s},
              {"comm_exposed_s", p.comm_exposed_s},
              {"rank_memory", memory},
              {"peak_rank", p.peak_rank},
              {"peak_memory_B", p.peak_memory_B},
              {"peak_reserved_B", p.peak_reserved_B},
              {"peak_allocated_B", p.peak_allocated_B},
              {"capacity_B", p.capacity_B},
              {"fits", p.fits},
              {"timeline", timeline},
              {"notes", p.notes}};
  if (p.latency_s > 0) j["latency_s"] = p.latency_s;
  return j;
}

}  // namespace stratasim
