#include "strategies/lowering/lower_checks.h"

#include <string>

#include "strategies/lowering/channel_split.h"
#include "strategies/lowering/spatial_split.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

std::string str(long long v) { return std::to_string(v); }

std::optional<Infeasible> check_tp_divides(const TransformerSpec& t, int tp) {
  if (t.heads % tp != 0) {
    return Infeasible{InfeasibleReason::kTensorParallel,
                      "tp=" + str(tp) + " does not divide heads=" + str(t.heads), "tp"};
  }
  if (t.kv_heads_or_heads() % tp != 0) {
    return Infeasible{InfeasibleReason::kTensorParallel,
                      "tp=" + str(tp) + " does not divide kv_heads=" + str(t.kv_heads_or_heads()), "tp"};
  }
  if (!t.moe.enabled() && t.ffn_or_default() % tp != 0) {
    return Infeasible{InfeasibleReason::kTensorParallel,
                      "tp=" + str(tp) + " does not divide ffn_hidden=" + str(t.ffn_or_default()), "tp"};
  }
  if (t.moe.shared_experts > 0 && (static_cast<long long>(t.moe.shared_experts) * t.shared_ffn()) % tp != 0) {
    return Infeasible{InfeasibleReason::kTensorParallel,
                      "tp=" + str(tp) + " does not divide the shared experts' width " +
                          str(static_cast<long long>(t.moe.shared_experts) * t.shared_ffn()), "tp"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Infeasible> check_degrees(const Strategy& s, const HardwareModel& hw, int* dp) {
  const long long devices = hw.num_devices;
  const int mp = s.placement_devices();
  const long long tp_pp = static_cast<long long>(s.tp) * s.pp * s.cp * mp;
  const std::string cp = std::string(s.cp > 1 ? "*cp" : "") + (mp > 1 ? "*placement devices" : ""),
                    cp_value = (s.cp > 1 ? "*" + str(s.cp) : "") + (mp > 1 ? "*" + str(mp) : "");
  if (s.dp == 0) {
    if (devices % tp_pp != 0) {
      return Infeasible{InfeasibleReason::kDeviceCount,
                        "tp*pp" + cp + "=" + str(tp_pp) + " does not divide devices=" + str(devices), "dp"};
    }
    *dp = static_cast<int>(devices / tp_pp);
    return std::nullopt;
  }
  if (tp_pp * s.dp != devices) {
    return Infeasible{InfeasibleReason::kDeviceCount,
                      "tp*pp" + cp + "*dp=" + str(s.tp) + "*" + str(s.pp) + cp_value + "*" + str(s.dp) + "=" +
                          str(tp_pp * s.dp) + " differs from devices=" + str(devices), "dp"};
  }
  *dp = s.dp;
  return std::nullopt;
}

// Context parallelism: a transformer's sequence in 2 cp chunks (each rank takes one from each
// end, so causal attention work is equal on every rank: Megatron-Core's load balancing), on
// FlashAttention kernels (ring attention runs them block by block).
static std::optional<Infeasible> check_context_parallel(const ModelSpec& m, const Strategy& s) {
  if (s.cp == 1) return std::nullopt;
  if (m.family == ModelFamily::kOpGraph) {  // spatial parallelism (spatial_split.h)
    if (s.cp_comm != CpComm::kRing) {
      return Infeasible{InfeasibleReason::kContextParallel,
                        "cp on an operator graph splits its rows with halo exchanges; cp_comm a2a (Ulysses) "
                        "and all_gather are attention's",
                        "cp_comm"};
    }
    if (!s.placement.empty()) {
      return Infeasible{InfeasibleReason::kContextParallel,
                        "a spatial split (cp) of a graph placed op by op (placement) is not modelled", "cp"};
    }
    return check_spatial_split(m.graph, s.cp);
  }
  if (m.transformer.seq_len % (2 * s.cp) != 0) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "2*cp=" + str(2 * s.cp) + " does not divide seq_len=" + str(m.transformer.seq_len) +
                          " (load-balanced causal chunks)", "cp"};
  }
  if (!s.fusion.flash_attention) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "context parallelism runs ring attention on FlashAttention kernels; set fusion.flash_attention", "cp"};
  }
  const TransformerSpec& t = m.transformer;
  if (t.windowed_share() > 0 && s.cp_comm != CpComm::kAllToAll) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "ring and all-gather attention over sliding-window layers (model.sliding_window) is not modelled; "
                      "use cp_comm a2a (Ulysses: each rank attends whole sequences of its heads)", "cp_comm"};
  }
  if (t.mla.enabled() && s.cp_comm == CpComm::kAllToAll) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "Ulysses (cp_comm a2a) with multi-head latent attention is not modelled; use cp_comm ring", "cp_comm"};
  }
  const long long group = static_cast<long long>(s.tp) * s.cp;
  if (s.cp_comm == CpComm::kAllToAll && (t.heads % group != 0 || t.kv_heads_or_heads() % group != 0)) {
    return Infeasible{InfeasibleReason::kContextParallel,
                      "Ulysses (cp_comm a2a) splits heads over tp*cp=" + str(group) +
                          ", which must divide heads=" + str(t.heads) + " and kv_heads=" +
                          str(t.kv_heads_or_heads()), "cp_comm"};
  }
  return std::nullopt;
}

// Mixture of experts: the ep ranks are folded over the stage's tp*cp*dp ranks (Megatron-Core's
// MoE parallel folding), each holding experts/ep whole experts. With tp > 1 the tokens entering
// the MoE layer are the sequence-parallel shard of each tp rank (Megatron-Core requires
// sequence parallelism with MoE and tp > 1).
static std::optional<Infeasible> check_experts(const ModelSpec& m, const Strategy& s, int dp) {
  const bool moe = m.family != ModelFamily::kOpGraph && m.transformer.moe.enabled();
  if (!moe) {
    if (s.ep == 1) return std::nullopt;
    return Infeasible{InfeasibleReason::kExpertParallel,
                      "ep=" + str(s.ep) + " splits experts, but this model has none (set model.moe)", "ep"};
  }
  const MoeSpec& e = m.transformer.moe;
  if (e.experts % s.ep != 0) {
    return Infeasible{InfeasibleReason::kExpertParallel,
                      "ep=" + str(s.ep) + " does not divide experts=" + str(e.experts), "ep"};
  }
  const long long ranks = static_cast<long long>(s.tp) * s.cp * dp;
  if (ranks % s.ep != 0) {
    return Infeasible{InfeasibleReason::kExpertParallel,
                      "ep=" + str(s.ep) + " does not divide tp*cp*dp=" + str(ranks) +
                          " (the expert-parallel ranks are folded over a stage's ranks)", "ep"};
  }
  if (e.first_dense_layers >= m.transformer.layers) {
    return Infeasible{InfeasibleReason::kModel,
                      "moe.first_dense_layers=" + str(e.first_dense_layers) + " leaves no layer with experts (layers=" +
                          str(m.transformer.layers) + ")"};
  }
  if (s.zero_stage >= 2 && s.shard_group > 0) {
    return Infeasible{InfeasibleReason::kExpertParallel,
                      "ZeRO-" + str(s.zero_stage) + " over a shard group (shard_group=" + str(s.shard_group) +
                          ") of a mixture-of-experts model is not modelled yet (which ranks shard the experts "
                          "is the trainer's choice); shard over all of dp (shard_group 0)",
                      "shard_group"};
  }
  if (s.tp > 1 && !s.sequence_parallel) {
    return Infeasible{InfeasibleReason::kExpertParallel,
                      "mixture of experts with tp=" + str(s.tp) +
                          " needs sequence_parallel (each tp rank routes its own tokens)", "sequence_parallel"};
  }
  return std::nullopt;
}

// HSDP: the shard group divides the data-parallel ranks (dp x cp) and shards something.
static std::optional<Infeasible> check_shard_group(const Strategy& s, int dp) {
  if (s.shard_group == 0) return std::nullopt;
  const long long ranks = static_cast<long long>(dp) * s.cp;
  if (s.zero_stage == 0) {
    return Infeasible{InfeasibleReason::kModel,
                      "shard_group=" + str(s.shard_group) + " shards ZeRO/FSDP states; zero_stage is 0", "shard_group"};
  }
  if (ranks % s.shard_group != 0) {
    return Infeasible{InfeasibleReason::kDeviceCount,
                      "shard_group=" + str(s.shard_group) + " does not divide the data-parallel ranks dp*cp=" +
                          str(ranks), "shard_group"};
  }
  return std::nullopt;
}

namespace {

// An explicit stage_layers list: one count per stage of the chain, summing to the layers, and
// not beside first_stage_layers/last_stage_layers (which it replaces).
std::optional<Infeasible> check_stage_layers(const Strategy& s, int layers, int stages) {
  if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers lists every stage's layers; drop first_stage_layers/last_stage_layers",
                      "stage_layers"};
  }
  if (static_cast<int>(s.stage_layers.size()) != stages) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers lists " + str(static_cast<int>(s.stage_layers.size())) +
                          " stages where the pipeline has " + str(stages) + " (pp*interleave)",
                      "stage_layers"};
  }
  long long sum = 0;
  for (int l : s.stage_layers) sum += l;
  if (sum != layers) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers sum to " + std::to_string(sum) + " where the model has " + str(layers) +
                          " layers", "stage_layers"};
  }
  return std::nullopt;
}

// An operator graph's pipeline stages are contiguous parts of its op list along one chain of
// virtual stages: every schedule but those whose chunks run in two directions (DualPipe's two
// chains, ZB-V's V), whose boundaries are not the op list's.
std::optional<Infeasible> check_op_graph_pipeline(const Strategy& s) {
  if (s.pp == 1) return std::nullopt;
  if (!s.placement.empty()) {
    return Infeasible{InfeasibleReason::kModel,
                      "placement and pp > 1 together: an operator graph is split either by placement or "
                      "into pipeline stages", "placement"};
  }
  if (s.schedule == ScheduleKind::kDualPipe || s.schedule == ScheduleKind::kZeroBubbleV) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "schedule " + std::string(schedule_name(s.schedule)) +
                          " on an operator graph: its chunks run the op list in two directions, which is not "
                          "modelled (gpipe, 1f1b, interleaved, zb_h1, zb_h2 and pipedream_async are)",
                      "schedule"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Infeasible> check_model_split(const ModelSpec& m, const Strategy& s, int dp) {
  if (auto bad = check_shard_group(s, dp)) return bad;
  if (auto bad = check_context_parallel(m, s)) return bad;
  if (auto bad = check_experts(m, s, dp)) return bad;
  if (s.streams < 1 || s.streams > 64) {
    return Infeasible{InfeasibleReason::kModel, "streams=" + str(s.streams) + " is not in 1..64", "streams"};
  }
  if (!s.placement.empty() && m.family != ModelFamily::kOpGraph) {
    return Infeasible{InfeasibleReason::kModel,
                      "placement puts an operator graph's ops on devices; a transformer splits by tp, pp, cp and ep",
                      "placement"};
  }
  if (s.recompute_layers < 0 || (s.recompute_layers > 0 && s.recompute != Recompute::kFull)) {
    return Infeasible{InfeasibleReason::kModel,
                      "recompute_layers=" + str(s.recompute_layers) + " with recompute " +
                          std::string(recompute_name(s.recompute)) +
                          ": it counts the layers of each stage that recompute whole (recompute full)",
                      "recompute_layers"};
  }
  if (s.recompute_layers > 0 && m.family == ModelFamily::kOpGraph) {
    return Infeasible{InfeasibleReason::kModel,
                      "recompute_layers counts transformer layers; an operator graph recomputes whole "
                      "(recompute full) or not at all", "recompute_layers"};
  }
  if (m.family == ModelFamily::kOpGraph) {
    if (s.pp == 1 && (s.stage_split == StageSplit::kExplicit || s.stage_split == StageSplit::kBalanced)) {
      return Infeasible{InfeasibleReason::kModel,
                        "stage_layers splits an operator graph's ops over pipeline stages; pp is 1",
                        "stage_layers"};
    }
    if (auto bad = check_channel_split(s)) return bad;
    if (s.sequence_parallel) {
      return Infeasible{InfeasibleReason::kModel,
                        "sequence parallelism splits a transformer's norms and dropouts by token; an operator "
                        "graph splits by tp (channels), cp (rows), pp and placement", "sequence_parallel"};
    }
    return check_op_graph_pipeline(s);
  }
  if (s.streams > 1) {
    return Infeasible{InfeasibleReason::kModel,
                      "streams=" + str(s.streams) + " runs an operator graph's independent branches concurrently; "
                      "a transformer's kernels form one chain per layer (use streams 1)", "streams"};
  }
  const TransformerSpec& t = m.transformer;
  if (auto bad = check_tp_divides(t, s.tp)) return bad;
  if (t.mla.enabled() && !s.fusion.flash_attention) {
    return Infeasible{InfeasibleReason::kModel,
                      "multi-head latent attention runs on a fused attention kernel (different query/key and value "
                      "head widths); set fusion.flash_attention", "fusion"};
  }
  if (s.sequence_parallel && s.tp == 1) {
    return Infeasible{InfeasibleReason::kSequenceParallel, "sequence parallelism needs tp > 1", "sequence_parallel"};
  }
  if (s.sequence_parallel && t.seq_len % s.tp != 0) {
    return Infeasible{InfeasibleReason::kSequenceParallel,
                      "tp=" + str(s.tp) + " does not divide seq_len=" + str(t.seq_len), "sequence_parallel"};
  }
  // The stages the layers split over: DualPipe's two directions each hold the whole model.
  const int vstages = s.schedule == ScheduleKind::kDualPipe ? s.pp : s.pp * pipeline_chunks(s);
  // The embedding and the loss counted as layers in the split (Megatron-Core's
  // account_for_*_in_pipeline_split): the first and last stages may then hold none.
  const int edges = s.embedding_as_layer + s.loss_as_layer;
  if (edges > 0) {
    if (s.stage_split == StageSplit::kExplicit || s.stage_split == StageSplit::kBalanced ||
        s.first_stage_layers > 0 || s.last_stage_layers > 0) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        "account_for_embedding/loss_in_pipeline_split shape the even split; they cannot be "
                        "combined with stage_layers or first_stage_layers/last_stage_layers", "pp"};
    }
    if (t.layers + edges < vstages) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        "pp*interleave=" + str(vstages) + " exceeds layers=" + str(t.layers) + " plus " +
                            str(edges) + " counted edge(s)", "pp"};
    }
    if ((t.layers + edges) % vstages != 0 && !s.uneven_stages) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        (s.interleave > 1 ? "pp*interleave=" : "pp=") + str(vstages) + " does not divide layers=" +
                            str(t.layers) + " plus " + str(edges) +
                            " counted edge(s) (set uneven_stages to allow unequal stages)", "pp"};
    }
  }
  if (edges == 0 && t.layers < vstages) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "pp*interleave=" + str(vstages) + " exceeds layers=" + str(t.layers), "pp"};
  }
  if (edges > 0) {
    // checked above
  } else if (s.stage_split == StageSplit::kExplicit) {
    if (auto bad = check_stage_layers(s, t.layers, vstages)) return bad;
  } else if (s.stage_split == StageSplit::kBalanced && (s.first_stage_layers > 0 || s.last_stage_layers > 0)) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers \"balanced\" chooses every stage's layers; it cannot be combined with "
                      "first_stage_layers/last_stage_layers", "stage_layers"};
  } else if (s.stage_split == StageSplit::kBalanced) {
    // Balanced shares are uneven by design; every stage keeps at least one layer.
  } else if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    // Explicit first/last stages: the middle stages split what is left.
    const int middle_stages = vstages - (s.first_stage_layers > 0) - (s.last_stage_layers > 0);
    const int rest = t.layers - s.first_stage_layers - s.last_stage_layers;
    if (vstages < 2) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        "first_stage_layers/last_stage_layers need pp*interleave >= 2", "pp"};
    }
    if (rest < middle_stages || (middle_stages == 0 && rest != 0)) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        "first_stage_layers=" + str(s.first_stage_layers) + " and last_stage_layers=" +
                            str(s.last_stage_layers) + " leave " + str(rest) + " of " +
                            str(t.layers) + " layers for " + str(middle_stages) + " other stages",
                        "pp"};
    }
    if (middle_stages > 0 && rest % middle_stages != 0 && !s.uneven_stages) {
      return Infeasible{InfeasibleReason::kPipelineParallel,
                        str(middle_stages) + " middle stages do not divide the other " + str(rest) +
                            " layers (set uneven_stages to allow unequal stages)",
                        "pp"};
    }
  } else if (t.layers % vstages != 0 && !s.uneven_stages) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      (s.interleave > 1 ? "pp*interleave=" : "pp=") + str(vstages) +
                          " does not divide layers=" + str(t.layers) +
                          " (set uneven_stages to allow unequal stages)", "pp"};
  }
  if (!s.fusion.graph_groups.empty()) {
    return Infeasible{InfeasibleReason::kModel,
                      "fusion.graph_groups applies to operator-graph models only", "fusion.graph_groups"};
  }
  return std::nullopt;
}

std::optional<Infeasible> check_batch_and_schedule(const Strategy& s, int dp, int* micro_batches) {
  const long long per_step = static_cast<long long>(dp) * s.micro_batch;
  if (s.global_batch % per_step != 0) {
    return Infeasible{InfeasibleReason::kBatch,
                      "global_batch=" + str(s.global_batch) + " is not a multiple of dp*micro_batch=" +
                          str(dp) + "*" + str(s.micro_batch) + "=" + str(per_step), "global_batch"};
  }
  *micro_batches = static_cast<int>(s.global_batch / per_step);
  if (s.schedule == ScheduleKind::kInterleaved1F1B && s.pp == 1) {
    return Infeasible{InfeasibleReason::kSchedule,
                      "interleaved 1F1B needs a pipeline (pp > 1); with pp=1 use 1f1b", "schedule"};
  }
  if (s.schedule == ScheduleKind::kDualPipe && s.interleave > 2) {
    return Infeasible{InfeasibleReason::kSchedule,
                      "DualPipe runs 2 chunks per rank, one per direction; leave interleave at 1 "
                      "(interleave=" + str(s.interleave) + ")", "interleave"};
  }
  if (s.schedule == ScheduleKind::kZeroBubbleV && s.interleave > 2) {
    return Infeasible{InfeasibleReason::kSchedule,
                      "ZB-V runs 2 chunks per rank in a V; leave interleave at 1 (interleave=" +
                          str(s.interleave) + ")", "interleave"};
  }
  if (auto rule = schedule_rule_violation(s.schedule, s.pp, *micro_batches, pipeline_chunks(s))) {
    return Infeasible{InfeasibleReason::kSchedule, *rule, "interleave"};
  }
  return std::nullopt;
}

std::optional<Infeasible> check_workload(const Strategy& s) {
  if (s.workload != Workload::kInference) return std::nullopt;
  if (s.zero_stage > 0) {
    return Infeasible{InfeasibleReason::kModel,
                      "inference keeps no gradients or optimizer states for ZeRO to shard "
                      "(zero_stage=" + str(s.zero_stage) + "); set zero_stage 0", "zero_stage"};
  }
  if (s.recompute != Recompute::kNone) {
    return Infeasible{InfeasibleReason::kModel,
                      "inference runs no backward, so nothing is recomputed (recompute=" +
                          std::string(recompute_name(s.recompute)) + "); set recompute none",
                      "recompute"};
  }
  if (s.interleave > 1) {
    return Infeasible{InfeasibleReason::kSchedule,
                      "inference streams micro-batches forward through the pp stages, one chunk "
                      "per rank (interleave=" + str(s.interleave) + "); set interleave 1",
                      "interleave"};
  }
  return std::nullopt;
}

// Optimizer offload (Strategy::offload) keeps a ZeRO shard of the optimizer in host memory: it
// needs a training step, a ZeRO stage that shards the optimizer (DeepSpeed offloads ZeRO's
// partition) and a host the cluster describes.
std::optional<Infeasible> check_tasks(const ModelSpec& m, const HardwareModel& hw) {
  if (m.family != ModelFamily::kOpGraph) return std::nullopt;
  for (const GraphOp& op : m.graph.ops) {
    if (op.kind != GraphOpKind::kTask) continue;
    for (int g = 0; g < std::max(1, static_cast<int>(hw.groups.size())); ++g) {
      const DeviceSpec& d = hw.groups.empty() ? hw.device : hw.groups[g].device;
      if (d.task_flops <= 0) {
        return Infeasible{InfeasibleReason::kModel,
                          "op '" + op.name + "' is a single-threaded task and device '" + d.name +
                              "' has no task rate (device.task; stratasim calibrate --device cpu measures one)"};
      }
    }
  }
  return std::nullopt;
}

std::optional<Infeasible> check_offload(const Strategy& s, const HardwareModel& hw) {
  if (s.offload == Offload::kNone) return std::nullopt;
  if (s.workload == Workload::kInference) {
    return Infeasible{InfeasibleReason::kModel,
                      "inference keeps no optimizer states to offload; set offload none", "offload"};
  }
  if (s.zero_stage < 1) {
    return Infeasible{InfeasibleReason::kModel,
                      "optimizer offload moves ZeRO's optimizer partition to the host (ZeRO-Offload); "
                      "set zero_stage 1, 2 or 3", "offload"};
  }
  if (hw.node.host_link.bandwidth_Bps <= 0 || hw.node.host_memory_bandwidth_Bps <= 0) {
    return Infeasible{InfeasibleReason::kTopology,
                      "cluster '" + hw.name + "' describes no host to offload to (node.host_link and "
                      "node.host_memory_bandwidth)", "offload"};
  }
  return std::nullopt;
}

std::optional<Infeasible> check_topology(const Strategy& s, const HardwareModel& hw) {
  const int node = hw.node.devices;
  const bool inside = s.tp <= node && node % s.tp == 0;
  const bool whole_nodes = s.tp > node && s.tp % node == 0;
  if (!inside && !whole_nodes) {
    return Infeasible{InfeasibleReason::kTopology,
                      "tp=" + str(s.tp) + " groups would straddle nodes of " + str(node) +
                          " devices (tp must divide the node or be a multiple of it)", "tp"};
  }
  return std::nullopt;
}

std::optional<Infeasible> check_precision(const Strategy& s, const HardwareModel& hw) {
  if (hw.device.peak_flops[static_cast<int>(s.dtype)] <= 0) {
    return Infeasible{InfeasibleReason::kPrecision,
                      std::string(dtype_name(s.dtype)) + " is not supported by " + hw.device.name, "dtype"};
  }
  for (const DeviceGroup& g : hw.groups) {  // a mixed cluster: every group's device
    if (g.device.peak_flops[static_cast<int>(s.dtype)] <= 0) {
      return Infeasible{InfeasibleReason::kPrecision,
                        std::string(dtype_name(s.dtype)) + " is not supported by " + g.device.name +
                            " (group '" + g.name + "' of the mixed cluster)", "dtype"};
    }
  }
  return std::nullopt;
}

std::optional<Infeasible> check_autocast(const ModelSpec& m, const Strategy& s) {
  if (!s.autocast_weights) return std::nullopt;
  if (s.dtype != DType::kBf16 && s.dtype != DType::kFp16) {
    return Infeasible{InfeasibleReason::kPrecision,
                      "autocast_weights casts fp32 parameters to a 16-bit dtype (bf16 or fp16), "
                      "not " + std::string(dtype_name(s.dtype)),
                      "dtype"};
  }
  if (m.family == ModelFamily::kOpGraph) {
    return Infeasible{InfeasibleReason::kModel,
                      "autocast_weights models a transformer's weight casts; an operator graph's "
                      "are not modelled",
                      "autocast_weights"};
  }
  return std::nullopt;
}

std::optional<Infeasible> check_mixed_cluster(const HardwareModel& hw) {
  if (!hw.mixed()) return std::nullopt;
  long long devices = 0;
  for (const DeviceGroup& g : hw.groups) devices += g.num_devices;
  if (devices != hw.num_devices) {
    return Infeasible{InfeasibleReason::kDeviceCount,
                      "a mixed cluster has the devices of its groups (" + std::to_string(devices) + "), not " +
                          str(hw.num_devices), "devices"};
  }
  return std::nullopt;
}

}  // namespace stratasim
