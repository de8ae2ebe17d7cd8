#include "strategies/lowering/iteration.h"

#include <algorithm>
#include <cmath>

#include "strategies/lowering/plan.h"

namespace stratasim {
namespace {

// FLOPs and memory traffic of one block's kernels of one phase.
struct Work {
  double flops = 0, bytes = 0;
};
Work phase_work(const Block* b, Phase phase, const std::vector<Kernel> Block::*list) {
  Work w;
  if (b == nullptr) return w;
  for (const Kernel& k : b->*list) {
    if (k.phase != phase) continue;
    w.flops += k.matmul_flops + k.other_flops;
    w.bytes += k.bytes;
  }
  return w;
}

// The weight-gradient FLOPs of a stage's backward (Kernel::weight_grad_flops).
Work weight_work(const Plan& plan, const VirtualStage& st) {
  auto of = [](const Block* b) {
    double f = 0;
    if (b == nullptr) return f;
    for (const Kernel& k : b->backward) f += k.phase == Phase::kBackward ? k.weight_grad_flops : 0;
    return f;
  };
  double flops = 0;
  for (const auto& [block, times] : plan.layer_runs(st)) flops += times > 0 ? of(block) * times : 0;
  if (st.has_embedding) flops += of(plan.embedding.get());
  if (st.has_head) flops += of(plan.head.get());
  return Work{flops, 0};
}

Work stage_work(const Plan& plan, const VirtualStage& st, Phase phase) {
  const auto list = phase == Phase::kForward ? &Block::forward : &Block::backward;
  Work w;
  for (const auto& [block, times] : plan.layer_runs(st)) {
    if (times <= 0) continue;
    const Work layer = phase_work(block, phase, list);
    w.flops += times * layer.flops, w.bytes += times * layer.bytes;
  }
  for (const auto& [has, block] : {std::pair{st.has_embedding, plan.embedding.get()},
                                   std::pair{st.has_head, plan.head.get()}}) {
    if (!has) continue;
    const Work e = phase_work(block, phase, list);
    w.flops += e.flops, w.bytes += e.bytes;
  }
  return w;
}

int push(StepProgram& s, IterOp op) {
  s.ops.push_back(op);
  return static_cast<int>(s.ops.size()) - 1;
}

IterOp compute_op(IterOpKind kind, int vstage, Work w, int dep) {
  IterOp op;
  op.kind = kind;
  op.stream = Stream::kCompute;
  op.vstage = vstage;
  op.flops = w.flops;
  op.bytes = w.bytes;
  op.deps[0] = static_cast<int8_t>(dep);
  return op;
}

IterOp collective_op(IterOpKind kind, CommKind comm, GroupKind group, int vstage, double bytes,
                     int repeats, CollectiveAlgorithm algorithm) {
  IterOp op;
  op.kind = kind;
  op.stream = Stream::kComm;
  op.vstage = vstage;
  op.group = group;
  op.comm = comm;
  op.bytes = bytes;
  op.repeats = repeats;
  op.algorithm = algorithm;
  return op;
}

// ZeRO gathers and reduce-scatters run layer by layer, one collective per layer (Rajbhandari
// et al. SC20, Sec. 7). With prefetching (overlap_dp) the first layer's collective is on the
// critical path and the others run beside the compute; without it all of them precede (a
// gather) or follow (a reduce-scatter) the compute. Returns the index the compute waits for.
// The stage's parameters outside its layers (the embedding, the final norm and the output
// head: ZeroParams::edge) form one more unit, FSDP's root (torch.distributed.fsdp: the
// model wrapped last, around the wrapped blocks; TorchTitan's apply_fsdp): gathered with the
// first layer before the forward, kept through the backward (FSDP2's _lazy_init sets the
// root's post_forward_mesh_info to None: not resharded after forward, so not re-gathered),
// and reduce-scattered with the first layer after the backward, when the embedding's gradient
// is the last one done.
struct ZeroSplit {
  int first = -1;  // the op the compute waits for (-1: none)
};
struct ZeroParams {
  // Parameters on one device: outside the layers, per layer, and of a layer's the ones a
  // float8 all-gather moves in FP8 (not the routed experts').
  double edge = 0, layer = 0, layer_fp8 = 0;
  int layers = 1;
  // Mixture of experts: the routed experts' parameters of one MoE layer, sharded over the
  // ranks holding the same experts (edp) rather than over dp, and the stage's MoE layers.
  // `layer` is then the rest of a layer's (attention, norms, router, shared experts).
  double experts = 0;
  int moe_layers = 0;
};
ZeroParams zero_params(const Plan& plan, const VirtualStage& st) {
  ZeroParams z;
  z.layers = std::max(1, st.layers);
  z.edge = st.params - plan.stage_linear_params(st);
  // Unsharded experts (edp = 1: every rank holds its own) are neither gathered nor reduced.
  const bool sharded_experts = st.expert_params > 0 && plan.edp > 1;
  z.layer = (st.params - z.edge - st.expert_params) / z.layers;
  z.layer_fp8 = plan.stage_fp8_gathered_params(st) / z.layers;
  if (sharded_experts) {
    z.moe_layers = std::max(1, st.layers - st.dense_layers);
    z.experts = st.expert_params / z.moe_layers;
  }
  return z;
}

// The routed experts' ZeRO-3 gathers (or ZeRO-2/3 reduce-scatters) of `layers` MoE layers over
// the expert-data group, one collective per layer, `element_bytes` a parameter. The callers
// issue the first layer's before the compute (a gather) or after it (a reduce-scatter) and the
// others beside it; none where every rank holds its own experts (edp = 1: moe_layers 0).
IterOp expert_zero_op(const Plan& plan, const ZeroParams& p, IterOpKind kind, int vs, int layers,
                      double element_bytes) {
  const CommKind comm = kind == IterOpKind::kZeroGather ? CommKind::kAllGather : CommKind::kReduceScatter;
  return collective_op(kind, comm, GroupKind::kExpertData, vs, layers * p.experts * element_bytes,
                       layers, plan.strategy.collective);
}

ZeroSplit add_zero_gather(StepProgram& s, const Plan& plan, const VirtualStage& st, int vs,
                          bool forward) {
  ZeroSplit z;
  if (plan.zero_stage < 3 || plan.shard <= 1) return z;
  const ZeroParams p = zero_params(plan, st);
  const int layers = p.layers;
  // The root unit with the first layer before each forward, unless it stays gathered for the
  // whole iteration (Strategy::fsdp_root_gather kIteration: gathered once in rank_tail).
  const bool root_once = plan.strategy.fsdp_root_gather == FsdpRootGather::kIteration;
  const double edge = forward && !root_once ? p.edge : 0;
  const double rest = layers - 1.0;
  const CollectiveAlgorithm a = plan.strategy.collective;
  const GroupKind g = plan.zero_group();
  const double w = plan.expert_gather_bytes_per_param();
  if (plan.strategy.overlap_dp && layers > 1) {
    z.first = push(s, collective_op(IterOpKind::kZeroGather, CommKind::kAllGather, g, vs,
                                    plan.gathered_weight_bytes(edge + p.layer, p.layer_fp8), 1, a));
    // The first layer's experts too before its compute (the comm stream runs them in order).
    if (p.moe_layers > 0) z.first = push(s, expert_zero_op(plan, p, IterOpKind::kZeroGather, vs, 1, w));
    push(s, collective_op(IterOpKind::kZeroGather, CommKind::kAllGather, g, vs,
                          plan.gathered_weight_bytes(rest * p.layer, rest * p.layer_fp8),
                          layers - 1, a));
    if (p.moe_layers > 1) {
      push(s, expert_zero_op(plan, p, IterOpKind::kZeroGather, vs, p.moe_layers - 1, w));
    }
  } else {
    const double all = edge + layers * p.layer;
    const double bytes = plan.gathered_weight_bytes(all, layers * p.layer_fp8);
    z.first = push(s, collective_op(IterOpKind::kZeroGather, CommKind::kAllGather, g, vs, bytes,
                                    layers, a));
    if (p.moe_layers > 0) {
      z.first = push(s, expert_zero_op(plan, p, IterOpKind::kZeroGather, vs, p.moe_layers, w));
    }
  }
  return z;
}

// Returns the op a gradient send must follow (the last reduce-scatter, or the compute).
int add_zero_reduce_scatter(StepProgram& s, const Plan& plan, const VirtualStage& st, int vs,
                            int backward) {
  if (plan.zero_stage < 2 || plan.dp <= 1) return backward;
  const ZeroParams p = zero_params(plan, st);
  const int layers = p.layers;
  // The routed experts' gradients go over the expert-data group (expert_zero_op), or stay
  // whole where every rank holds its own experts (edp = 1).
  const double grads = (st.params - st.expert_params) * plan.grad_bytes_per_param;
  const double layer_grads = p.layer * plan.grad_bytes_per_param;
  const double g_bytes = plan.grad_bytes_per_param;
  const CollectiveAlgorithm a = plan.strategy.collective;
  const GroupKind g = plan.zero_group();
  IterOp last = collective_op(IterOpKind::kZeroReduceScatter, CommKind::kReduceScatter, g, vs,
                              grads, layers, a);
  // ZeRO-3 (FSDP): the layers but the first beside the backward; the first with the root unit
  // after it. ZeRO-2 reduces gradients in buckets as they are done (the head's first): the
  // stage's last layer's worth after the backward.
  const double beside =
      plan.zero_stage >= 3 ? layer_grads * (layers - 1) : grads * (layers - 1) / layers;
  const bool split_experts = plan.strategy.overlap_dp && p.moe_layers > 1;
  if (plan.strategy.overlap_dp && layers > 1) {
    push(s, collective_op(IterOpKind::kZeroReduceScatter, CommKind::kReduceScatter, g, vs,
                          beside, layers - 1, a));
    last.bytes = grads - beside;
    last.repeats = 1;
  }
  if (split_experts) {
    push(s, expert_zero_op(plan, p, IterOpKind::kZeroReduceScatter, vs, p.moe_layers - 1, g_bytes));
  }
  last.deps[0] = static_cast<int8_t>(backward);
  int after = plan.shard > 1 ? push(s, last) : backward;
  if (p.moe_layers > 0) {
    IterOp experts = expert_zero_op(plan, p, IterOpKind::kZeroReduceScatter, vs,
                                    split_experts ? 1 : p.moe_layers, g_bytes);
    experts.deps[0] = static_cast<int8_t>(backward);
    after = push(s, experts);
  }
  // HSDP: each shard's gradient is then all-reduced across the replicas holding it.
  if (plan.replicas() > 1) {
    IterOp sync = collective_op(IterOpKind::kZeroReduceScatter, CommKind::kAllReduce,
                                GroupKind::kReplica, vs, grads / plan.shard, layers, a);
    sync.deps[0] = static_cast<int8_t>(after);
    after = push(s, sync);
  }
  return after;
}

// Transformer Engine's delayed scaling (Strategy::fp8_amax_reduction). Megatron-Core enters
// one fp8_autocast per model chunk (TransformerBlock.forward; its group
// get_amax_reduction_group(with_context_parallel=True): the stage's tp x cp x dp ranks). On
// leaving it (fp8_autocast_exit -> reduce_and_update_fp8_tensors(forward=True)) and at the end
// of the region's first FP8 module's backward (ctx.reduce_and_update_bwd_fp8_tensors), TE >= 1.6
// concatenates the amaxes of every FP8 module the rank registered (all its chunks: a module
// registers once, for life), all-reduces them (MAX, async_op=False: the compute stream waits
// for the NCCL stream) and runs one fused scale update (TE v1.8 fp8.py, module/linear.py). A
// GEMM holds 3 fp32 amaxes forward (input, weight, output) and 2 backward (output gradient,
// input gradient): 12 and 8 B (module/base.py set_meta_tensor; a GroupedLinear counts as one
// GEMM here, its message latency-bound either way). Recomputation enters no region
// (in_fp8_activation_recompute_phase) and adds none; inference reduces nothing (the exit
// reduces only with grad enabled). Returns the op what follows must wait for.
int add_amax_reduce(StepProgram& s, const Plan& plan, int vs, double fp8_gemms, bool forward,
                    int after) {
  const Strategy& st = plan.strategy;
  if (st.dtype != DType::kFp8 || st.fp8_scaling != Fp8Scaling::kDelayed || fp8_gemms <= 0 ||
      st.fp8_amax_reduction == Fp8AmaxReduction::kNone || plan.inference()) {
    return after;
  }
  const GroupKind g = st.fp8_amax_reduction == Fp8AmaxReduction::kStage ? GroupKind::kStage
                                                                       : GroupKind::kTensor;
  if (plan.iteration.group(g).size <= 1) return after;
  IterOp op = collective_op(IterOpKind::kFp8AmaxReduce, CommKind::kAllReduce, g, vs,
                            fp8_gemms * (forward ? 12 : 8), 1, CollectiveAlgorithm::kAuto);
  op.deps[0] = static_cast<int8_t>(after);
  return push(s, op);
}

void add_send(StepProgram& s, const Plan& plan, IterOpKind kind, int vs, int after) {
  IterOp op;
  op.kind = kind;
  op.stream = Stream::kComm;
  op.vstage = vs;
  op.bytes = plan.boundary_B(kind == IterOpKind::kSendActivation ? vs : vs - 1);
  op.blocking = !plan.strategy.overlap_p2p;
  op.deps[0] = static_cast<int8_t>(after);
  push(s, op);
}

// `fp8_gemms`: the FP8 GEMMs of the stage's pipeline rank, all its chunks (add_amax_reduce).
StageProgram stage_program(const Plan& plan, int vs, double fp8_gemms) {
  const VirtualStage& st = plan.stages[vs];
  const StageMap map = plan.stage_map();
  StageProgram p;
  {
    StepProgram& f = p.forward;
    const ZeroSplit z = add_zero_gather(f, plan, st, vs, true);
    const int compute =
        push(f, compute_op(IterOpKind::kForward, vs, stage_work(plan, st, Phase::kForward), z.first));
    const int done = add_amax_reduce(f, plan, vs, fp8_gemms, true, compute);
    if (map.sends_forward(vs)) add_send(f, plan, IterOpKind::kSendActivation, vs, done);
  }
  if (plan.inference()) return p;  // forward only: no backward step, nothing sent back
  {
    StepProgram& b = p.backward;
    const ZeroSplit z = add_zero_gather(b, plan, st, vs, false);
    int dep = z.first;
    if (plan.strategy.recompute != Recompute::kNone) {
      dep = push(b, compute_op(IterOpKind::kRecompute, vs, stage_work(plan, st, Phase::kRecompute),
                               dep));
    }
    const bool split = splits_backward(plan.strategy.schedule);
    const Work all = stage_work(plan, st, Phase::kBackward);
    const Work weights = split ? weight_work(plan, st) : Work{};
    const int computed = push(b, compute_op(IterOpKind::kBackward, vs,
                                            {all.flops - weights.flops, all.bytes}, dep));
    const int backward = add_amax_reduce(b, plan, vs, fp8_gemms, false, computed);
    // Split: the gradient leaves after B; W and the gradients' reduce-scatter follow later.
    const int last = split ? backward : add_zero_reduce_scatter(b, plan, st, vs, backward);
    if (map.sends_backward(vs)) add_send(b, plan, IterOpKind::kSendGradient, vs, last);
    if (split) {
      StepProgram& w = p.weight;
      const int weight = push(w, compute_op(IterOpKind::kWeightGradient, vs, weights, -1));
      add_zero_reduce_scatter(w, plan, st, vs, weight);
    }
  }
  return p;
}

// After the rank's last backward: the data-parallel gradient sync (ZeRO 0: all-reduce, 1:
// reduce-scatter; ZeRO 2/3 reduced every micro-batch), the gather of the updated weight shards
// (ZeRO 1/2; ZeRO-3 gathers before use), the tied-embedding all-reduce between the first and
// the last stage, and the optimizer step.
// Mixture of experts: the routed experts' gradients are reduced (and their optimizer states
// sharded) over the ranks holding the same experts (edp = tp * dp / ep), the rest over dp; the
// experts' reduction follows the dense buckets on the same stream.
// Transformer Engine's fp8 recipes: the rank's linear-layer weights cast once per iteration,
// read in 16 bit and written as fp8 and fp8-transposed (4 B per parameter; current scaling's
// amax pass reads them once more, 6 B). kernel_cost.cpp charges the activations' casts.
// TE's FP8 parameters (Plan::fp8_params) are quantized on the rank's shard of the fp32 master
// weights instead (Megatron-Core's quantize_param_shard: read 4 B and write 1 B; current
// scaling's amax pass reads the shard once more, 9 B), and the gathered weights transposed
// once (read and write 1 B: TE's post-all-gather _create_transpose for Hopper).
IterOp fp8_weight_cast(const Plan& plan, double linear_params, double shard_params) {
  IterOp cast;
  cast.kind = IterOpKind::kFp8WeightCast;
  cast.stream = Stream::kCompute;
  const bool current = plan.strategy.fp8_scaling == Fp8Scaling::kCurrent;
  cast.bytes = plan.fp8_params ? 2 * linear_params + shard_params * (current ? 9 : 5)
                               : linear_params * (current ? 6 : 4);
  return cast;
}

bool casts_weights_per_iteration(const Strategy& s) {
  return s.dtype == DType::kFp8 &&
         (s.fp8_scaling == Fp8Scaling::kDelayed || s.fp8_scaling == Fp8Scaling::kCurrent);
}

std::vector<IterOp> rank_tail(const Plan& plan, int rank, double all_params, double expert_params,
                              double linear_params) {
  const Strategy& s = plan.strategy;
  const int zero = plan.zero_stage;
  std::vector<IterOp> tail;
  if (plan.inference()) return tail;  // no gradients to reduce, no optimizer step
  const double params = all_params - expert_params;
  const double grads = params * plan.grad_bytes_per_param;
  const bool experts = expert_params > 0 && plan.edp > 1;
  const int buckets =
      static_cast<int>(std::max(1.0, std::ceil(grads / std::max(1.0, plan.dp_bucket_B))));
  if (plan.shard > 1 && zero <= 1) {
    // DDP's buckets: each reduced as one collective when its gradients are final.
    IterOp op = collective_op(IterOpKind::kGradientReduce,
                              zero == 0 ? CommKind::kAllReduce : CommKind::kReduceScatter,
                              plan.zero_group(), -1, grads, buckets, s.collective);
    // FSDP resharded per iteration reduces after the stage's last backward (its post-backward
    // hook), not beside it.
    op.overlaps_last_backward = s.overlap_dp && !plan.zero3_resident;
    tail.push_back(op);
  }
  if (plan.replicas() > 1 && zero == 1) {  // HSDP: each shard across its replicas
    tail.push_back(collective_op(IterOpKind::kGradientReduce, CommKind::kAllReduce,
                                 GroupKind::kReplica, -1, grads / plan.shard, buckets, s.collective));
  }
  if (experts && zero <= 1) {
    const double expert_grads = expert_params * plan.grad_bytes_per_param;
    const int buckets = static_cast<int>(
        std::max(1.0, std::ceil(expert_grads / std::max(1.0, plan.dp_bucket_B))));
    tail.push_back(collective_op(IterOpKind::kGradientReduce,
                                 zero == 0 ? CommKind::kAllReduce : CommKind::kReduceScatter,
                                 GroupKind::kExpertData, -1, expert_grads, buckets, s.collective));
  }
  // DualPipe: ranks r and pp - 1 - r hold the same two stages; each sums its gradients with
  // the other's (after the data-parallel reduction, on the shard it leaves), before the
  // update. Both ends hold the embedding and the head, so tied embeddings need no sync of
  // their own.
  const bool mirrored = plan.stage_map().bidirectional;
  if (mirrored) {
    const double shard_of = zero >= 1 ? plan.shard : 1;
    const double bytes = (params / shard_of + expert_params / (zero >= 1 ? plan.edp : 1)) *
                         plan.grad_bytes_per_param;
    tail.push_back(collective_op(IterOpKind::kGradientReduce, CommKind::kAllReduce,
                                 GroupKind::kPipelineMirror, -1, bytes, buckets, s.collective));
  }
  if (plan.shard > 1 && (zero == 1 || zero == 2)) {
    // ZeRO-3 kept gathered (zero3_resident) gathers as ZeRO-3 does: in FP8 under
    // fp8_fsdp_all_gather.
    tail.push_back(collective_op(IterOpKind::kParameterGather, CommKind::kAllGather,
                                 plan.zero_group(), -1,
                                 plan.gathered_weight_bytes(params, linear_params - expert_params),
                                 1, s.collective));
  }
  // ZeRO-3 whose root unit (embedding, final norm, head: the rank's parameters outside its
  // layers' linears) stays gathered for the iteration (Strategy::fsdp_root_gather kIteration,
  // Megatron-FSDP): one gather of its updated shards an iteration rather than one a
  // micro-batch (add_zero_gather), in its own dtype.
  const double root = std::max(0.0, all_params - linear_params);
  if (plan.shard > 1 && zero == 3 && root > 0 &&
      s.fsdp_root_gather == FsdpRootGather::kIteration) {
    tail.push_back(collective_op(IterOpKind::kParameterGather, CommKind::kAllGather,
                                 plan.zero_group(), -1, plan.gathered_weight_bytes(root, 0), 1,
                                 s.collective));
  }
  if (experts && (zero == 1 || zero == 2)) {
    tail.push_back(collective_op(IterOpKind::kParameterGather, CommKind::kAllGather,
                                 GroupKind::kExpertData, -1,
                                 expert_params * plan.expert_gather_bytes_per_param(), 1,
                                 s.collective));
  }
  // Tied embeddings, or multi-token prediction's lookups in the word embedding on the last
  // stage: the first and the last stage sum the embedding's gradient. The V-shape puts the
  // first and the last stage on rank 0: no sync either.
  const bool tied = plan.model.family != ModelFamily::kOpGraph &&
                    (plan.model.transformer.tied_embeddings || plan.model.transformer.mtp_layers > 0) &&
                    plan.pp > 1 && !mirrored &&
                    !plan.stage_map().v_shape;
  if (tied && (rank == 0 || rank == plan.pp - 1)) {
    const TransformerSpec& t = plan.model.transformer;
    tail.push_back(collective_op(IterOpKind::kEmbeddingSync, CommKind::kAllReduce,
                                 GroupKind::kPipelineEmbedding, -1,
                                 double(t.vocab) * t.hidden / plan.tp * plan.grad_bytes_per_param,
                                 1, CollectiveAlgorithm::kRing));
  }
  // Mixed-precision Adam reads and writes both moments and the master weights, reads the
  // gradient and writes the 16-bit weights; ZeRO >= 1 shards the update over dp. Without a
  // master copy (fp32 training, torch.autocast's fp32 parameters) it updates the weights in
  // place, reading them too; so it does with a master kept as remainders (the fp32 value is
  // the 16-bit weight's high bits and the remainder's low ones).
  const double shard = zero >= 1 ? plan.shard : 1;
  const double expert_shard = zero >= 1 ? plan.edp : 1;
  const double shard_params = params / shard + expert_params / expert_shard;
  const bool master_copy = s.master_weights_fp32 && plan.weight_bytes_per_param < 4 && !s.master_param_remainders;
  IterOp step;
  step.kind = IterOpKind::kOptimizerStep;
  step.stream = Stream::kCompute;
  step.bytes = shard_params * (2 * plan.optimizer_bytes_per_param + plan.grad_bytes_per_param +
                               (master_copy ? 1 : 2) * plan.weight_bytes_per_param);
  if (s.offload == Offload::kOptimizer) {
    // ZeRO-Offload (Ren et al. 2021, Sec. 4.1): the reduced gradient shard goes to the host,
    // the CPU makes the same pass over the states, the 16-bit weight shard comes back.
    IterOp down, up;
    down.kind = IterOpKind::kOffloadGradients;
    down.stream = Stream::kHost;
    down.bytes = shard_params * plan.grad_bytes_per_param;
    // DeepSpeed's overlap_comm (ZeRO-Offload, Sec. 4.1: the gradient copy to the CPU overlaps
    // the backward pass): the shard goes to the host bucket by bucket as it is reduced.
    down.repeats = buckets;
    down.overlaps_last_backward = s.overlap_dp;
    step.kind = IterOpKind::kHostOptimizerStep;
    step.stream = Stream::kHost;
    up.kind = IterOpKind::kUploadParameters;
    up.stream = Stream::kHost;
    up.bytes = shard_params * plan.weight_bytes_per_param;
    tail.insert(tail.end(), {down, step, up});
    return tail;
  }
  // Issued in the first micro-batch's forward; on the compute stream it costs the iteration
  // the same wherever it runs, so it sits beside the step that changes the weights it casts.
  if (casts_weights_per_iteration(s) && linear_params > 0) {
    const double dense_linear = std::max(0.0, linear_params - expert_params);
    const double shard = dense_linear / plan.shard + (linear_params - dense_linear) / plan.edp;
    tail.push_back(fp8_weight_cast(plan, linear_params, shard));
  }
  tail.push_back(step);
  return tail;
}

// Per pipeline rank: its layers' GEMMs that run in FP8 (Kernel::fp8_eligible), all chunks.
std::vector<double> rank_fp8_gemms(const Plan& plan) {
  std::vector<double> gemms(plan.pp, 0.0);
  const Strategy& s = plan.strategy;
  if (s.dtype != DType::kFp8 || s.fp8_scaling != Fp8Scaling::kDelayed ||
      s.fp8_amax_reduction == Fp8AmaxReduction::kNone) {
    return gemms;  // no amax reduction to size (add_amax_reduce)
  }
  for (const VirtualStage& st : plan.stages) {
    for (const auto& [block, times] : plan.layer_runs(st)) {
      if (block == nullptr || times <= 0) continue;
      const auto n = std::count_if(block->forward.begin(), block->forward.end(), [](const Kernel& k) {
        return k.phase == Phase::kForward && k.fp8_eligible;
      });
      gemms[st.rank] += times * static_cast<double>(n);
    }
  }
  return gemms;
}

}  // namespace

std::string_view iter_op_kind_name(IterOpKind k) {
  switch (k) {
    case IterOpKind::kForward: return "forward";
    case IterOpKind::kRecompute: return "recompute";
    case IterOpKind::kBackward: return "backward";
    case IterOpKind::kWeightGradient: return "weight_gradient";
    case IterOpKind::kZeroGather: return "zero_gather";
    case IterOpKind::kZeroReduceScatter: return "zero_reduce_scatter";
    case IterOpKind::kSendActivation: return "send_activation";
    case IterOpKind::kSendGradient: return "send_gradient";
    case IterOpKind::kGradientReduce: return "gradient_reduce";
    case IterOpKind::kParameterGather: return "parameter_gather";
    case IterOpKind::kEmbeddingSync: return "embedding_sync";
    case IterOpKind::kOptimizerStep: return "optimizer_step";
    case IterOpKind::kOffloadGradients: return "offload_gradients";
    case IterOpKind::kHostOptimizerStep: return "host_optimizer_step";
    case IterOpKind::kUploadParameters: return "upload_parameters";
    case IterOpKind::kFp8WeightCast: return "fp8_weight_cast";
    case IterOpKind::kFp8AmaxReduce: return "fp8_amax_reduce";
  }
  return "?";
}

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kComm: return "comm";
    case Stream::kHost: return "host";
  }
  return "?";
}

void lower_iteration(Plan& plan) {
  IterationProgram& it = plan.iteration;
  it.groups[static_cast<int>(GroupKind::kTensor)] = plan.tp_group;
  it.groups[static_cast<int>(GroupKind::kData)] = plan.dp_group;
  it.groups[static_cast<int>(GroupKind::kContext)] = plan.cp_group;
  it.groups[static_cast<int>(GroupKind::kExpert)] = plan.ep_group;
  it.groups[static_cast<int>(GroupKind::kExpertData)] = plan.edp_group;
  it.groups[static_cast<int>(GroupKind::kShard)] = plan.shard_group;
  it.groups[static_cast<int>(GroupKind::kReplica)] = plan.replica_group;
  it.groups[static_cast<int>(GroupKind::kPlacement)] = plan.mp_group;
  // A stage's ranks are consecutive in Megatron's order (tp, cp, dp fastest; then pp).
  const int stage_ranks = plan.tp * plan.mp * plan.dp;
  it.groups[static_cast<int>(GroupKind::kStage)] =
      CommGroup{GroupKind::kStage, stage_ranks, std::min(stage_ranks, plan.hardware.node.devices)};
  // The first and the last stage share a node only when the whole job fits in one.
  const bool one_node = static_cast<long long>(plan.pp) * plan.tp * plan.mp * plan.dp <=
                        plan.hardware.node.devices;
  it.groups[static_cast<int>(GroupKind::kPipelineEmbedding)] =
      CommGroup{GroupKind::kPipelineEmbedding, 2, one_node ? 2 : 1};
  it.groups[static_cast<int>(GroupKind::kPipelineMirror)] =
      CommGroup{GroupKind::kPipelineMirror, 2, one_node ? 2 : 1};
  it.rank_params.assign(plan.pp, 0.0);
  std::vector<double> rank_experts(plan.pp, 0.0), rank_linear(plan.pp, 0.0);
  for (const VirtualStage& st : plan.stages) {
    it.rank_params[st.rank] += st.params;
    rank_experts[st.rank] += st.expert_params;
    // The embedding and the output projection stay 16 bit under fp8 training.
    rank_linear[st.rank] += plan.stage_linear_params(st);
  }
  it.stages.clear();
  it.stages.reserve(plan.stages.size());
  const std::vector<double> gemms = rank_fp8_gemms(plan);
  for (int vs = 0; vs < static_cast<int>(plan.stages.size()); ++vs) {
    it.stages.push_back(stage_program(plan, vs, gemms[plan.stages[vs].rank]));
  }
  it.tail.clear();
  for (int r = 0; r < plan.pp; ++r) {
    it.tail.push_back(rank_tail(plan, r, it.rank_params[r], rank_experts[r],
                                std::max(0.0, rank_linear[r])));
  }
}

}  // namespace stratasim
