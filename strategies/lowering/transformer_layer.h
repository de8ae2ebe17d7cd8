// Builds the forward graph of one transformer layer (Megatron-style: pre-LN, TP-sharded
// attention and MLP, optional sequence parallelism) for one micro-batch on one device.
#pragma once

#include "strategies/lowering/layer_graph.h"
#include "strategies/model/model_spec.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

// Transformer Engine's compute streams for its multi-stream GEMMs (TransformerEngine v2.8
// common/util/multi_stream.cpp: num_compute_streams = 4).
inline constexpr int kTeComputeStreams = 4;

struct LayerShape {
  int micro_batch = 1;
  int tp = 1;
  int cp = 1;  // context parallel: this rank holds seq_len / cp tokens of each sequence
  CpComm cp_comm = CpComm::kRing;
  CpMerge cp_merge = CpMerge::kFused;
  bool cp_gather_rotate = false;  // Strategy::cp_rotate kAllGather, with ring attention
  bool cp_overlap = true;         // Strategy::cp_overlap: the ring's exchanges beside the attention
  bool kv_repeat = false;  // Strategy::kv_repeat
  int ep = 1;  // expert parallel: this rank holds experts / ep of each MoE layer's experts
  bool sequence_parallel = false;
  bool sp_reorder_copies = false;  // Strategy::sp_reorder_copies (applies only with SP)
  bool fp8_tp_gather = false;      // Strategy::fp8_tp_all_gather, in force (SP, tp > 1, fp8 tensorwise)
  // Strategy::fp8_fsdp_all_gather in force (Plan::fp8_weight_gather): the linear layers'
  // weights arrive gathered in FP8 (LayerGraph::fp8_weights_gathered).
  bool fp8_weight_gather = false;
  // Async TP's micro-pipeline (overlap_tp with TpOverlap::kMicroPipeline) fuses each
  // all-gather with the matmuls reading it and each reduce-scatter with the one matmul
  // producing it, in the layout they need: of the layout copies only the backward's before the
  // unmatched reduce-scatters of the column-parallel layers' input gradients remain.
  bool tp_micro_pipeline = false;
  // Strategy::fsdp_copies in force (ZeRO-3 gathering per micro-batch over more than one rank):
  // bytes per 16-bit parameter element of the gathered weights (2: bf16; 1: FSDP's float8
  // all-gather) and of the reduce-scatter's input (4: fp32 reduce); 0 = none.
  double fsdp_gather_element_bytes = 0;
  double fsdp_reduce_element_bytes = 0;
  double fsdp_params = 0;  // the layer's parameters on this rank (0: its ops' weights)
  // The routed experts stay out of FSDP's copies: every rank holds its experts whole (edp 1),
  // so FSDP neither gathers nor reduce-scatters them (Plan::edp).
  bool fsdp_skips_experts = false;
  // Strategy::fp8_fsdp_all_gather with ZeRO-3 gathering per micro-batch: the shard's share of
  // the weights each rank casts to FP8 before each gather (1 / shard; 0 = none), and the
  // layer's parameters on this rank that are cast (its Float8Linear weights: not the routed
  // experts').
  double fp8_shard_share = 0;
  double fp8_cast_params = 0;
  double element_bytes = 2;  // activation dtype
  bool fp8_saved_inputs = false;  // LayerGraph::fp8_saved_fraction: FP8 training saving FP8 inputs
  bool causal = true;        // decoder: causal attention (flash skips masked blocks)
  bool forward_only = false; // inference: no backward kernels, nothing saved for one
  FusionPlan fusion;
  uint8_t recompute_modules = kModuleCoreAttn;  // Strategy::recompute_modules
  // Streams the per-expert GEMMs of an MoE layer spread over (Strategy::expert_gemm): 4 for
  // Transformer Engine's GroupedLinear, 0 for one grouped kernel.
  int expert_gemm_streams = 0;
  // The MoE dispatch is an all-to-all of per-expert copies (Strategy::ep_dispatch kAllToAll):
  // what a rank receives arrives grouped by source rank, so with more than one local expert it
  // is sorted by expert after the dispatch and back before the combine.
  bool expert_sort = false;
  // Strategy::ep_dispatch kHybridEP: each MoE layer's forward all-gathers the EP ranks' routing
  // maps (a bool a token and expert) before its dispatch.
  bool routing_map_gather = false;
  // Strategy::expert_fp8_padding in force (FP8, a dispatcher other than HybridEP): the local
  // experts' rows padded before fc1 and unpadded after fc2; dropless routing only (the model's
  // capacity factor 0), checked where the layer is built.
  bool expert_fp8_padding = false;
  // Strategy::autocast_weights: fp32 parameters cast to the activations' dtype at each use
  // (strategies/lowering/autocast_casts.h).
  bool autocast_weights = false;
  // Strategy::hp_grad_accumulation: a backward-only pass adding the block's 16-bit gradients
  // into fp32 buffers (autocast_casts.h append_hp_grad_accumulation).
  bool hp_grad_accumulation = false;
};

LayerGraph build_transformer_layer(const TransformerSpec& t, const LayerShape& shape);

}  // namespace stratasim
