#include "strategies/lowering/lower.h"

#include <algorithm>

#include "strategies/lowering/block_cache.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/edge_blocks.h"
#include "strategies/lowering/lower_checks.h"
#include "strategies/lowering/mixed_cluster.h"
#include "strategies/lowering/op_graph_stages.h"
#include "strategies/lowering/placement.h"
#include "strategies/lowering/channel_split.h"
#include "strategies/lowering/spatial_split.h"

namespace stratasim {
namespace {

LayerShape shape_of(const Strategy& s, bool causal) {
  return LayerShape{.micro_batch = s.micro_batch, .tp = s.tp, .cp = s.cp, .cp_comm = s.cp_comm,
                    .cp_merge = s.cp_merge,
                    .cp_gather_rotate = s.cp_comm == CpComm::kRing && s.cp_rotate == CpRotate::kAllGather,
                    .cp_overlap = s.cp_overlap,
                    .kv_repeat = s.kv_repeat, .ep = s.ep,
                    .sequence_parallel = s.sequence_parallel,
                    .sp_reorder_copies = s.sequence_parallel && s.sp_reorder_copies,
                    .fp8_tp_gather = s.sequence_parallel && s.tp > 1 && s.fp8_tp_all_gather &&
                                     s.dtype == DType::kFp8 && s.fp8_scaling == Fp8Scaling::kTensorwise,
                    .tp_micro_pipeline = s.overlap_tp && s.tp_overlap == TpOverlap::kMicroPipeline,
                    .element_bytes = dtype_bytes(storage_dtype(s.dtype)),
                    .fp8_saved_inputs = s.dtype == DType::kFp8 && s.fp8_saved_inputs, .causal = causal,
                    .forward_only = s.workload == Workload::kInference, .fusion = s.fusion,
                    .recompute_modules = s.recompute_modules,
                    .expert_gemm_streams = s.expert_gemm == ExpertGemm::kMultiStream ? kTeComputeStreams : 0,
                    .expert_sort = s.ep_dispatch == EpDispatch::kAllToAll,
                    .routing_map_gather = s.ep > 1 && s.ep_dispatch == EpDispatch::kHybridEP,
                    .expert_fp8_padding = s.expert_fp8_padding && s.dtype == DType::kFp8 &&
                                          s.ep_dispatch != EpDispatch::kHybridEP,
                    .autocast_weights = s.autocast_weights,
                    .hp_grad_accumulation = s.hp_grad_accumulation};
}

// Explicit op groups from the strategy ("fuse conv1, bn1, relu1"); they must be consecutive.
// `g` holds the model's ops [offset, offset + g.ops.size()) (a pipeline stage's part of an
// operator graph); a group must lie within one such part.
std::optional<Infeasible> apply_graph_groups(const ModelSpec& m, const FusionPlan& f,
                                             LayerGraph& g, int offset = 0) {
  const int end = offset + static_cast<int>(g.ops.size());
  for (size_t gi = 0; gi < f.graph_groups.size(); ++gi) {
    int previous = -1, inside = 0;
    for (const std::string& name : f.graph_groups[gi]) {
      auto it = std::find_if(m.graph.ops.begin(), m.graph.ops.end(),
                             [&](const GraphOp& op) { return op.name == name; });
      if (it == m.graph.ops.end()) {
        return Infeasible{InfeasibleReason::kModel, "fusion group names unknown op '" + name + "'"};
      }
      const int at = static_cast<int>(it - m.graph.ops.begin());
      inside += at >= offset && at < end;
    }
    if (inside == 0) continue;
    if (inside != static_cast<int>(f.graph_groups[gi].size())) {
      return Infeasible{InfeasibleReason::kModel,
                        "fusion group '" + f.graph_groups[gi].front() + "'... spans two pipeline stages",
                        "stage_layers"};
    }
    for (const std::string& name : f.graph_groups[gi]) {
      auto it = std::find_if(m.graph.ops.begin(), m.graph.ops.end(),
                             [&](const GraphOp& op) { return op.name == name; });
      const int index = static_cast<int>(it - m.graph.ops.begin()) - offset;
      if (previous >= 0 && index != previous + 1) {
        return Infeasible{InfeasibleReason::kModel,
                          "fusion group ops must be consecutive; '" + name + "' is not"};
      }
      if (previous >= 0 && g.ops[index].device != g.ops[previous].device) {
        return Infeasible{InfeasibleReason::kModel,
                          "fusion group spans two devices of the placement; '" + name + "' is on device " +
                              std::to_string(g.ops[index].device) + ", '" + m.graph.ops[previous + offset].name +
                              "' on device " + std::to_string(g.ops[previous].device), "placement"};
      }
      g.ops[index].fusion = FusionRule::kGraphGroup;
      g.ops[index].fusion_group = static_cast<int16_t>(1000 + gi);
      previous = index;
    }
  }
  return std::nullopt;
}

// Ops per pipeline stage of an operator graph: the strategy's list, an even count, or
// (balanced, and auto) the split of the ops' estimated times with the smallest slowest stage.
// One count per position of the chain of virtual stages (pp x interleave).
std::vector<int> op_graph_stage_counts(const Plan& plan, const Block& whole) {
  const Strategy& s = plan.strategy;
  const int ops = static_cast<int>(plan.model.graph.ops.size());
  const int parts = plan.stage_map().chain_length();
  if (s.stage_split == StageSplit::kExplicit) return s.stage_layers;
  if (s.stage_split == StageSplit::kEven) {
    std::vector<int> counts(parts, ops / parts);
    for (int i = 0; i < ops % parts; ++i) ++counts[i];
    return counts;
  }
  return min_max_partition(op_time_estimates(whole, plan.hardware.device, s.dtype, ops), parts);
}

std::optional<Infeasible> check_op_graph_counts(const std::vector<int>& counts, int ops, int parts) {
  if (static_cast<int>(counts.size()) != parts) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers lists " + std::to_string(counts.size()) + " stages where the pipeline has " +
                          std::to_string(parts) + " (pp x interleave); an operator graph's stage_layers counts its ops",
                      "stage_layers"};
  }
  long long sum = 0;
  for (int c : counts) sum += c;
  if (sum != ops) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      "stage_layers sum to " + std::to_string(sum) + " ops where the graph has " +
                          std::to_string(ops), "stage_layers"};
  }
  return std::nullopt;
}

// An operator graph over pp pipeline stages (op_graph_stages.h): one block per stage, and
// the bytes each boundary carries per micro-batch.
std::optional<Infeasible> lower_op_graph_stages(Plan& plan, const Block& whole) {
  const Strategy& s = plan.strategy;
  const ModelSpec& m = plan.model;
  const int ops = static_cast<int>(m.graph.ops.size());
  const int parts = plan.stage_map().chain_length();
  if (ops < parts) {
    return Infeasible{InfeasibleReason::kPipelineParallel,
                      (parts == plan.pp ? "pp=" + std::to_string(plan.pp)
                                        : "pp x interleave=" + std::to_string(parts)) +
                          " stages for an operator graph of " + std::to_string(ops) + " ops",
                      "pp"};
  }
  const std::vector<int> counts = op_graph_stage_counts(plan, whole);
  if (auto bad = check_op_graph_counts(counts, ops, parts)) return bad;
  const OpGraphStages split = split_op_graph(m.graph, counts, s.cp);
  const double e = dtype_bytes(storage_dtype(s.dtype));
  for (size_t i = 0; i < split.stages.size(); ++i) {
    auto block = std::make_shared<Block>();
    block->graph = build_op_graph(split.stages[i], shape_of(s, false));
    if (auto bad = apply_graph_groups(m, s.fusion, block->graph, split.stages[i].source_offset)) return bad;
    if (auto bad = insert_spatial_exchanges(block->graph, split.stages[i], s.cp, s.micro_batch, e)) return bad;
    lower_block(*block, s.recompute, s.workload == Workload::kInference);
    for (const GraphOp& op : split.stages[i].ops) block->params += op.params;
    plan.stage_blocks.push_back(std::move(block));
  }
  plan.p2p_bytes = 0;
  for (double elements : split.boundary_elements) {
    plan.boundary_bytes.push_back(elements * s.micro_batch * e);
    plan.p2p_bytes = std::max(plan.p2p_bytes, plan.boundary_bytes.back());
  }
  return std::nullopt;
}

void build_transformer_blocks(Plan& plan) {
  const TransformerSpec& t = plan.model.transformer;
  const Strategy& s = plan.strategy;
  LayerShape shape = shape_of(s, plan.model.family == ModelFamily::kDecoder);
  shape.fp8_weight_gather = plan.fp8_weight_gather;
  // torchao casts the shard before every gather; TE's FP8 parameters are cast at the step.
  if (plan.fp8_weight_gather && !plan.fp8_params && plan.zero_stage == 3) {
    shape.fp8_shard_share = 1.0 / plan.shard;
  }
  if (s.fsdp_copies && plan.zero_stage == 3 && plan.shard > 1) {
    shape.fsdp_gather_element_bytes = plan.fp8_weight_gather ? 1 : plan.weight_bytes_per_param;
    shape.fsdp_reduce_element_bytes = plan.grad_bytes_per_param;
    shape.fsdp_skips_experts = plan.edp == 1;
  }
  // Megatron's block method (Strategy::recompute_layers): the recomputed layers are the layer
  // lowered with full recomputation, the others the layer lowered without.
  const bool some = s.recompute == Recompute::kFull && s.recompute_layers > 0;
  const TransformerBlocks blocks = transformer_blocks(t, shape, some ? Recompute::kNone : s.recompute, s.pp);
  if (some) plan.recomputed_layer = transformer_blocks(t, shape, Recompute::kFull, s.pp).layer;
  plan.layer = blocks.layer;
  plan.dense_layer = blocks.dense_layer;
  plan.embedding = blocks.embedding;
  plan.head = blocks.head;
  plan.tokens_per_micro_batch = double(s.micro_batch) * t.seq_len;
  plan.p2p_bytes = double(s.micro_batch) * t.seq_len * t.hidden * dtype_bytes(storage_dtype(s.dtype)) /
                   s.tp / s.cp;  // scatter/gather optimisation (Narayanan et al. SC21, Sec. 4.1)
}

// Layers split over the positions of a chain (StageMap::position): the embedding at its start,
// the head at its end. DualPipe's two chains each hold the whole model, so virtual stages s
// and p + s hold the same layers (on ranks s and p - 1 - s): each rank twice the parameters.
void assign_stages(Plan& plan) {
  const StageMap map = plan.stage_map();
  const int vstages = map.virtual_stages(), positions = map.chain_length();
  plan.stages.resize(vstages);
  // Layers per stage (mixed_cluster.h): explicit, balanced over a mixed cluster's groups, or
  // even with explicit first/last stages (checked by lower_checks).
  const std::vector<int> counts = stage_layer_counts(plan);
  int next = 0;
  const bool own_blocks = !plan.stage_blocks.empty();  // an operator graph's stages
  for (int i = 0; i < vstages; ++i) {
    VirtualStage& st = plan.stages[i];
    const int pos = map.position(i);
    if (pos == 0) next = 0;
    st.rank = map.rank_of(i);
    st.chunk = i / plan.pp;
    st.first_layer = next;
    st.layers = own_blocks ? 1 : counts[pos];
    if (own_blocks) {
      st.block = pos;
      st.ops = static_cast<int>(plan.stage_blocks[pos]->graph.ops.size());
      next += st.ops;
    } else {
      next += st.layers;
    }
    st.has_embedding = pos == 0 && plan.model.family != ModelFamily::kOpGraph;
    st.has_head = pos == positions - 1 && plan.model.family != ModelFamily::kOpGraph;
    const int dense_end = plan.dense_layer ? plan.model.transformer.moe.first_dense_layers : 0;
    st.dense_layers = std::clamp(dense_end - st.first_layer, 0, st.layers);
    const int routed = st.layers - st.dense_layers;
    st.recomputed_layers = plan.recomputed_layer ? std::min(plan.strategy.recompute_layers, routed) : 0;
    const Block& layer = *plan.layer_of(st);
    st.params = routed * layer.params;
    st.expert_params = routed * layer.expert_params;
    st.activation_B = (routed - st.recomputed_layers) * layer.saved_activation_B * plan.block_repeat;
    if (st.recomputed_layers > 0) st.activation_B += st.recomputed_layers * plan.recomputed_layer->saved_activation_B;
    // Placement: a replica's devices hold different shares; the stage stands for the one with
    // the most parameters (its gradient sync and optimizer step finish last) and the memory
    // model reads every device (plan.placed).
    if (!plan.placed.empty()) st.params = st.activation_B = 0;
    for (const PlacedDevice& d : plan.placed) {
      st.params = std::max(st.params, routed * d.params);
      st.activation_B = std::max(st.activation_B, routed * d.activation_B * plan.block_repeat);
    }
    if (st.dense_layers > 0) {
      st.params += st.dense_layers * plan.dense_layer->params;
      st.activation_B += st.dense_layers * plan.dense_layer->saved_activation_B;
    }
    if (st.has_embedding) {
      st.params += plan.embedding->params;
      st.activation_B += plan.embedding->saved_activation_B;
    }
    if (st.has_head) {
      st.params += plan.head->params;
      st.expert_params += plan.head->expert_params;  // multi-token prediction's routed experts
      st.activation_B += plan.head->saved_activation_B;
    }
  }
}

// Megatron rank order: tp fastest, then dp, then pp. A tp group fills a node first; the
// dp group's members are tp apart, so a node holds devices_per_node / tp of them.
void place_groups(Plan& plan) {
  const int per_node = plan.hardware.node.devices;
  // Placement's mp devices of a replica are consecutive ranks, like tp's (never both: op
  // graphs have tp 1), so data-parallel peers are tp * mp apart.
  const int replica_width = std::min(plan.tp * plan.mp, per_node);
  plan.tp_group = CommGroup{GroupKind::kTensor, plan.tp, std::min(plan.tp, per_node)};
  plan.mp_group = CommGroup{GroupKind::kPlacement, plan.mp, std::min(plan.mp, per_node)};
  // cp ranks are tp apart (rank order tp, cp, dp, pp), so a node holds per_node / tp of them.
  const int tp_in_node = std::min(plan.tp, per_node);
  plan.cp_group = CommGroup{GroupKind::kContext, plan.cp,
                            std::max(1, std::min(plan.cp, per_node / tp_in_node))};
  const int dp_per_node = std::max(1, std::min(plan.dp, per_node / replica_width));
  plan.dp_group = CommGroup{GroupKind::kData, plan.dp, dp_per_node};
  // HSDP: a shard group is `shard` consecutive dp ranks; its replicas are `shard` apart.
  plan.shard_group = CommGroup{GroupKind::kShard, plan.shard, std::min(plan.shard, dp_per_node)};
  plan.replica_group = CommGroup{GroupKind::kReplica, plan.replicas(),
                                 std::max(1, std::min(plan.replicas(), dp_per_node / std::min(plan.shard, dp_per_node)))};
  // Experts (MoE parallel folding, expert tp 1): ep consecutive ranks of the stage exchange
  // tokens; the ranks holding the same experts are ep apart.
  plan.ep_group = CommGroup{GroupKind::kExpert, plan.ep, std::min(plan.ep, per_node)};
  plan.edp_group = CommGroup{GroupKind::kExpertData, plan.edp,
                             std::max(1, std::min(plan.edp, per_node / std::min(plan.ep, per_node)))};
}

void set_state_bytes(Plan& plan) {
  const Strategy& s = plan.strategy;
  // Under torch.autocast (Strategy::autocast_weights) the parameters, their gradients and
  // hence the reductions and gathers of either are fp32, and the optimizer updates them in
  // place: no master copy.
  const double e = s.autocast_weights ? 4 : dtype_bytes(storage_dtype(s.dtype));
  plan.weight_bytes_per_param = e;
  plan.grad_state_bytes_per_param = s.grad_reduce_fp32 ? 4 : e;
  plan.grad_bytes_per_param = s.grad_reduce_fp32 ? 4 : e;
  plan.expert_grad_state_bytes_per_param = plan.grad_state_bytes_per_param;
  // FSDP (Strategy::fsdp_copies) keeps a gradient in its parameter's dtype: the sharded
  // gradient the reduce-scatter leaves is cast to the sharded parameter's (FSDP2
  // foreach_reduce: to orig_dtype), fp32 where that parameter is the fp32 master (TorchTitan),
  // 16-bit where the model is (NeMo AutoModel); so is a parameter FSDP leaves alone, as the
  // routed experts every rank holds whole (edp 1). Only the gradients accumulated unsharded
  // under pipelining (zero3_resident: no gradient sync until the stage's last backward) are
  // upcast to the reduction dtype (FSDPParam.to_accumulated_grad_if_needed).
  if (s.fsdp_copies && s.zero_stage == 3) {
    const double parameter = s.master_weights_fp32 && e < 4 ? 4 : e;
    if (!plan.zero3_resident) plan.grad_state_bytes_per_param = parameter;
    plan.expert_grad_state_bytes_per_param =
        !plan.zero3_resident || plan.edp == 1 ? parameter : plan.grad_state_bytes_per_param;
  }
  // m (+ v for Adam), 4 B each in fp32, 2 B in bf16 (Strategy::optimizer_moments).
  const double moment_bytes = s.optimizer_moments == MomentDtype::kBf16 ? 2 : 4;
  const double moments = (s.optimizer == Optimizer::kAdam ? 2 : 1) * moment_bytes;
  // fp32 master copy, or its low 16 bits beside a bf16 parameter (master_param_remainders)
  const double master = s.master_weights_fp32 && e < 4 ? (s.master_param_remainders && e == 2 ? 2 : 4) : 0;
  plan.optimizer_bytes_per_param = moments + master;  // mixed-precision Adam: 12 (ZeRO, Sec. 3.1)
  // Megatron-LM's default DDP bucket holds 40M parameters' gradients.
  constexpr double kDefaultBucketParams = 40'000'000;
  plan.dp_bucket_B = s.dp_bucket_B > 0 ? s.dp_bucket_B : kDefaultBucketParams * plan.grad_bytes_per_param;
}

}  // namespace

Expected<Plan> lower(const ModelSpec& model, const Strategy& requested,
                     const HardwareModel& hardware, LowerDepth depth) {
  // stage_layers "auto": balanced over a mixed cluster's groups (unless first/last stage
  // layers are given or the embedding/loss count as layers), even otherwise; the plan records
  // what was chosen.
  Strategy strategy = requested;
  if (strategy.stage_split == StageSplit::kAuto && hardware.mixed() && strategy.pp > 1 &&
      strategy.first_stage_layers == 0 && strategy.last_stage_layers == 0 &&
      !strategy.embedding_as_layer && !strategy.loss_as_layer && model.family != ModelFamily::kOpGraph) {
    strategy.stage_split = StageSplit::kBalanced;
  }
  // An operator graph's stages: "auto" balances its ops by time (op_graph_stages.h).
  if (strategy.stage_split == StageSplit::kAuto && model.family == ModelFamily::kOpGraph && strategy.pp > 1) {
    strategy.stage_split = StageSplit::kBalanced;
  }
  int dp = 1, micro_batches = 1;
  if (auto bad = check_mixed_cluster(hardware)) return *bad;
  if (auto bad = check_degrees(strategy, hardware, &dp)) return *bad;
  if (auto bad = check_model_split(model, strategy, dp)) return *bad;
  if (auto bad = check_batch_and_schedule(strategy, dp, &micro_batches)) return *bad;
  if (auto bad = check_precision(strategy, hardware)) return *bad;
  if (auto bad = check_autocast(model, strategy)) return *bad;
  if (auto bad = check_topology(strategy, hardware)) return *bad;
  if (auto bad = check_workload(strategy)) return *bad;
  if (auto bad = check_offload(strategy, hardware)) return *bad;
  if (auto bad = check_tasks(model, hardware)) return *bad;

  Plan plan;
  plan.model = model;
  plan.strategy = strategy;
  // Inference streams the micro-batches forward: GPipe's order with nothing after the
  // forwards (no backward kernels, no sends back, no tail); whatever schedule was named.
  if (strategy.workload == Workload::kInference) plan.strategy.schedule = ScheduleKind::kGPipe;
  plan.hardware = hardware;
  plan.tp = strategy.tp;
  plan.pp = strategy.pp;
  plan.cp = strategy.cp;
  plan.dp = dp * strategy.cp;  // gradients are shared by the data and the context replicas
  plan.chunks = pipeline_chunks(strategy);
  plan.strategy.overlap_p2p = pipeline_sends_overlap(plan.strategy);  // both engines read this one flag
  plan.ep = strategy.ep;
  plan.shard = strategy.shard_group > 0 ? strategy.shard_group : plan.dp;
  plan.zero3_resident = strategy.zero_stage == 3 &&
                        (strategy.zero3_reshard == Zero3Reshard::kPerIteration ||
                         (strategy.zero3_reshard == Zero3Reshard::kAuto && strategy.pp > 1));
  plan.zero_stage = plan.zero3_resident ? 1 : strategy.zero_stage;
  const bool te_scaling = strategy.fp8_scaling == Fp8Scaling::kDelayed ||
                          strategy.fp8_scaling == Fp8Scaling::kCurrent;
  const bool fp8_layers = model.family != ModelFamily::kOpGraph && plan.shard > 1 &&
                          strategy.dtype == DType::kFp8;
  plan.fp8_params = strategy.fp8_param_gather && fp8_layers && te_scaling &&
                    strategy.zero_stage >= 1;
  plan.fp8_weight_gather = plan.fp8_params ||
                           (strategy.fp8_fsdp_all_gather && strategy.zero_stage == 3 &&
                            fp8_layers && strategy.fp8_scaling == Fp8Scaling::kTensorwise);
  plan.edp = static_cast<int>(static_cast<long long>(strategy.tp) * plan.dp / strategy.ep);
  plan.micro_batches = micro_batches;
  plan.samples_per_iteration = strategy.global_batch;
  set_state_bytes(plan);  // before the blocks: FSDP's copies (Strategy::fsdp_copies) read them
  if (model.family == ModelFamily::kOpGraph) {
    auto block = std::make_shared<Block>();
    std::vector<int> devices;
    if (!strategy.placement.empty()) {
      if (auto bad = op_devices(model.graph, strategy.placement, &devices)) return *bad;
    }
    block->graph = build_op_graph(model.graph, shape_of(strategy, false), devices);
    if (auto bad = apply_graph_groups(model, strategy.fusion, block->graph)) return *bad;
    if (auto bad = insert_spatial_exchanges(block->graph, model.graph, strategy.cp, strategy.micro_batch,
                                            dtype_bytes(storage_dtype(strategy.dtype)))) {
      return *bad;
    }
    insert_channel_exchanges(block->graph, model.graph, strategy.tp, strategy.micro_batch,
                             dtype_bytes(storage_dtype(strategy.dtype)));
    lower_block(*block, strategy.recompute, strategy.workload == Workload::kInference);
    block->params = channel_split_params(model.graph, strategy.tp);
    if (!devices.empty()) {
      plan.mp = strategy.placement_devices();
      plan.placed = placed_devices(*block, model.graph, strategy.recompute, plan.mp);
      if (strategy.workload == Workload::kInference) {
        for (PlacedDevice& d : plan.placed) d.activation_B = 0, d.peak_transient_B = 0;
      }
    }
    if (strategy.pp > 1) {
      if (auto bad = lower_op_graph_stages(plan, *block)) return *bad;
    }
    plan.layer = std::move(block);
    plan.block_repeat = model.graph.repeat;
    plan.tokens_per_micro_batch = strategy.micro_batch;
  } else {
    build_transformer_blocks(plan);
  }
  assign_stages(plan);
  place_groups(plan);
  if (depth == LowerDepth::kFull) lower_iteration(plan);
  return plan;
}

}  // namespace stratasim
