#include "strategies/lowering/block_cache.h"

#include <algorithm>
#include <unordered_map>

#include "strategies/lowering/autocast_casts.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/edge_blocks.h"

namespace stratasim {
namespace {

// Everything a transformer block's lowering reads, as plain values.
struct BlockKey {
  TransformerSpec t;
  int micro_batch, tp, cp, ep, pp_gt_1;
  CpComm cp_comm;
  CpMerge cp_merge;
  bool cp_gather_rotate;
  bool cp_overlap;
  bool kv_repeat;
  bool sp, sp_reorder_copies, fp8_tp_gather, tp_micro_pipeline, causal, fp8_saved_inputs, forward_only;
  double element_bytes;
  double fsdp_gather_element_bytes, fsdp_reduce_element_bytes;
  bool fsdp_skips_experts;
  FusionPlan fusion;  // compared whole (its defaulted ==), so a new field cannot be missed
  Recompute recompute;
  uint8_t recompute_modules;
  int expert_gemm_streams;
  bool expert_sort;
  bool routing_map_gather;
  bool expert_fp8_padding;
  bool fp8_weight_gather;
  double fp8_shard_share;
  bool autocast_weights;
  bool hp_grad_accumulation;

  bool operator==(const BlockKey& o) const {
    return t == o.t && micro_batch == o.micro_batch && tp == o.tp && cp == o.cp && ep == o.ep &&
           cp_comm == o.cp_comm && cp_merge == o.cp_merge && cp_gather_rotate == o.cp_gather_rotate &&
           cp_overlap == o.cp_overlap &&
           kv_repeat == o.kv_repeat &&
           pp_gt_1 == o.pp_gt_1 &&
           sp == o.sp && sp_reorder_copies == o.sp_reorder_copies && fp8_tp_gather == o.fp8_tp_gather && tp_micro_pipeline == o.tp_micro_pipeline && causal == o.causal && fp8_saved_inputs == o.fp8_saved_inputs &&
           forward_only == o.forward_only &&
           element_bytes == o.element_bytes &&
           fsdp_gather_element_bytes == o.fsdp_gather_element_bytes &&
           fsdp_reduce_element_bytes == o.fsdp_reduce_element_bytes &&
           fsdp_skips_experts == o.fsdp_skips_experts && fusion == o.fusion && recompute == o.recompute &&
           recompute_modules == o.recompute_modules && expert_gemm_streams == o.expert_gemm_streams &&
           expert_sort == o.expert_sort && routing_map_gather == o.routing_map_gather && expert_fp8_padding == o.expert_fp8_padding && fp8_weight_gather == o.fp8_weight_gather &&
           fp8_shard_share == o.fp8_shard_share && autocast_weights == o.autocast_weights &&
           hp_grad_accumulation == o.hp_grad_accumulation;
  }
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    size_t h = 1469598103934665603ull;
    auto mix = [&](long long v) { h = (h ^ static_cast<size_t>(v)) * 1099511628211ull; };
    for (long long v : {k.t.layers, k.t.hidden, k.t.heads, k.t.kv_heads, k.t.ffn_hidden,
                        k.t.seq_len, k.t.vocab}) {
      mix(v);
    }
    mix(static_cast<int>(k.t.activation) | static_cast<int>(k.t.norm) << 4 |
        k.t.tied_embeddings << 8 | k.t.learned_positions << 9 | k.t.linear_bias << 10 |
        k.t.rotary << 11);
    mix(k.micro_batch);
    mix(k.tp);
    mix(k.cp | static_cast<int>(k.cp_comm) << 20 | static_cast<int>(k.cp_merge) << 22 | k.kv_repeat << 24 |
        k.cp_gather_rotate << 25 | k.cp_overlap << 26);
    mix(k.ep | static_cast<long long>(k.t.moe.experts) << 24 | static_cast<long long>(k.t.moe.top_k) << 44);
    mix(k.t.head_dim_override);
    mix(k.pp_gt_1 | k.sp << 1 | k.causal << 2 | static_cast<int>(k.recompute) << 3 |
        k.fp8_saved_inputs << 8 | k.forward_only << 9 | k.sp_reorder_copies << 10 | k.fp8_tp_gather << 11 | k.tp_micro_pipeline << 12 |
        k.recompute_modules << 13 | k.expert_gemm_streams << 21 | k.expert_sort << 29 |
        static_cast<long long>(k.fp8_weight_gather) << 30 |
        static_cast<long long>(k.autocast_weights) << 31 |
        static_cast<long long>(k.routing_map_gather) << 32 |
        static_cast<long long>(k.expert_fp8_padding) << 33 |
        static_cast<long long>(k.hp_grad_accumulation) << 34);
    mix(static_cast<long long>(k.element_bytes));
    const FusionPlan& f = k.fusion;  // the hash may leave fields out; equality may not
    mix(f.elementwise_epilogue | f.bias_dropout_residual << 1 | f.norm_residual << 2 |
        f.fused_softmax << 3 | f.flash_attention << 4 | f.fused_norm << 5 | f.fused_loss << 6 |
        f.megatron_loss_ops << 7 | f.loss_parallel << 8 | f.complex_rope << 9 | f.compiled << 10 |
        f.fused_rope_unscaled << 11 | f.qkv_split_copies << 12 | f.separate_linears << 13 | f.gemm_activation << 14);
    mix(static_cast<int>(f.attention_kernel));
    return h;
  }
};

// `hp_pass`: Strategy::hp_grad_accumulation's pass over the block's parameters on this rank
// (autocast_casts.h), appended before the block is lowered.
std::shared_ptr<Block> make_block(LayerGraph graph, Recompute mode, bool forward_only, bool hp_pass,
                                  double params, double expert_params = 0) {
  auto b = std::make_shared<Block>();
  if (hp_pass && !forward_only) {
    append_hp_grad_accumulation(graph, params + expert_params, std::max(1, parameter_tensors(graph)));
  }
  b->graph = std::move(graph);
  lower_block(*b, mode, forward_only);
  b->params = params + expert_params;
  b->expert_params = expert_params;
  return b;
}

TransformerBlocks build(const TransformerSpec& t, const LayerShape& shape, Recompute recompute,
                        bool pipelined) {
  const double tp = shape.tp, vocab = t.vocab, h = t.hidden;
  TransformerBlocks out;
  // Routed experts are split over ep (whole experts per rank), MLA's down projections are
  // whole on every tp rank, everything else is split over tp.
  const double experts = expert_layer_params(t), replicated = replicated_layer_params(t);
  const bool fo = shape.forward_only;
  LayerShape layer = shape;  // FSDP's copies move the layer's parameters on this rank
  layer.fsdp_params = (layer_params(t) - experts - replicated) / tp + replicated +
                      (shape.fsdp_skips_experts ? 0.0 : experts / shape.ep);
  layer.fp8_cast_params = (layer_params(t) - experts - replicated) / tp + replicated;
  out.layer = make_block(build_transformer_layer(t, layer), recompute, fo, shape.hp_grad_accumulation,
                         (layer_params(t) - experts - replicated) / tp + replicated,
                         experts / shape.ep);
  if (t.moe.enabled() && t.moe.first_dense_layers > 0) {
    const TransformerSpec dense = dense_variant(t);
    layer.fsdp_params = (dense_layer_params(t) - replicated) / tp + replicated;
    layer.fp8_cast_params = layer.fsdp_params;
    out.dense_layer = make_block(build_transformer_layer(dense, layer), recompute, fo, shape.hp_grad_accumulation,
                                 (dense_layer_params(t) - replicated) / tp + replicated);
  }
  // The embedding and head are never recomputed (Megatron checkpoints transformer layers only).
  // The word embedding is vocabulary-parallel; learned positions are replicated.
  out.embedding = make_block(build_embedding(t, shape), Recompute::kNone, fo, shape.hp_grad_accumulation,
                             vocab * h / tp + (t.learned_positions ? double(t.seq_len) * h : 0));
  // With tied embeddings and pp > 1, the last stage keeps a copy of the word embedding.
  const bool output_matrix = !t.tied_embeddings || pipelined;
  const double norm_params = head_params(t) - (t.tied_embeddings ? 0 : vocab * h);
  // Multi-token prediction (TransformerSpec::mtp_layers) on the last stage: per depth a layer,
  // the 2h x h projection and three norms (the embedding's, the hidden state's, its final
  // one); the output head is shared, and the word embedding too, of which a pipelined last
  // stage keeps a copy (Megatron-Core shares it with the last stage as for tied embeddings).
  const double mtp = t.mtp_layers;
  const double norm = t.norm == NormKind::kLayerNorm ? 2 * h : h;  // gain (and bias)
  const double mtp_linear = mtp * ((layer_params(t) - experts - replicated) / tp + replicated + 2 * h * h / tp);
  const double mtp_params =
      mtp_linear + mtp * 3 * norm + (mtp > 0 && pipelined && !t.tied_embeddings ? vocab * h / tp : 0);
  auto head = make_block(build_head(t, shape), Recompute::kNone, fo, shape.hp_grad_accumulation,
                         norm_params + (output_matrix ? vocab * h / tp : 0) + mtp_params,
                         mtp * experts / shape.ep);
  head->mtp_linear_params = mtp_linear + mtp * experts / shape.ep;
  out.head = head;
  return out;
}

}  // namespace

TransformerBlocks transformer_blocks(const TransformerSpec& t, const LayerShape& shape,
                                     Recompute recompute, int pp) {
  BlockKey key{t,      shape.micro_batch, shape.tp,           shape.cp, shape.ep,    pp > 1, shape.cp_comm, shape.cp_merge, shape.cp_gather_rotate, shape.cp_overlap, shape.kv_repeat,
               shape.sequence_parallel, shape.sp_reorder_copies, shape.fp8_tp_gather, shape.tp_micro_pipeline, shape.causal, shape.fp8_saved_inputs, shape.forward_only,
               shape.element_bytes, shape.fsdp_gather_element_bytes, shape.fsdp_reduce_element_bytes,
               shape.fsdp_skips_experts, shape.fusion, recompute, shape.recompute_modules, shape.expert_gemm_streams, shape.expert_sort, shape.routing_map_gather, shape.expert_fp8_padding, shape.fp8_weight_gather,
               shape.fp8_shard_share, shape.autocast_weights, shape.hp_grad_accumulation};
  thread_local std::unordered_map<BlockKey, TransformerBlocks, BlockKeyHash> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 4096) cache.clear();  // bounded: a sweep revisits a few hundred shapes
  return cache.emplace(key, build(t, shape, recompute, pp > 1)).first->second;
}

}  // namespace stratasim
