// The forward operator graph of one repeated block (a transformer layer, or an op-graph
// model's block) for one micro-batch on one device, after tensor-parallel sharding.
// Tensors carry their sizes; ops say which tensors they read and write and which must be
// saved for the backward pass. Fusion, backward generation, recomputation and activation
// memory are all computed from this one description.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "strategies/lowering/comm_group.h"

namespace stratasim {

enum class OpClass : uint8_t {
  kMatmul,          // GEMM: compute-bound at large sizes
  kMemoryBound,     // elementwise, norm, softmax, pooling: memory-bound
  kFlashAttention,  // fused tiled attention
  kCollective,      // tensor-parallel communication (a fusion barrier)
};

// kHaloExchange: a spatial split's neighbour exchange (each device sends comm_bytes, the halo
// rows of one side, to each of its two neighbours along the split dimension, and receives theirs).
enum class CommKind : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kHaloExchange };
std::string_view comm_kind_name(CommKind k);

// When a collective runs: Megatron's f/g operators pair a forward all-reduce with a backward
// identity and vice versa; most layer collectives have a conjugate in both passes.
enum class CommPhases : uint8_t { kBoth, kForwardOnly, kBackwardOnly };

enum class FusionRule : uint8_t {
  kNone,
  kEpilogue,            // bias + activation (+ dropout) epilogue chain
  kBiasDropoutResidual,
  kNormResidual,        // residual add + following norm
  kSoftmax,             // scale + mask + softmax
  kGraphGroup,          // explicit group from the strategy (op graphs)
  kGemmEpilogue,        // bias + activation in the GEMM's own epilogue (FusionPlan::gemm_activation)
};

struct TensorInfo {
  double bytes = 0;          // bytes as read/written by the ops (after sharding)
  double saved_bytes = 0;    // bytes kept for backward when saved (may be sharded under SP)
  bool fp8 = false;          // already cast to FP8 (a GEMM reading it skips its input cast)
  // Its gradient arrives gathered in FP8, cast on a shard of this share of it before the
  // all-gather (Strategy::fp8_tp_all_gather: the backward of a row-parallel GEMM's
  // sequence-parallel reduce-scatter); 0: the gradient arrives 16-bit.
  double fp8_grad_shard = 0;
};

inline constexpr int kMaxOpInputs = 3;
// Save mask bits: which of an op's tensors its backward needs kept in memory.
inline constexpr uint8_t kSaveInput0 = 1, kSaveInput1 = 2, kSaveInput2 = 4, kSaveOutput = 8;

struct LayerOp {
  std::string_view name;       // static text; empty for op-graph models (see source_op)
  int16_t source_op = -1;       // op-graph models: index into ModelSpec::graph.ops
  int8_t family = -1;           // op-graph models: GraphOp::family (calibrated kernel family)
  bool task = false;            // op-graph models: a single-threaded task (GraphOpKind::kTask)
  int8_t device = 0;            // op-graph models: device of the replica (Strategy::placement)
  OpClass cls = OpClass::kMemoryBound;
  double matmul_flops = 0;  // FLOP on matrix units (model FLOPs)
  double other_flops = 0;   // FLOP on vector units
  double weight_bytes = 0;  // parameters read
  double model_flops = 0;   // FLOP counted for MFU (flash attention: the full s x s work)
  // Fused attention: keys each query row attends per launch, query-key head dim, causal.
  double attention_keys = 0, attention_head_dim = 0;
  bool attention_causal = false;
  // Sliding-window layers' share of matmul_flops, run as unmasked tiles of band_keys keys per
  // query row (TransformerSpec::sliding_window; 0: none).
  double attention_band_share = 0, attention_band_keys = 0;
  // A GEMM issued as one launch per local expert, those launches spread over streams
  // (LayerShape::expert_gemm_streams): the rounds of concurrent launches (1: one launch).
  double gemm_rounds = 1;
  int16_t inputs[kMaxOpInputs] = {-1, -1, -1};
  int16_t output = -1;
  uint8_t saves = 0;        // kSave* bits: tensors this op's backward needs
  double aux_saved_bytes = 0;  // extra state written and saved (dropout mask, softmax stats)
  bool reads_input_fused = false;  // input arrives fused from the previous kernel (add+norm)
  // Batch norm in training needs the statistics of its whole input before normalizing it, so
  // its input is read a second time, fused with its producer or not.
  bool rereads_input = false;
  // An op that runs as several eager PyTorch kernels: the memory traffic of their intermediate
  // tensors beyond the op's own input and output, and the kernels beyond one.
  double eager_bytes = 0;
  int16_t eager_launches = 0;
  // Of those intermediates, the bytes autograd keeps for the backward where the op's state is
  // kept (as aux_saved_bytes, but their traffic is in eager_bytes already).
  double eager_saved_bytes = 0;
  // Memory live beyond the saved tensors while this op runs its backward (eager intermediates
  // such as the fp32 gradients of an unfused cross-entropy); part of the block's peak.
  double workspace_B = 0;
  // Memory its working set leaves reserved but unusable in the framework's caching allocator
  // (holes too small for the tensors that come after them: allocator_replay.h); reserved, not
  // allocated, and beside workspace_B at the op's peak.
  double allocator_slack_B = 0;
  bool high_precision = false;  // a GEMM kept 16-bit under fp8 training (attention, logits)
  bool attention_core = false;  // recomputed by selective recomputation (Korthikanti 2022)
  // The Megatron-Core modules this op belongs to (RecomputeModule bits, strategy.h), which
  // Recompute::kSelective recomputes when LayerGraph::recompute_modules names them.
  uint8_t module = 0;
  // A GEMM that model code written with one nn.Linear per projection runs as several matrix
  // multiplies (q, k, v; SwiGLU's gate and up): their output widths, in order; all 0 = one. Only
  // a per-mm recomputation policy (Recompute::kOpSelective) tells them apart.
  std::array<double, 3> mm_split{};
  FusionRule fusion = FusionRule::kNone;  // group rule this op may join
  int16_t fusion_group = -1;              // ops with the same rule and group id fuse
  CommKind comm = CommKind::kAllReduce;   // for kCollective
  double comm_bytes = 0;                  // for kCollective: message size per rank
  CommPhases comm_phases = CommPhases::kBoth;  // passes it runs in (a collective, a memory op)
  GroupKind group = GroupKind::kTensor;   // for kCollective: the ranks it spans
  bool overlaps_attention = false;        // for kCollective: hidden behind the attention beside it
  double overlap_window = 1;              // ... behind this share of that attention's time
  double backward_comm_factor = 1;        // for kCollective: backward bytes / forward bytes
  double backward_flops_factor = 2;       // backward FLOP / forward FLOP
  // Memory-bound ops: backward bytes / forward bytes (reading the output gradient and the saved
  // input, writing the input gradient: about 2); a pure copy's backward is a copy (1).
  double backward_bytes_factor = 2;
  // Memory-bound ops: backward kernels per forward kernel.
  uint8_t backward_launch_factor = 1;
  // Memory traffic and kernels only the backward has, beyond backward_bytes_factor x the
  // forward's (autograd's sum of the gradients of an input several ops read).
  double backward_extra_bytes = 0;
  int16_t backward_extra_launches = 0;
  // Moves parameters or gradients, not activations (FSDP's copies): recomputation never redoes it.
  bool parameter_traffic = false;
  // GEMM shape for kMatmul ops: C[m x n] = A[m x k] B[k x n], `batch` independent GEMMs.
  double gemm_m = 0, gemm_n = 0, gemm_k = 0, gemm_batch = 1;
};

struct LayerGraph {
  std::vector<TensorInfo> tensors;
  std::vector<LayerOp> ops;
  int input_tensor = 0;   // the block input (saved under full recomputation)
  // Further block inputs, saved like it: the tensors an operator graph's pipeline stage
  // receives beside its first (a skip connection crossing the stage boundary).
  std::vector<int> extra_inputs;
  int output_tensor = 0;  // the block output (always written)
  // FP8 training that keeps a linear layer's input for its weight gradient as the FP8 cast
  // (Transformer Engine): the bytes of that saved copy per byte of the 16-bit tensor (1/2 for
  // bf16); 0 when linear layers save their 16-bit input.
  double fp8_saved_fraction = 0;
  // FP8 training whose linear layers' weights arrive gathered in FP8 (Strategy::
  // fp8_fsdp_all_gather): their GEMMs cast no weight (Kernel::fp8_weight_precast).
  bool fp8_weights_gathered = false;
  // FusionPlan::compiled: of what the op policy saves (Recompute::kOpSelective), only what the
  // backward reads is kept.
  bool policy_saves_read_only = false;
  // The modules Recompute::kSelective recomputes (Strategy::recompute_modules; default: the
  // core attention).
  uint8_t recompute_modules = 1;
};


}  // namespace stratasim
