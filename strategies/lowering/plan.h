// The lowered plan: what both engines (analytical and SimGrid), the search, the GUI and
// validate consume. Produced only by lower(). Per-device kernel lists for one micro-batch of
// each block kind, the pipeline stages that repeat them, the collectives with their groups,
// and the facts the memory model needs.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "strategies/lowering/comm_group.h"
#include "strategies/lowering/iteration.h"
#include "strategies/lowering/layer_graph.h"
#include "strategies/model/model_spec.h"
#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

enum class Phase : uint8_t { kForward, kBackward, kRecompute };
std::string_view phase_name(Phase p);

// One kernel (or one collective) executed by every device of a stage.
struct Kernel {
  OpClass cls = OpClass::kMemoryBound;
  Phase phase = Phase::kForward;
  double matmul_flops = 0;
  double model_flops = 0;
  double other_flops = 0;
  double bytes = 0;        // memory traffic
  int launches = 1;        // kernels launched (backward of a GEMM: dgrad + wgrad)
  int first_op = 0;        // index range in the block's graph, for explain
  int last_op = 0;
  uint16_t fused_ops = 1;  // graph ops executed by this kernel
  int8_t device = 0;       // device of the replica running it (Strategy::placement; fusion never spans two)
  // Calibrated kernel family (DeviceSpec::family_factors; -1 = none): its ops' family when they
  // all have the same one.
  int8_t family = -1;
  bool task = false;  // a single-threaded task: DeviceSpec::task_flops, one core busy
  CommKind comm = CommKind::kAllReduce;
  double comm_bytes = 0;   // message size per rank
  CommPhases comm_phases = CommPhases::kBoth;
  GroupKind group = GroupKind::kTensor;  // the ranks a collective spans
  // A collective that runs beside the attention next to it (ring attention's K/V exchange):
  // only what exceeds that kernel's time is exposed, whatever overlap_tp says.
  bool overlaps_attention = false;
  double overlap_window = 1;  // the share of that attention's time it can hide behind
  bool reads_input_fused = false;
  // A linear layer's GEMM: runs in fp8 when the strategy's dtype is fp8 (attention's batched
  // GEMMs and the output projection stay in 16 bit, as Transformer Engine and torchao do).
  bool fp8_eligible = false;
  // Its forward input arrives already cast to FP8 (Strategy::fp8_tp_all_gather): no input cast.
  bool fp8_input_precast = false;
  // Its output gradient arrives gathered in FP8, cast on a shard of this share of it
  // (TensorInfo::fp8_grad_shard); 0: the backward casts the whole 16-bit gradient.
  double fp8_grad_shard = 0;
  // Its weight arrives gathered in FP8 (LayerGraph::fp8_weights_gathered): no weight cast in
  // forward, a transposed copy for the input gradient in backward.
  bool fp8_weight_precast = false;
  bool parameter_traffic = false;  // LayerOp::parameter_traffic: never recomputed
  // Separate matrix multiplies the kernel's GEMM runs as under eager model code (LayerOp::
  // mm_split: q, k, v or gate and up as one nn.Linear each); 0 for a kernel without one.
  uint8_t mm_calls = 0;
  // Backward of a GEMM with weights: the part of matmul_flops that computes the weight
  // gradient (the W pass of zero-bubble schedules; the rest is the input gradient, B).
  double weight_grad_flops = 0;
  double gemm_m = 0, gemm_n = 0, gemm_k = 0, gemm_batch = 1;  // forward GEMM shape, if any
  // Fused attention: the keys each query row attends per launch, the query-key head dim and
  // causal masking (DeviceSpec::flash2/flash3/cudnn efficiency by sequence length and head dim).
  double attention_keys = 0, attention_head_dim = 0;
  bool attention_causal = false;
  // The share of matmul_flops in sliding-window layers: tiles of band_keys keys per query row.
  double attention_band_share = 0, attention_band_keys = 0;
  // Launches of concurrent per-expert GEMMs in sequence (LayerOp::gemm_rounds; 1: one launch).
  double gemm_rounds = 1;
};

// A block: the graph of one repeated unit and its lowered kernels for one micro-batch.
struct Block {
  LayerGraph graph;
  std::vector<Kernel> forward;
  std::vector<Kernel> backward;  // recomputation kernels first, then the backward proper
  double saved_activation_B = 0;  // kept from forward to backward, per micro-batch
  double peak_transient_B = 0;    // largest working set during its backward
  // Reserved beyond that working set at its most (LayerOp::allocator_slack_B).
  double allocator_slack_B = 0;
  double params = 0;              // parameters on one device (after TP sharding), experts included
  double expert_params = 0;       // the routed experts' share of params (after EP sharding)
  // The head's multi-token prediction depths: the parameters of their layers and projections,
  // which fp8 training casts like any layer's (the rest of the head stays 16 bit).
  double mtp_linear_params = 0;
};

struct VirtualStage {
  int rank = 0;
  int chunk = 0;
  int first_layer = 0;
  int layers = 0;
  int dense_layers = 0;  // of `layers`, how many are dense_layer blocks (the model's first ones)
  // Of `layers`, how many are recomputed_layer blocks (Strategy::recompute_layers: the stage's
  // first ones after the dense ones).
  int recomputed_layers = 0;
  bool has_embedding = false;
  bool has_head = false;
  double params = 0;        // on one device of this stage
  double expert_params = 0; // the routed experts' share of params (reduced over the expert-data group)
  double activation_B = 0;  // saved per micro-batch (layers + embedding/head)
  // An operator graph split over pipeline stages: this stage's part of the graph
  // (Plan::stage_blocks[block], run once as its one "layer") and how many ops it holds;
  // -1: the stage repeats Plan::layer.
  int block = -1;
  int ops = 0;
};

// One device of an operator graph's replica under Strategy::placement, per repetition of the
// block (placement.h).
struct PlacedDevice {
  int ops = 0;
  double params = 0;            // parameters of its ops
  double activation_B = 0;      // kept from forward to backward, per micro-batch
  double peak_transient_B = 0;  // largest working set beyond them during its backward
};

struct Plan {
  ModelSpec model;
  Strategy strategy;
  HardwareModel hardware;

  // dp: the ranks sharing a stage's weights (data x context parallel), over which gradients
  // are reduced and ZeRO shards; cp of them split each sequence (Strategy::cp).
  int tp = 1, pp = 1, dp = 1, chunks = 1, cp = 1;
  int data_parallel() const { return dp / cp; }  // replicas that see different samples
  // Expert parallelism (MoE): ep ranks share a layer's experts; edp = tp * dp / ep ranks hold
  // the same experts (their gradients are reduced and ZeRO-sharded over them).
  int ep = 1, edp = 1;
  // The ZeRO stage the plan's collectives and memory follow: Strategy::zero_stage, except that
  // ZeRO-3 resharded per iteration (zero3_resident, Strategy::zero3_reshard) keeps each stage's
  // parameters gathered and its gradients whole from the first forward to the last backward,
  // and reduce-scatters and re-gathers once per iteration: ZeRO-1 in the steady state.
  int zero_stage = 0;
  bool zero3_resident = false;
  // The linear layers' weights (all of a stage's parameters but the embedding's and the
  // head's) are all-gathered at 1 B a parameter: Strategy::fp8_fsdp_all_gather in force (FP8
  // tensorwise training with ZeRO-3 over more than one rank; held at 1 B) or fp8_params.
  bool fp8_weight_gather = false;
  // Strategy::fp8_param_gather in force: Transformer Engine's FP8 parameters (delayed or
  // current scaling, ZeRO over more than one rank). Gathered at 1 B a linear parameter, held at
  // 2 B (rowwise and transposed copies), quantized on the shard once per step.
  bool fp8_params = false;
  // ZeRO shards over `shard` ranks (Strategy::shard_group, or dp), replicated dp / shard times.
  int shard = 1;
  int replicas() const { return dp / shard; }
  // The group ZeRO's collectives span: kData, or kShard for a shard group smaller than dp.
  GroupKind zero_group() const { return shard < dp ? GroupKind::kShard : GroupKind::kData; }
  int micro_batches = 1;     // per pipeline per iteration (gradient accumulation steps)
  // Which rank holds each virtual stage and where a micro-batch goes next (pipeline_schedule.h):
  // DualPipe runs two chains of pp stages in opposite directions, each holding the whole
  // model, with half the micro-batches in each.
  StageMap stage_map() const {
    return StageMap{pp, chunks, strategy.schedule == ScheduleKind::kDualPipe,
                    strategy.schedule == ScheduleKind::kZeroBubbleV};
  }
  bool inference() const { return strategy.workload == Workload::kInference; }
  // How many micro-batches each virtual stage runs per iteration.
  int micro_batches_per_stage() const { return micro_batches / stage_map().directions(); }
  double tokens_per_micro_batch = 0;  // micro_batch * seq_len (samples for op graphs)
  double samples_per_iteration = 0;   // global batch

  // Blocks are immutable once lowered and shared between plans that lower them identically
  // (see block_cache.h); an op-graph model has only `layer`.
  std::shared_ptr<const Block> layer;      // one transformer layer (or the whole op graph)
  // The first moe.first_dense_layers layers of an MoE model (dense MLP); null otherwise.
  std::shared_ptr<const Block> dense_layer;
  // Strategy::recompute_layers > 0: `layer` keeps its activations and the stages' first
  // recompute_layers layers are this block, recomputed whole; null otherwise.
  std::shared_ptr<const Block> recomputed_layer;
  std::shared_ptr<const Block> embedding;  // token/position embedding (first virtual stage)
  std::shared_ptr<const Block> head;       // final norm, output projection, loss (last stage)
  int block_repeat = 1;  // op graphs: block runs `repeat` times per micro-batch (RNN steps)
  // Model parallelism by placement (Strategy::placement, op graphs): a replica spans mp
  // devices (rank order: mp fastest, then dp), placed[d] what device d holds; empty if mp == 1.
  int mp = 1;
  std::vector<PlacedDevice> placed;

  std::vector<VirtualStage> stages;  // p * v, in virtual-stage order
  double p2p_bytes = 0;              // activation (and gradient) message between stages
  // An operator graph over pipeline stages (op_graph_stages.h): each stage's part of the
  // graph, and the bytes crossing each boundary (stage s -> s + 1) per micro-batch, which
  // differ from boundary to boundary; p2p_bytes is then the largest of them.
  std::vector<std::shared_ptr<const Block>> stage_blocks;
  std::vector<double> boundary_bytes;
  // The message crossing `boundary` (between virtual stages boundary and boundary + 1).
  double boundary_B(int boundary) const {
    return boundary >= 0 && boundary < static_cast<int>(boundary_bytes.size()) ? boundary_bytes[boundary]
                                                                             : p2p_bytes;
  }
  // The block a virtual stage repeats (its own part of an operator graph, or `layer`).
  const std::shared_ptr<const Block>& layer_of(const VirtualStage& st) const {
    return st.block >= 0 ? stage_blocks[st.block] : layer;
  }
  // The layer blocks a virtual stage runs and how many times each, in layer order: an MoE
  // model's dense layers, the recomputed layers, then the rest (layer_of, block_repeat times
  // each). A null block or zero times: none of that kind.
  struct LayerRun {
    const Block* block;
    double times;
  };
  std::array<LayerRun, 3> layer_runs(const VirtualStage& st) const {
    const int rest = st.layers - st.dense_layers - st.recomputed_layers;
    return {LayerRun{dense_layer.get(), double(st.dense_layers)},
            LayerRun{recomputed_layer.get(), double(st.recomputed_layers)},
            LayerRun{layer_of(st).get(), double(rest) * block_repeat}};
  }

  CommGroup tp_group, dp_group, cp_group, ep_group, edp_group, shard_group, replica_group, mp_group;
  double grad_bytes_per_param = 2;   // gradient reduction dtype
  double dp_bucket_B = 0;
  // Optimizer-state bookkeeping (bytes per parameter), before ZeRO sharding.
  double weight_bytes_per_param = 2, grad_state_bytes_per_param = 2, optimizer_bytes_per_param = 12;
  double expert_grad_state_bytes_per_param = 2;  // the routed experts' (set_state_bytes)

  // Every operation of the iteration beyond the blocks' kernels (iteration.h).
  IterationProgram iteration;

  // A virtual stage's linear-layer parameters on one device: all but the embedding's and the
  // head's (its output projection stays 16-bit under FP8 training; an MTP depth's linears
  // count).
  double stage_linear_params(const VirtualStage& st) const {
    const double edge = (st.has_embedding && embedding ? embedding->params : 0) +
                        (st.has_head && head ? head->params - head->mtp_linear_params : 0);
    return std::max(0.0, st.params - edge);
  }
  // Of those, the ones a float8 all-gather moves in FP8 (torchao's Float8Linear weights): the
  // routed experts' grouped GEMMs are not Float8Linear modules.
  double stage_fp8_gathered_params(const VirtualStage& st) const {
    return std::max(0.0, stage_linear_params(st) - st.expert_params);
  }
  // ZeRO-2/3 of a mixture of experts whose routed experts several ranks hold (edp > 1): their
  // per-micro-batch collectives span the expert-data group, the rest's dp.
  bool shards_experts_per_micro_batch() const {
    return zero_stage >= 2 && edp > 1 && layer && layer->expert_params > 0;
  }
  // Bytes of `params` parameters, `linear` of them linear layers', as ZeRO gathers them: 1 B a
  // linear parameter under fp8_weight_gather (torchao's float8 gather also holds them so).
  double gathered_weight_bytes(double params, double linear) const {
    if (!fp8_weight_gather) return params * weight_bytes_per_param;
    linear = std::min(linear, params);
    return (params - linear) * weight_bytes_per_param + linear;
  }
  // Bytes a routed expert's parameter moves in a ZeRO gather: its own dtype, 1 B as Transformer
  // Engine's FP8 parameters (fp8_params: GroupedLinear's weights are quantized too).
  double expert_gather_bytes_per_param() const {
    return fp8_params ? 1.0 : weight_bytes_per_param;
  }
  // Bytes the gathered weights hold: as gathered, except that Transformer Engine's FP8
  // parameters (fp8_params) keep a transposed copy beside the rowwise one, 2 B a linear
  // parameter (Megatron-FSDP's README: keep_fp8_transpose_cache costs a byte a parameter).
  double held_weight_bytes(double params, double linear) const {
    if (!fp8_params) return gathered_weight_bytes(params, linear);
    linear = std::min(linear, params);
    return (params - linear) * weight_bytes_per_param + 2 * linear;
  }
};

}  // namespace stratasim
