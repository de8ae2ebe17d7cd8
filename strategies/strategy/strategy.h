// Strategy: *how* a model is run. Parallel degrees, pipeline schedule, batching,
// recomputation, operator fusion, overlap and precision. Plain data; legality is checked by
// lower(), which returns Infeasible with a reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "strategies/pipeline/pipeline_schedule.h"

namespace stratasim {

// kSelective: Megatron's selective recomputation (the attention core, Korthikanti et al. 2022).
// kOpSelective: TorchTitan's per-op selective activation checkpointing: the outputs of every
// other matrix multiply (the 1st, 3rd, ... of a layer) and of fused attention are saved,
// everything else is recomputed (torchtitan activation_checkpoint "selective", "op").
enum class Recompute { kNone, kSelective, kFull, kOpSelective };
// What Recompute::kSelective recomputes: Megatron-Core's recompute_modules
// (TransformerConfig.recompute_modules, --recompute-modules; default ["core_attn"]), as bits.
// core_attn, mlp, moe, shared_experts use normal checkpointing: the module's forward runs again
// before its backward, from its saved input, and keeps only what ops outside it save;
// moe_act, layernorm, mla_up_proj discard one op's output after its consumers' forward and
// recompute it from the op's inputs ("output-discarding checkpointing").
//   core_attn: the core attention (scores, softmax, dropout, attention over V, or the fused
//   kernel, with context parallelism's exchanges); moe_act: the experts' activation; layernorm:
//   the input and pre-MLP norms; mla_up_proj: MLA's query and key/value up projections and
//   RoPE; mlp: a dense MLP (not an MoE layer's); moe: the MoE layer (router, dispatch,
//   experts, combine, shared experts); shared_experts: the shared experts.
enum RecomputeModule : uint8_t {
  kModuleCoreAttn = 1,
  kModuleMoeAct = 2,
  kModuleLayernorm = 4,
  kModuleMlaUpProj = 8,
  kModuleMlp = 16,
  kModuleMoe = 32,
  kModuleSharedExperts = 64,
};
inline constexpr uint8_t kOutputDiscardingModules = kModuleMoeAct | kModuleLayernorm | kModuleMlaUpProj;
enum class CollectiveAlgorithm { kAuto, kRing, kTree, kHierarchical };
// Which fused attention kernel runs: FlashAttention-2 (PyTorch SDPA, flash-attn 2),
// FlashAttention-3 (flash-attn's Hopper kernels), cuDNN's fused flash attention (what
// Transformer Engine's DotProductAttention runs on Hopper), or the first FlashAttention
// (flash-attn 0.x/1.x, 2022 to 2023; xformers' memory-efficient attention dispatched to it),
// or FlashAttention's Triton version (flash-attn's flash_attn_triton.py, which MosaicML's MPT
// ran as attn_impl triton in 2023). Each is costed with the device's curve of that kernel
// (DeviceSpec::flash2/flash3/cudnn; sim/cost/kernel_cost.cpp attention_curves picks it, falling
// back cuDNN -> FA3 -> FA2); FlashAttention-1 and the Triton version run at FlashAttention-2's
// curve times their measured speed relative to it (DeviceSpec::flash1 / flash_triton).
enum class AttentionKernel { kFlash2, kFlash3, kCudnn, kFlash1, kFlashTriton };
enum class Optimizer { kAdam, kSgd };
enum class MomentDtype { kFp32, kBf16 };

struct FusionPlan {
  bool elementwise_epilogue = false;   // bias+GeLU(+dropout) in one kernel; graph: chains
  bool bias_dropout_residual = false;  // bias + dropout + residual add in one kernel
  bool norm_residual = false;          // residual add fused into the following LayerNorm
  bool fused_softmax = false;          // scale + mask + softmax in one kernel
  bool flash_attention = false;        // tiled attention, no s x s scores in memory
  // RMSNorm and rotary embedding as one kernel each (apex, Transformer Engine, Triton). Without,
  // they run as eager PyTorch ops through fp32 intermediates (LayerNorm is one native kernel
  // either way), and so does a gated MLP's SwiGLU, silu and mul as two kernels (the model
  // code's F.silu(w1(x)) * w3(x); transformer_layer.cpp eager_swiglu).
  bool fused_norm = false;
  // The loss as one fused kernel that works in place on the fp32 logits (Megatron's
  // vocab-parallel cross-entropy, flash-attn's xentropy). Without, PyTorch's eager
  // F.cross_entropy(logits.float()) casts, writes log-probabilities and, in the backward, fp32
  // gradients of the whole vocabulary.
  bool fused_loss = false;
  // With fused_loss: Megatron's vocab-parallel cross-entropy as the separate PyTorch ops its
  // code runs (logits.float(), max, subtract, exp, sum, divide in place; backward: scale in
  // place, cast back), Megatron-LM's loss until --cross-entropy-loss-fusion (core r0.8, 2024;
  // off by default), where fused_loss alone is one fused pass.
  bool megatron_loss_ops = false;
  // Without fused_loss and with tp > 1: PyTorch's loss_parallel (torch/distributed/tensor/
  // parallel/loss.py, TorchTitan's loss under tensor parallelism), the eager F.cross_entropy
  // on vocabulary-sharded logits as its decomposed log_softmax and fused nll + log_softmax
  // backward: 38 B per local logit each way and 12 B held at the backward's peak, where the
  // unsharded eager loss moves 14 and 28 and holds 8.
  bool loss_parallel = false;
  // The rotary embedding written with complex numbers (Meta's Llama reference code, TorchTitan's
  // apply_rotary_emb: view_as_complex, a complex multiply, view_as_real): torch.compile's
  // Inductor leaves complex ops to ATen (torch/_inductor/lowering.py: make_fallback(aten.
  // view_as_complex); "Torchinductor does not support code generation for complex operators"),
  // so it runs as its eager kernels even where fused_norm fuses the rest.
  bool complex_rope = false;
  // The fused rotary kernel takes no YaRN attention factor (Transformer Engine's fused RoPE):
  // a model whose factor is not 1 (TransformerSpec::rope_attention_factor) runs the framework's
  // eager rope instead. Megatron-Core's apply_rotary_pos_emb falls back to
  // _apply_rotary_pos_emb_bshd when mscale != 1.0 ("mscale=... is not supported by TE's fused
  // RoPE. Using unfused implementation.", rope_utils.py at 0d8e0714 and 3097d81d).
  bool fused_rope_unscaled = false;
  // Megatron-Core's attention splits its fused QKV GEMM's output [s, b, ng, (np/ng + 2) hn]
  // into q, k, v views (attention.py get_query_key_value_tensors): the query's reshape to
  // [s, b, np, hn] copies it when a rank holds several KV groups of several query heads each,
  // Transformer Engine's attention copies the still-strided value (its qkv layout is then
  // "not supported": x.contiguous()), a key layernorm copies the key, and split's backward
  // concatenates dq, dk, dv (strategies/lowering/transformer_layer.cpp qkv_split_copies).
  bool qkv_split_copies = false;
  // The model code runs q, k, v (and a gated MLP's gate and up) as separate nn.Linear modules
  // on one normed input (TorchTitan's and Hugging Face's Llama): autograd sums their input
  // gradients in the backward (strategies/lowering/transformer_layer.cpp linear_grad_sums).
  bool separate_linears = false;
  // The layer runs under torch.compile: AOTAutograd partitions its forward and backward, and of
  // the outputs a per-op recomputation policy marks to save (Recompute::kOpSelective) keeps only
  // those the backward reads, directly or to recompute what it reads
  // (torch/_functorch/partitioners.py min_cut_rematerialization_partition: a MUST_SAVE node is
  // banned from recomputation, and saved if the backward needs it). Eager selective
  // checkpointing caches every such output until the layer's recomputation
  // (torch/utils/checkpoint.py _CachingTorchDispatchMode stores each MUST_SAVE op's output):
  // the output projection of the feed-forward, read by nothing in the backward, too.
  bool compiled = false;
  // A non-gated MLP's bias and activation run in its up projection GEMM's epilogue (cuBLASLt
  // CUBLASLT_EPILOGUE_GELU_AUX_BIAS: the GEMM writes the activation and, for the backward, the
  // pre-activation; the down projection's data-gradient GEMM applies the activation's derivative
  // and the bias gradient in its own epilogue, DGELU_BGRAD): flash-attn's FusedDenseGeluDense /
  // FusedMLP (flash_attn/ops/fused_dense.py, heuristic 0 on A100), which its GPT training
  // configs select with fused_dense_gelu_dense / fused_mlp. No separate bias+activation kernel,
  // forward or backward; SwiGLU's gated MLPs are left as they are.
  bool gemm_activation = false;
  AttentionKernel attention_kernel = AttentionKernel::kFlash2;  // with flash_attention
  // Operator graphs: every run of consecutive ops from a GEMM or convolution (or any op) through
  // the memory-bound ops after it (stencils, elementwise, norms, pools, softmax) that each read
  // an op of the run is one kernel: conv+BN+ReLU+pool,
  // a whole LSTM cell, blur+Sobel+sharpen as one tiled pass (Halide's compute_at; TVM and XLA's
  // loop fusion). Only tensors that enter or leave the run, or are saved, go through memory.
  bool whole_chain = false;
  std::vector<std::vector<std::string>> graph_groups;  // explicit op groups (op graphs)
  bool operator==(const FusionPlan&) const = default;
};

enum class CpComm { kRing, kAllToAll, kAllGather };
// How ring attention merges each step's partial output (its log-sum-exp rescaling) and
// accumulates the backward's per-step gradients: kFused, one 16-bit kernel a step (Transformer
// Engine's jit-fused out/lse corrections and in-place dq, dkv adds); kEagerFp32, PyTorch's
// context_parallel (torch/distributed/tensor/experimental/_attention.py: _SDPAMerger in fp32
// with convert_to_f32, torch.cat partial updates, gradients accumulated and rotated in fp32).
enum class CpMerge { kFused, kEagerFp32 };
// How ring attention's K/V blocks reach the ranks: kPass, each step's block passed to the next
// rank beside the attention on the block before it; kAllGather, PyTorch's
// set_rotate_method("allgather") (_AllGatherRotater, TorchTitan's default
// context_parallel_rotate_method in its 2024-25 releases): every rank's K and V all-gathered
// once, beside the first (diagonal) step only, the steps then reading the gathered blocks; the
// backward gathers K and V again the same way and still passes dK, dV around the ring.
enum class CpRotate { kPass, kAllGather };
// How an MoE layer's expert GEMMs run: kGrouped, one grouped-GEMM kernel over the local experts
// (CUTLASS grouped GEMM, torch._grouped_mm); kMultiStream, Transformer Engine's GroupedLinear
// (Megatron-Core's TEGroupedMLP): a cuBLAS GEMM per local expert, round robin on 4 streams,
// with TEGroupedMLP's activation path (a non-gated activation and its router-weight multiply
// as eager ops; gated ones fused).
enum class ExpertGemm { kGrouped, kMultiStream };
// How an MoE layer's tokens reach their experts' ranks (sim/cost/collective_cost.h
// expert_exchange_bytes): kAllToAll, an NCCL all-to-all that sends every routed copy of a
// token to its expert's rank (Megatron-Core's alltoall dispatcher); kDeepEP, DeepEP's normal
// kernels (deepseek-ai/DeepEP README; Megatron-Core's flex dispatcher, and NVIDIA's HybridEP with
// the same structure) that send each token once over RDMA to every node holding one of its
// experts, to the GPU of the same local index, which forwards it over NVLink to each GPU there
// that needs it; the combine returns the same way, reduced within the node first. kHybridEP,
// NVIDIA's HybridEP (DeepEP's hybrid-ep branch; Megatron-Core's flex dispatcher with
// moe_flex_dispatcher_backend hybridep): the same node-deduplicated send, and before it, once
// per MoE layer forward, an NCCL all-gather of every EP rank's routing map (a bool a token and
// expert) that the preprocess kernel reads (csrc/hybrid_ep/executor/executor.cu
// allgather_routing_map; the dispatch handle it builds serves the combine and the backward).
enum class EpDispatch { kAllToAll, kDeepEP, kHybridEP };
// kDelayed / kCurrent: Transformer Engine's DelayedScaling (scales from an amax history) and
// Float8CurrentScaling (an amax pass over each tensor first); both cast weights once per
// iteration and an activation or gradient in one fused cast-transpose kernel.
enum class Fp8Scaling { kTensorwise, kRowwise, kDelayed, kCurrent };
// Which ranks Transformer Engine's DelayedScaling reduces its amaxes over, once per
// fp8_autocast region and direction (Megatron-Core: one region per model chunk, so a chunk's
// forward and its backward each end with one all-reduce of the rank's amaxes, MAX, which the
// compute stream waits for; strategies/lowering/iteration.cpp fp8_amax_reduce).
//   kStage: the stage's tp x cp x dp ranks (Megatron-Core's get_amax_reduction_group with
//     context parallelism, its default; TE's default at every version: from TE 1.6, #575,
//     all_reduce(async_op=False) over the fp8_group).
//   kTensor: the tensor-parallel ranks only (TE <= 1.5 with NVTE_DP_AMAX_REDUCE_INTERVAL=0, as
//     NeMo-Framework-Launcher 24.03 set it; Megatron-Core's tp_only_amax_red from core 0.9).
//   kNone: no reduction (one rank, or TE's reduce_amax False).
enum class Fp8AmaxReduction { kStage, kTensor, kNone };
// How overlap_tp hides a TP collective behind its GEMM: Transformer Engine's userbuffers
// overlap every one (Megatron-Core's tp_comm_overlap); PyTorch's async TP (torch.compile's
// micro-pipeline pass, torch/_inductor/fx_passes/micro_pipeline_tp.py) fuses only an all-gather
// with the matmuls that read it and a reduce-scatter with the one matmul that produces it.
enum class TpOverlap { kUserbuffers, kMicroPipeline };

// When ZeRO-3/FSDP gathers a stage's parameters and reduces its gradients.
// kPerMicroBatch: before each use and after each backward (ZeRO-3, Rajbhandari et al. SC20;
// FSDP2 without pipelining). kPerIteration: once per iteration, as PyTorch's pipelining runs
// FSDP2 stages (torch/distributed/pipelining/stage.py backward_maybe_with_nosync turns off
// resharding and gradient sync for every backward but the stage's last, and TorchTitan
// sets reshard_after_forward=False under pp): the stage's parameters stay gathered from its
// first forward to its last backward, its gradients accumulate unsharded, in the reduction
// dtype, and are reduce-scattered once. kAuto: kPerIteration when pp > 1, else kPerMicroBatch.
enum class Zero3Reshard { kAuto, kPerMicroBatch, kPerIteration };
// When ZeRO-3/FSDP gathers its root unit, the stage's parameters outside the wrapped layers
// (the embedding, the final norm, the output head), when it reshards per micro-batch:
// kMicroBatch: with the first layer before every micro-batch's forward (FSDP2: the root unit
//   is resharded after each backward; not after the forward, so it is not re-gathered for
//   the backward). kIteration: once per iteration, kept until the optimizer step updates its
//   shards (Megatron-FSDP, Megatron-LM 0d8e0714 megatron_fsdp.py: only FSDP-unit modules are
//   released after their forward and backward, so a non-unit module's buckets stay gathered
//   and the all-gather of its every forward skips them, param_and_grad_buffer.py
//   all_gather_params gathering only EMPTY buckets); its gradients are still reduce-scattered
//   every micro-batch (_root_post_backward). Nothing changes below ZeRO-3.
enum class FsdpRootGather { kMicroBatch, kIteration };

// What an iteration runs: a training step (forward, backward, gradient sync, optimizer), or
// inference (issue 16): micro-batches (frames, tiles, requests) streamed forward through the
// pipeline, no backward, no gradients, no optimizer states.
enum class Workload { kTraining, kInference };

// Optimizer offload (ZeRO-Offload: Ren et al., "ZeRO-Offload: Democratizing Billion-Scale Model
// Training", USENIX ATC'21, Sec. 4; DeepSpeed's offload_optimizer {"device": "cpu"}): each rank's
// shard of the optimizer states (fp32 master weights and moments) and of the gradients lives in
// host memory; after the gradient reduction the rank copies its gradient shard to the host over
// PCIe, the CPU runs the optimizer step on it (DeepSpeed's CPU Adam, bound by host memory
// bandwidth), and the updated 16-bit weight shard comes back before the parameter gather.
enum class Offload { kNone, kOptimizer };

// How a pipeline's layers split over its stages: kAuto (kBalanced on a mixed cluster, else
// kEven), kEven (equal shares, the first stages one more when they do not divide), kBalanced
// (shares proportional to the sustained GEMM rate of the devices each stage runs on, largest
// remainder), kExplicit (Strategy::stage_layers, one count per stage of the chain).
enum class StageSplit { kAuto, kEven, kBalanced, kExplicit };

struct PlacementRule {
  std::string ops;  // op name, name prefix (up to a dot) or "*"
  int device = 0;   // device index within the replica
  bool operator==(const PlacementRule&) const = default;
};

struct Strategy {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0 = devices / (tp * cp * pp)
  // Context parallelism: each sequence split over cp ranks (tokens s / cp each), attention by
  // ring exchange of K and V among them (Megatron-Core/Transformer Engine, TorchTitan). Rank
  // order tp, cp, dp, pp; gradients are reduced (and ZeRO-sharded) over dp x cp.
  int cp = 1;
  // How the cp ranks share attention: kRing (Megatron-Core "p2p", TorchTitan's ring: K/V
  // blocks passed around beside the attention), kAllToAll (DeepSpeed-Ulysses, Megatron-Core
  // "a2a": all-to-alls before and after the attention trade the sequence split for a head
  // split; needs heads and K/V heads per tp rank divisible by cp) or kAllGather (Llama 3's
  // context parallelism, Transformer Engine's cp_comm_type "all_gather": the whole sequence's
  // K and V gathered before the attention, on the critical path, and their gradients
  // reduce-scattered after it).
  CpComm cp_comm = CpComm::kRing;
  CpMerge cp_merge = CpMerge::kFused;
  CpRotate cp_rotate = CpRotate::kPass;  // with cp_comm kRing
  // Whether ring attention's exchanges (its K/V blocks, the gathered rotation's all-gather and
  // the backward's dK/dV passes) run beside the attention steps (true: Transformer Engine's
  // streams, PyTorch's asynchronous functional collectives in eager mode, waited where the
  // next step first reads them) or each is waited where it is issued (false: PyTorch's
  // context_parallel traced by torch.compile: under tracing a functional collective returns
  // wait_tensor() at once, torch/distributed/_functional_collectives.py _maybe_wrap_tensor,
  // and Inductor moves no wait unless reorder_for_compute_comm_overlap, default False).
  bool cp_overlap = true;
  ExpertGemm expert_gemm = ExpertGemm::kGrouped;
  EpDispatch ep_dispatch = EpDispatch::kAllToAll;
  // The model code repeats K and V heads up to the query heads before the attention kernel
  // (TorchTitan's Llama: repeat_kv before SDPA): a copy per layer, the attention's K/V inputs
  // (and a ring's K/V blocks) at the query heads' width.
  bool kv_repeat = false;
  // Expert parallelism (mixture-of-experts models): the routed experts of each layer split over
  // ep ranks, tokens sent to their experts' ranks by an all-to-all and back by another (GShard;
  // Megatron-Core's alltoall token dispatcher). The ep ranks are folded over the tp x cp x dp
  // ranks of a stage (Megatron-Core's MoE parallel folding), experts unsplit by tensor
  // parallelism (expert tp 1); their gradients are reduced over the tp*cp*dp/ep replicas.
  int ep = 1;
  int zero_stage = 0;
  Zero3Reshard zero3_reshard = Zero3Reshard::kAuto;
  FsdpRootGather fsdp_root_gather = FsdpRootGather::kMicroBatch;
  Workload workload = Workload::kTraining;
  Offload offload = Offload::kNone;
  // Ranks one ZeRO/FSDP shard group spans; 0 = the whole data-parallel group (dp x cp). Smaller:
  // hybrid sharding (HSDP: FSDP2's dp_shard x dp_replicate, Megatron's distributed-optimizer
  // instances): states sharded over the group, replicated across dp / shard_group groups,
  // gradients reduce-scattered inside a group and all-reduced across the replicas.
  int shard_group = 0;
  bool sequence_parallel = false;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  int interleave = 1;  // v, model chunks per pipeline rank
  bool uneven_stages = false;  // allow pp that does not divide layers
  // Layers of the first and the last virtual stage (Megatron's
  // decoder_first/last_pipeline_num_layers), so that they balance the embedding and the head;
  // 0 = an even share. The other stages split the rest.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // The even split counts the embedding (the loss: output projection and cross-entropy) as
  // one more layer (Megatron-Core's account_for_embedding_in_pipeline_split and
  // account_for_loss_in_pipeline_split): the first (last) virtual stage takes one layer fewer,
  // none when the share is one (the Llama 3 Herd's layout, Sec. 3.3.2: 126 layers over 128
  // virtual stages, "the first model chunk on the first stage has only the embedding").
  bool embedding_as_layer = false;
  bool loss_as_layer = false;
  StageSplit stage_split = StageSplit::kAuto;
  std::vector<int> stage_layers;  // kExplicit: layers of each stage, in chain order
  int micro_batch = 1;
  int global_batch = 1;
  Recompute recompute = Recompute::kNone;
  uint8_t recompute_modules = kModuleCoreAttn;  // RecomputeModule bits, for kSelective
  // With recompute kFull: > 0 recomputes only the first recompute_layers layers of each
  // virtual pipeline stage and keeps every other layer's activations (Megatron's
  // --recompute-method block --recompute-num-layers N; TorchTitan's every-n-th-layer
  // selective checkpointing costs the same). 0: every layer.
  int recompute_layers = 0;
  // false: the iteration's last micro-batch keeps its activations and recomputes nothing
  // (torchgpipe's checkpoint='except_last', its default: that backward follows its forward at
  // once, so checkpointing it saves no memory). Only with recompute != none.
  bool recompute_last_micro_batch = true;
  FusionPlan fusion;
  bool overlap_dp = false;  // DP gradient buckets overlapped with backward (and ZeRO prefetch)
  bool overlap_tp = false;  // TP communication overlapped with the adjacent GEMMs
  TpOverlap tp_overlap = TpOverlap::kUserbuffers;  // which collectives overlap_tp hides
  // Megatron-LM's asynchronous tensor-parallel gradient reduction (default since September
  // 2021, --no-async-tensor-model-parallel-allreduce turns it off; ColumnParallelLinear's
  // backward in megatron/mpu/layers.py): the all-reduce (reduce-scatter under SP) of a
  // column-parallel layer's input gradient runs beside that layer's weight-gradient GEMM.
  // Without overlap_tp, only those collectives are hidden.
  bool async_tp_grad_reduce = false;
  // MoE token all-to-alls of one micro-batch run beside the compute of another: a forward and
  // a backward of different micro-batches interleaved (DeepSeek-V3's DualPipe, Sec. 3.2.1;
  // Megatron-Core's --overlap-moe-expert-parallel-comm), so each pass's dispatch and combine
  // hide behind the other pass's compute.
  bool overlap_ep = false;
  // Operator graphs: streams per device on which independent branches run concurrently,
  // sharing the device (sim/cost/concurrent_kernels.h); 1 runs every kernel after the last.
  int streams = 1;
  // Operator graphs: model parallelism by placement. Each rule puts the ops it names on one
  // device of a replica: a rule's key is an op name, a name prefix up to a dot ("tower0" takes
  // "tower0.fc1") or "*" (every op no other rule takes); the longest matching key wins. A
  // replica spans placement_devices() devices, which run their ops concurrently as the graph's
  // dependencies allow; an edge between ops on two devices sends the tensor (forward) and its
  // gradient (backward). Empty: every op on one device.
  std::vector<PlacementRule> placement;
  // Devices one replica of an operator graph spans: 1 + the highest device a rule names.
  int placement_devices() const;
  // Pipeline sends/receives run asynchronously beside compute. When false (Megatron's 1F1B),
  // a stage's send blocks it until the transfer is done.
  bool overlap_p2p = false;
  // Pipeline sends/receives asynchronous in an interleaved schedule only (ScheduleKind::
  // kInterleaved1F1B with more than one chunk), blocking otherwise: Megatron-Core's overlap_p2p_comm,
  // which its interleaved schedule reads (schedules.py forward_backward_pipelining_with_
  // interleaving: each pass's send and receive posted, then waited before the next pass that
  // needs them) and its non-interleaved schedule rejects ("Non-interleaved pipeline parallelism
  // does not support overlapping p2p communication").
  bool overlap_p2p_interleaved = false;
  double dp_bucket_B = 0;   // gradient bucket size in bytes; 0 = 40M elements (Megatron)
  CollectiveAlgorithm collective = CollectiveAlgorithm::kAuto;
  DType dtype = DType::kBf16;   // compute and activation precision
  // FP8 training: linear layers keep the FP8 cast of their input for the weight gradient
  // (Transformer Engine) rather than the 16-bit input (false: torchao's Float8Linear).
  bool fp8_saved_inputs = true;
  // How FP8 training scales each linear layer's operands: one scale per tensor (Transformer
  // Engine's delayed scaling, torchao's tensorwise recipe) or one per row (torchao's rowwise
  // recipe: costlier casts and its own GEMM kernels, sim/cost/kernel_cost.cpp).
  Fp8Scaling fp8_scaling = Fp8Scaling::kTensorwise;
  // fp8_scaling kDelayed only: the amax reduction per region and direction (Fp8AmaxReduction).
  Fp8AmaxReduction fp8_amax_reduction = Fp8AmaxReduction::kStage;
  bool master_weights_fp32 = true;  // mixed precision keeps an fp32 copy in the optimizer
  // With 16-bit parameters, the fp32 master copy kept as the low 16 bits only, the parameter
  // holding the high ones: Apex's DistributedFusedAdam store_param_remainders, which NeMo 1.x
  // turns on for bf16 O2 with fp32 optimizer states (megatron_base_model.py
  // setup_optimization): 2 B a parameter in place of 4.
  bool master_param_remainders = false;
  // PyTorch automatic mixed precision (torch.autocast: PyTorch Lightning's "bf16"/"16-mixed"
  // precision, Hugging Face Trainer's --bf16/--fp16 without DeepSpeed): the parameters stay
  // fp32 and every linear layer casts its weight and bias to the 16-bit dtype when it runs,
  // once per forward pass (and again when recomputed); its gradients come back 16-bit and are
  // cast to fp32 and accumulated into the fp32 .grad. Parameters and gradients are 4 B, the
  // optimizer keeps no separate master copy (strategies/lowering/autocast_casts.h).
  bool autocast_weights = false;
  // DeepSpeed's BF16_Optimizer (bf16 under ZeRO 0/1: Megatron-DeepSpeed's bf16 runs, BLOOM's):
  // after every micro-batch's backward it adds each parameter's 16-bit gradient into an fp32
  // buffer, a pass of its own over all the rank's parameters (update_hp_grads;
  // strategies/lowering/autocast_casts.h append_hp_grad_accumulation). Needs dtype bf16.
  bool hp_grad_accumulation = false;
  // Gradients reduced (and their shards kept) in fp32: FSDP2's reduce_dtype float32
  // (TorchTitan's default), Megatron's grad_reduce_in_fp32.
  bool grad_reduce_fp32 = false;
  // Sequence-parallel collectives gather and scatter on the sequence dim of batch-first
  // activations, which NCCL cannot do in place: each all-gather is followed, and each
  // reduce-scatter preceded, by a copy of the whole (gathered) tensor into the other layout
  // (PyTorch functional collectives' all_gather_tensor / reduce_scatter_tensor with
  // gather_dim 1: torch.cat of the chunks; TorchTitan's DTensor SequenceParallel). Fused
  // collective matmuls (async TP) write the layout directly.
  bool sp_reorder_copies = false;
  // FP8 training with tensorwise scaling: the sequence-parallel all-gather before each
  // column-parallel linear layer moves its input already cast to FP8, 1 B an element (torchao's
  // PrepareFloat8ModuleInput / Float8ColwiseParallel: the cast runs on the rank's shard, then
  // the all-gather; the GEMMs find their input cast). The backward's reduce-scatter of the
  // input gradient stays 16-bit.
  bool fp8_tp_all_gather = false;
  // FP8 training with tensorwise scaling under ZeRO-3/FSDP: the linear layers' weights are cast
  // to FP8 on each rank's shard and all-gathered in FP8, 1 B a parameter (torchao's
  // WeightWithDynamicFloat8CastTensor fsdp_pre_all_gather; TorchTitan's
  // --float8.enable_fsdp_float8_all_gather). The GEMMs find their weight cast; the gathered
  // weight is held at 1 B a parameter.
  bool fp8_fsdp_all_gather = false;
  // Transformer Engine's FP8 parameters (Megatron-Core --fp8-param-gather; Megatron-Bridge's
  // FP8 current-scaling precision config sets it): with delayed or current scaling, the linear
  // layers' weights live as FP8 tensors, so the data-parallel parameter all-gather (ZeRO-1/2
  // after the step, Megatron-FSDP's ZeRO-3 gathers) moves 1 B a linear parameter. The master
  // shard is quantized once per step (the distributed optimizer's quantize_param_shard), and
  // each gathered weight is transposed once per iteration for the backward (Hopper's FP8 GEMMs
  // read both layouts); rowwise and transposed copies hold 2 B a parameter, as 16-bit weights.
  bool fp8_param_gather = false;
  // Megatron-Core's TEGroupedMLP under FP8: each local expert's token rows padded to the FP8
  // GEMM's alignment (16) before the grouped fc1 and unpadded after fc2, with Transformer
  // Engine's Fp8Padding / Fp8Unpadding (a copy of the expert input and of the expert output,
  // and the mirror copies of their gradients: fp8_padding.py multi_padding_kernel). In force
  // for a dropless FP8 MoE whose dispatcher hands over unaligned counts: the all-to-all, and
  // DeepEP until Megatron-Core fused the padding into its permute (554ce493, 2026-02); HybridEP
  // pads in its own permute, and capacity-padded routing is aligned already.
  bool expert_fp8_padding = false;
  // ZeRO-3 as FSDP2 runs it (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): each
  // layer's all-gather output is copied out into the parameters (split_with_sizes_copy), and
  // each reduce-scatter's input is copied in from the gradients (_chunk_cat, cast to the
  // reduce dtype): memory passes over the layer's unsharded parameters.
  bool fsdp_copies = false;
  // PyTorch's pipelining runtime (torch.distributed.pipelining, TorchTitan's pipeline) keeps
  // the last stage's output of every micro-batch (the logits: _PipelineStageBase.output_chunks,
  // appended by forward_one_chunk and cleared when the next step starts) for the schedule's
  // merged result: micro-batches x the logits stay on that stage until the step ends.
  bool pp_keeps_outputs = false;
  // Host (CPU) time the framework spends issuing one kernel: eager PyTorch's Python call,
  // dispatcher, autograd recording or backward node, and the CUDA launch. The CPU runs ahead of
  // the device, so it costs nothing while kernels are longer; a block whose kernels are shorter
  // than their issue time waits for the host (sim/cost/block_cost.cpp, add_host_waits). 0 = not modelled (CUDA
  // graphs, or an unknown stack).
  double host_overhead_s = 0;
  Optimizer optimizer = Optimizer::kAdam;
  // The dtype of the optimizer's moments (Adam's m and v, SGD's momentum): fp32, or bf16 as
  // Megatron-Core's precision-aware optimizer keeps them (exp_avg_dtype / exp_avg_sq_dtype
  // bfloat16 in Megatron-Bridge's DeepSeek-V3 recipes) and as torch.optim.Adam does for bf16
  // parameters (its states take the parameter's dtype).
  MomentDtype optimizer_moments = MomentDtype::kFp32;
  bool operator==(const Strategy&) const = default;
};

// Model chunks per pipeline rank: `interleave`, or DualPipe's two (one per direction) and
// ZB-V's two (the V).
inline int pipeline_chunks(const Strategy& s) {
  const bool two = s.schedule == ScheduleKind::kDualPipe || s.schedule == ScheduleKind::kZeroBubbleV;
  return two ? 2 : s.interleave;
}

// Whether the pipeline's sends run beside the compute: overlap_p2p, or overlap_p2p_interleaved
// with an interleaved schedule of more than one chunk (Megatron-Core's overlap_p2p_comm).
inline bool pipeline_sends_overlap(const Strategy& s) {
  return s.overlap_p2p || (s.overlap_p2p_interleaved && s.schedule == ScheduleKind::kInterleaved1F1B &&
                           pipeline_chunks(s) > 1);
}

std::string_view recompute_name(Recompute r);
// "selective" or, when the modules are not the default core attention,
// "selective(core_attn,mlp)": the recomputation as a report shows it.
std::string recompute_label(const Strategy& s);
// The modules' names in Megatron-Core's order: "mlp+moe_act".
std::string recompute_modules_text(uint8_t modules, char separator = '+');
std::string_view collective_algorithm_name(CollectiveAlgorithm a);

// Named fusion presets: "none", "epilogues", "megatron", "all".
std::vector<std::string> fusion_preset_names();
bool fusion_preset(std::string_view name, FusionPlan* out);
std::string describe_fusion(const FusionPlan& f);  // "bias+gelu, bias+dropout+add, softmax"
std::string fusion_label(const FusionPlan& f);     // the preset's name, or "custom"

}  // namespace stratasim
