// One transformer layer, tensor by tensor. Sizes follow Korthikanti et al. 2022, Sec. 4.1
// (activation memory per layer sbh(34 + 5as/h) without parallelism): each op below notes
// the term it saves, so the 34 and 5as/h terms can be read off this file.
#include "strategies/lowering/transformer_layer.h"

#include <algorithm>
#include <cmath>

#include "strategies/lowering/autocast_casts.h"

namespace stratasim {
namespace {

class Builder {
 public:
  Builder(LayerGraph& g, const LayerShape& s) : g_(g), s_(s) {}

  int tensor(double bytes, double saved_bytes = -1) {
    g_.tensors.push_back(TensorInfo{bytes, saved_bytes < 0 ? bytes : saved_bytes});
    return static_cast<int>(g_.tensors.size()) - 1;
  }

  LayerOp& op(std::string_view name, OpClass cls, std::initializer_list<int> in, int out) {
    LayerOp o;
    o.name = name;
    o.cls = cls;
    int i = 0;
    for (int t : in) o.inputs[i++] = static_cast<int16_t>(t);
    o.output = static_cast<int16_t>(out);
    o.module = module_;
    g_.ops.push_back(o);
    return g_.ops.back();
  }

  // C[m x n] = A[m x k] B[k x n], `batch` times: 2 * batch * m * n * k FLOP.
  LayerOp& matmul(std::string_view name, int in, int out, double weights, double m, double n,
                  double k, double batch = 1) {
    LayerOp& o = op(name, OpClass::kMatmul, {in}, out);
    o.matmul_flops = o.model_flops = 2 * batch * m * n * k;
    o.gemm_m = m, o.gemm_n = n, o.gemm_k = k, o.gemm_batch = batch;
    o.weight_bytes = weights;
    o.saves = kSaveInput0;
    return o;
  }

  LayerOp& elementwise(std::string_view name, std::initializer_list<int> in, int out,
                       double flops_per_element, FusionRule rule, int group) {
    LayerOp& o = op(name, OpClass::kMemoryBound, in, out);
    o.other_flops = flops_per_element * g_.tensors[out].bytes / s_.element_bytes;
    o.fusion = rule;
    o.fusion_group = static_cast<int16_t>(group);
    return o;
  }

  bool gemm_activation() const { return s_.fusion.gemm_activation; }
  bool fused_norm() const { return s_.fusion.fused_norm; }
  LayerOp& last() { return g_.ops.back(); }
  LayerGraph& g() { return g_; }
  // The Megatron-Core module (RecomputeModule bits) the ops made from now on belong to.
  void set_module(uint8_t m) { module_ = m; }
  void tensor_is_fp8(int t) { g_.tensors[t].fp8 = true; }

  // Tensor-parallel collective: bytes are the full message per rank.
  int collective(std::string_view name, CommKind kind, int in, double out_bytes,
                 double saved_bytes, double message_bytes) {
    int out = tensor(out_bytes, saved_bytes);
    LayerOp& o = op(name, OpClass::kCollective, {in}, out);
    o.comm = kind;
    o.comm_bytes = message_bytes;
    return out;
  }

  bool rule_on(FusionRule r) const {
    switch (r) {
      case FusionRule::kEpilogue: return s_.fusion.elementwise_epilogue;
      case FusionRule::kGemmEpilogue: return s_.fusion.gemm_activation;
      case FusionRule::kBiasDropoutResidual: return s_.fusion.bias_dropout_residual;
      case FusionRule::kSoftmax: return s_.fusion.fused_softmax;
      default: return false;
    }
  }

 private:
  LayerGraph& g_;
  const LayerShape& s_;
  uint8_t module_ = 0;
};

struct Dims {
  double e, n, nr, h, q, kv, f, a_local, s, b, t, cp;
  double qkd, vd;  // per head: query/key width scored, value width
  double kw, vw;   // K and V width per token over all heads (before tp)
  double window, window_share;  // sliding window: keys per query (0: none), share of layers
};

Dims dims_of(const TransformerSpec& t, const LayerShape& sh) {
  Dims d{};
  d.e = sh.element_bytes;
  d.b = sh.micro_batch;
  d.s = t.seq_len;
  d.t = sh.tp;
  d.cp = sh.cp;
  d.n = d.b * d.s / d.cp;                               // tokens of the micro-batch on this rank
  d.nr = sh.sequence_parallel ? d.n / d.t : d.n;        // tokens held in the norm/dropout region
  d.h = t.hidden;
  d.q = t.attention_width();  // = h unless head_dim is set apart (Qwen3) or MLA
  d.qkd = t.qk_head_dim();
  d.vd = t.v_head_dim();
  d.kv = static_cast<double>(t.kv_heads_or_heads()) * t.head_dim();
  d.f = t.ffn_or_default();
  d.kw = t.mla.enabled() ? double(t.heads) * d.qkd : d.kv;
  d.vw = t.mla.enabled() ? double(t.heads) * d.vd : d.kv;
  d.a_local = t.heads / d.t;
  d.window = t.sliding_window;
  d.window_share = t.windowed_share();
  return d;
}

// The pre-MLP/pre-attention norm on the residual stream's region (sequence-parallel shard).
int norm(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t,
         std::string_view norm_name, int x, bool fused_input) {
  int y = B.tensor(d.nr * d.h * d.e);
  LayerOp& ln = B.elementwise(norm_name, {x}, y, 5, FusionRule::kNone, -1);
  ln.saves = kSaveInput0;  // LayerNorm input: 2sbh (/t under SP)
  ln.reads_input_fused = fused_input;
  ln.weight_bytes = 2 * d.h * d.e;
  ln.module = kModuleLayernorm;  // Megatron-Core's input_layernorm / pre_mlp_layernorm
  if (t.norm == NormKind::kRMSNorm && !sh.fusion.fused_norm) {
    // Eager RMSNorm (torchtitan norms.py, Llama's reference RMSNorm): x.float() [read e, write
    // 4], pow(2) [4, 4], mean [4], x * rsqrt [4, 4], type_as [4, e], * weight [e, e] per
    // element: 4e + 28 bytes and 6 kernels where one fused kernel moves 2e.
    ln.eager_bytes = d.nr * d.h * (2 * d.e + 28);
    ln.eager_launches = 5;
  }
  return y;
}

// A sequence-parallel collective's layout copy (Strategy::sp_reorder_copies): the whole
// gathered tensor (n h elements) read and written once, a kernel of its
// own, in the forward and again in the backward (the conjugate collective's copy of the
// gradient). PyTorch's all_gather_tensor(gather_dim=1) gathers along dim 0 and concatenates the
// chunks along dim 1; reduce_scatter_tensor(scatter_dim=1) concatenates first. TorchTitan's
// maintainers measured the two copies of one MLP at 0.18 of its 3 ms on H100 (8k tokens,
// batch 1; pytorch/torchtitan#437), a stream's rate for 2 x 2 x 128 MiB.
// An FP8 gathered tensor (1 B an element) is copied as such; its gradient, 16-bit, costs twice.
int sp_reorder_copy(Builder& B, const Dims& d, std::string_view name, int in, double saved_bytes,
                    double element_bytes) {
  const int out = B.tensor(d.n * d.h * element_bytes, saved_bytes);
  LayerOp& copy = B.elementwise(name, {in}, out, 0, FusionRule::kNone, -1);
  copy.backward_bytes_factor = d.e / element_bytes;
  return out;
}

// Strategy::fp8_tp_all_gather: torchao's tensorwise cast of the rank's shard before the
// all-gather (amax pass, then the cast: read 2 B twice, write 1 B an element; two kernels); its
// backward passes the gradient through untouched.
int fp8_shard_cast(Builder& B, const Dims& d, int y) {
  const int out = B.tensor(d.nr * d.h * 1);
  B.tensor_is_fp8(out);
  LayerOp& cast = B.elementwise("fp8_input_cast", {y}, out, 0, FusionRule::kNone, -1);
  cast.eager_bytes = d.nr * d.h * d.e;  // the amax pass's read
  cast.eager_launches = 1;
  cast.backward_bytes_factor = 0;
  return out;
}

// SP: the gathered input is saved as its shard (2sbh/t) and re-gathered in backward. Gathered
// in FP8 (Strategy::fp8_tp_all_gather) it moves 1 B an element, its backward reduce-scatter
// of the 16-bit input gradient twice that.
int sp_gather(Builder& B, const Dims& d, const LayerShape& sh, std::string_view gather_name, int y) {
  if (!sh.sequence_parallel) return y;  // column-parallel GEMM input 2sbh, replicated
  const double e = sh.fp8_tp_gather ? 1 : d.e;
  if (sh.fp8_tp_gather) y = fp8_shard_cast(B, d, y);
  int gathered = B.collective(gather_name, CommKind::kAllGather, y, d.n * d.h * e, d.nr * d.h * e,
                              d.n * d.h * e);
  if (sh.fp8_tp_gather) {
    B.last().backward_comm_factor = d.e / e;
    B.tensor_is_fp8(gathered);
  }
  if (!sh.sp_reorder_copies) return gathered;
  gathered = sp_reorder_copy(B, d, "sp_gather_reorder", gathered, d.nr * d.h * e, e);
  if (sh.tp_micro_pipeline) B.last().comm_phases = CommPhases::kBackwardOnly;
  if (sh.fp8_tp_gather) B.tensor_is_fp8(gathered);
  return gathered;
}

// norm -> (SP all-gather) ; returns the tensor the column-parallel GEMM reads. Without SP the
// input is replicated over tp (Megatron's f: an identity in the forward pass) and its gradient,
// a partial sum on each rank, is all-reduced right after the GEMM's backward (the all-reduce
// Megatron overlaps with the weight gradient, Strategy::async_tp_grad_reduce).
int norm_and_gather(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t,
                    std::string_view norm_name, std::string_view gather_name,
                    std::string_view grad_name, int x, bool fused_input) {
  const int y = norm(B, d, sh, t, norm_name, x, fused_input);
  if (sh.sequence_parallel || sh.tp <= 1) return sp_gather(B, d, sh, gather_name, y);
  const double region = d.n * d.h * d.e;
  const int replicated = B.collective(grad_name, CommKind::kAllReduce, y, region, region, region);
  B.last().comm_phases = CommPhases::kBackwardOnly;
  return replicated;
}

// Row-parallel output -> all-reduce (or SP reduce-scatter) -> bias, dropout, residual add.
// Without SP the all-reduce is Megatron's g: its backward is an identity when the layer's input
// gradient is reduced at the column-parallel GEMM (`input_grad_reduced`, norm_and_gather).
// Async TP's fused_matmul_reduce_scatter (torch/distributed/_symmetric_memory/__init__.py
// _fused_matmul_reduce_scatter_impl) sends each of the tp row chunks of the GEMM's output to
// the rank that owns it and sums the tp partials it receives with a reduction kernel of its own
// (torch.sum over stacked_partials): read the whole n h output, write the rank's n/t h shard.
// NCCL's reduce-scatter reduces inside its own kernel. The backward's all-gather reduces
// nothing: forward (and recomputation) only.
int micro_pipeline_reduction(Builder& B, const Dims& d, int reduced) {
  const int out = B.tensor(d.nr * d.h * d.e);
  LayerOp& sum = B.elementwise("tp_rs_reduce", {reduced}, out, 0, FusionRule::kNone, -1);
  sum.eager_bytes = (d.n - d.nr) * d.h * d.e;  // the partials beyond the one the input holds
  sum.comm_phases = CommPhases::kForwardOnly;
  return out;
}

int reduce_and_residual(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t,
                        std::string_view reduce_name, int partial, int residual, int group,
                        bool input_grad_reduced) {
  const double region = d.nr * d.h * d.e;
  int reduced = partial;
  // Strategy::fp8_tp_all_gather: torchao's Float8RowwiseParallel casts the output gradient on
  // the rank's shard before the reduce-scatter's backward all-gather (float8_tensor_parallel.py
  // _prepare_output_fn: redistribute, then _NoopFwToFloat8BwDynamic), so the gather and the
  // chunk copy after it move 1 B an element, and the GEMM's backward casts no gradient.
  const bool fp8_grad = sh.fp8_tp_gather && sh.sequence_parallel && sh.tp > 1;
  if (fp8_grad) B.g().tensors[partial].fp8_grad_shard = 1.0 / sh.tp;
  if (sh.tp > 1 && sh.sp_reorder_copies && !sh.tp_micro_pipeline) {
    partial = sp_reorder_copy(B, d, "sp_scatter_reorder", partial, 0, d.e);
    if (fp8_grad) B.last().backward_bytes_factor = 1 / d.e;
  }
  if (sh.tp > 1) {
    reduced = B.collective(reduce_name,
                           sh.sequence_parallel ? CommKind::kReduceScatter : CommKind::kAllReduce,
                           partial, region, region, d.n * d.h * d.e);
    if (!sh.sequence_parallel && input_grad_reduced) B.last().comm_phases = CommPhases::kForwardOnly;
    if (fp8_grad) B.last().backward_comm_factor = 1 / d.e;
    if (sh.sequence_parallel && sh.tp_micro_pipeline) {
      reduced = micro_pipeline_reduction(B, d, reduced);
    }
  }
  int x = reduced;
  B.set_module(0);  // bias, dropout and the residual add follow the module (bias_dropout_add)
  if (t.linear_bias) {
    int biased = B.tensor(region);
    B.elementwise("bias", {x}, biased, 1, FusionRule::kBiasDropoutResidual, group).weight_bytes =
        d.h * d.e;
    x = biased;
  }
  if (t.dropout) {
    int dropped = B.tensor(region);
    LayerOp& drop =
        B.elementwise("dropout", {x}, dropped, 2, FusionRule::kBiasDropoutResidual, group);
    drop.aux_saved_bytes = d.nr * d.h;  // dropout mask, 1 byte per element: sbh
    x = dropped;
  }
  int out = B.tensor(region);
  B.elementwise("residual_add", {x, residual}, out, 1, FusionRule::kBiasDropoutResidual, group);
  return out;
}

// RMSNorm over each head's query and key (TransformerSpec::qk_norm: Qwen3, OLMo 2; Megatron-
// Core's q_layernorm and k_layernorm, one TENorm kernel each, after the QKV projection and
// before RoPE). It reads the projection's q and k and saves them for its backward (the
// projection's output is otherwise not kept: n (q + kv) / t elements); v passes through (its
// copy in this op's output is a small overcount, as in rotary below). Eager (no fused norm):
// each of the two runs as the six kernels of an eager RMSNorm (see norm above).
int qk_norm(Builder& B, const Dims& d, const LayerShape& sh, int qkv) {
  const double qk_elements = d.n * (d.q + d.kv) / d.t;
  B.g().tensors[qkv].saved_bytes = qk_elements * d.e;
  int normed = B.tensor(d.n * (d.q + 2 * d.kv) / d.t * d.e);
  LayerOp& norm_op = B.elementwise("qk_norm", {qkv}, normed, 0, FusionRule::kNone, -1);
  norm_op.other_flops = 5 * qk_elements;
  norm_op.saves = kSaveInput0;
  norm_op.weight_bytes = 2 * d.qkd * d.e;  // the two gains, one head wide
  norm_op.eager_launches = 1;
  if (!sh.fusion.fused_norm) {
    norm_op.eager_bytes = qk_elements * (2 * d.e + 28);
    norm_op.eager_launches = 11;
  }
  return normed;
}

// Megatron-Core's split of the fused QKV GEMM's output (FusionPlan::qkv_split_copies;
// megatron/core/transformer/attention.py get_query_key_value_tensors at 0d8e0714, the same
// reshape since core 0.4). mixed_qkv [s, b, ng, (np/ng + 2) hn] is split along its last dim into
// views (torch.split, or Transformer Engine's SplitAlongDim where TE has it), then
//   - the query is reshaped to [s, b, np, hn]: a view only when ng or np/ng is 1, else a copy
//     (the ng stride is (np/ng + 2) hn, not np/ng hn): read and write 2 q e per token;
//   - a key layernorm (qk_norm: Transformer Engine's RMSNorm) makes its strided input
//     contiguous first: 2 kv e;
//   - the fused RoPE writes new q and k, but v stays a strided view, so Transformer Engine's
//     attention finds the layout unsupported and copies it (dot_product_attention/utils.py
//     get_qkv_layout "not_supported", then x.contiguous() for q, k, v; TE v2.9): 2 kv e;
// per rank q = np hn / tp, kv = ng hn / tp. The backward's copies are views or pass-throughs,
// but split's backward concatenates dq, dk, dv into the mixed gradient (the grads are separate
// tensors, so SplitAlongDim's no-copy path does not apply): read and write 2 (q + 2 kv) e, one
// kernel (charged the forward's launches). Outside the core attention: selective recomputation
// does not repeat it.
void qkv_split_copies(Builder& B, const Dims& d, const TransformerSpec& t) {
  const double groups_per_rank = std::max(1.0, double(t.kv_heads_or_heads()) / d.t);
  const double heads_per_group = double(t.heads) / t.kv_heads_or_heads();
  const bool query_copy = groups_per_rank > 1 && heads_per_group > 1;
  const double q = d.n * d.q / d.t, kv = d.n * d.kv / d.t;
  const double forward = 2 * d.e * ((query_copy ? q : 0) + (t.qk_norm ? kv : 0) + kv);
  LayerOp& split = B.op("qkv_split", OpClass::kMemoryBound, {}, B.tensor(0, 0));
  split.eager_bytes = forward;
  split.eager_launches = static_cast<int16_t>(query_copy + t.qk_norm);  // beside the v copy
  split.backward_bytes_factor = 2 * d.e * (q + 2 * kv) / forward;
}

// Rotary position embedding on q and k (Su et al. 2021): the attention reads the rotated q, k
// (with v passed along; the copy of v is a small overcount). Fused (Transformer Engine,
// Megatron-Core): one pass over q and k. Eager (torchtitan apply_rotary_emb): xq.float()
// [read e, write 4], complex multiply by freqs_cis [4, 4], type_as [4, e] per element of q and
// k: 16 more bytes per element and 2 more kernels for each of q and k. The complex form stays
// so under torch.compile (FusionPlan::complex_rope): the casts around the ATen complex multiply
// are kernels of their own.
int rotary(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t, int qkv) {
  int rotated = B.tensor(d.n * (d.q + 2 * d.kv) / d.t * d.e);
  const double qk_elements = d.n * (d.q + d.kv) / d.t;
  LayerOp& rope = B.elementwise("rope", {qkv}, rotated, 0, FusionRule::kNone, -1);
  rope.other_flops = 6 * qk_elements;
  if (!sh.fusion.fused_norm || sh.fusion.complex_rope) {
    rope.eager_bytes = 16 * qk_elements;
    rope.eager_launches = 4;
  } else if (sh.fusion.fused_rope_unscaled && t.rope_attention_factor != 1) {
    // Megatron-Core's eager rope (rope_utils.py _apply_rotary_pos_emb_bshd, its fallback from
    // Transformer Engine's fused RoPE for a YaRN factor), per q and k element x: x cos, the
    // rotate_half's negated half and cat, x sin, their sum and the final cat with the (empty)
    // pass-through part read and write 12 e B where one fused pass moves 2 e: 10 e more; six
    // kernels a tensor and six small ones scaling cos and sin, 23 launches beyond one. The
    // backward: the two products' gradients (2 e each), the negation (e), chunk's cat (2 e),
    // the sum of the rotated and direct paths (3 e), both slices' zero-filled gradients (3 e
    // and e) and their sum (3 e): 17 e, 17/12 of the forward.
    rope.eager_bytes = 10 * qk_elements * d.e;
    rope.eager_launches = 23;
    rope.backward_bytes_factor = 17.0 / 12.0;
  }
  return rotated;
}

// FSDP2's copies around a layer's collectives (Strategy::fsdp_copies), over the layer's W
// parameter elements on this rank (unsharded, after tp): forward, the all-gather output split
// into the parameters (split_with_sizes_copy: read and write W g, g the gathered element's
// bytes); backward, the same for the re-gather (parameters resharded after the forward), and
// the gradients concatenated into the reduce-scatter input in its dtype (_chunk_cat: read W e,
// write W r). One foreach kernel each; parameter traffic, not recomputed.
void fsdp_copies(Builder& B, const LayerGraph& g, const Dims& d, const LayerShape& sh) {
  double w = sh.fsdp_params;
  if (w <= 0) {
    for (const LayerOp& o : g.ops) w += o.weight_bytes / d.e;
  }
  if (w <= 0) return;
  const double gather = 2 * w * sh.fsdp_gather_element_bytes;
  const double reduce = w * (d.e + sh.fsdp_reduce_element_bytes);
  LayerOp& copy = B.op("fsdp_copy", OpClass::kMemoryBound, {}, B.tensor(0, 0));
  copy.eager_bytes = gather;
  copy.backward_bytes_factor = (gather + reduce) / gather;
  copy.parameter_traffic = true;
}

// Strategy::autocast_weights: the layer's linear weights and biases on this rank cast to the
// activations' dtype once per forward pass (autocast_casts.h). One cast a GEMM's weight: where
// model code splits it (q, k, v as nn.Linear each) a couple more launches, not counted.
void autocast_weight_casts(LayerGraph& g, const Dims& d) {
  double elements = 0;
  int tensors = 0;
  for (const LayerOp& o : g.ops) {
    if (!autocast_casts_parameters(o)) continue;
    elements += o.weight_bytes / d.e;
    ++tensors;
  }
  prepend_autocast_casts(g, elements, tensors, d.e);
}

// Strategy::fp8_fsdp_all_gather: before each all-gather (the forward's and the backward's
// re-gather) each rank casts its shard of the linear weights to FP8 (torchao
// WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather, with the scale precomputed once per
// iteration): read the fp32 shard (4 B), write 1 B. One foreach kernel; parameter traffic.
void fp8_fsdp_shard_cast(Builder& B, const LayerShape& sh) {
  const double elements = sh.fp8_cast_params * sh.fp8_shard_share;
  if (elements <= 0) return;
  LayerOp& cast = B.op("fp8_weight_shard_cast", OpClass::kMemoryBound, {}, B.tensor(0, 0));
  cast.eager_bytes = 5 * elements;
  cast.backward_bytes_factor = 1;
  cast.parameter_traffic = true;
}

// The width of one token's K and V as the attention kernel reads them: the K/V heads', or the
// query heads' when the model code repeats them (Strategy::kv_repeat; MLA never does).
double kv_width(const Dims& d, const LayerShape& sh) {
  return sh.kv_repeat && d.kv < d.q && d.kw == d.kv ? 2 * d.q : d.kw + d.vw;
}

// Ring attention over the cp ranks (Liu et al. 2023; Megatron-Core / Transformer Engine's
// p2p context parallelism): each rank's K and V blocks (its n tokens) travel around the ring
// in cp - 1 steps, each step's transfer beside the attention on the block that arrived before
// it. In the forward a rank receives (cp - 1)/cp of the whole sequence's K and V, an
// all-gather's volume; the backward passes K, V again and the partial dK, dV: twice that.
// PyTorch's ring (CpMerge::kEagerFp32) passes dK, dV in fp32: K, V again (16-bit) and their
// gradients (32-bit) are three times the forward's bytes.
//
// Gathered rotation (LayerShape::cp_gather_rotate, PyTorch's _AllGatherRotater): the same
// forward volume as one all-gather issued before the first step and waited for at the second,
// so it hides behind the first (diagonal) step only: with load-balanced chunks a rank's steps
// cover s/cp keys each of its s/cp queries' s/2 on average, the diagonal a 1/cp share of the
// attention. The backward gathers K and V again the same way and passes the dK, dV partial
// sums around the ring beside the steps (the dkv rotater is always the ring's); 16-bit K, V
// plus the fp32 or 16-bit dK, dV: the ring's backward bytes, split between the two.
//
// The ring's working set beside the layer's tensors while its attention runs (the attention
// op's workspace_B: the larger of the forward's and the backward's, the forward's alone for
// inference), for the rank's E output (query) elements, E_kv K and V elements and the whole
// sequence's K, V (S = cp E_kv elements of the activations' size e, in bytes S e):
//   Transformer Engine (pass, kFused; AttnFuncWithCPAndKVP2P): the forward keeps every step's
//   K/V block (p2p_comm_buffers, a list of cp: S) and every step's output (out_per_step, cp
//   of them, and the corrected output: (cp + 1) E); the backward double-buffers K, V with
//   their dK, dV (two buffers of 2 E_kv) beside dq, the step's dq_ and dkv_ (2 E + E_kv):
//   (S + (cp + 1) E) e forward, (5 E_kv + 2 E) e backward. A gathered rotation with this
//   merge holds the gathered S beside the step's concatenation instead.
//   PyTorch (kEagerFp32; torch/distributed/tensor/experimental/_attention.py): each step
//   concatenates K, V for the rotater (2 E_kv B); the merger's fp32 output, its partially
//   updated copy and the step's output cast to fp32 (12 E B); the gathered rotater holds the
//   gathered S beside the step's concatenation, the passing one a received block beside it.
//   Backward: the same K, V buffers, fp32 accumulators for dQ, dK, dV (4 E + 4 E_kv B), the
//   step's 16-bit gradients (2 E + 2 E_kv B), and the fp32 dK, dV concatenated to pass,
//   received and partially updated (12 E_kv B).
double ring_workspace(const Dims& d, const LayerShape& sh) {
  const double e = d.n * d.q / d.t, ekv = d.n * kv_width(d, sh) / d.t, cp = sh.cp;
  const double sequence_kv = cp * ekv * d.e;
  if (sh.cp_merge != CpMerge::kEagerFp32) {
    const double held = sh.cp_gather_rotate ? sequence_kv + ekv * d.e : sequence_kv;
    const double forward = held + (cp + 1) * e * d.e;
    return sh.forward_only ? forward : std::max(forward, (5 * ekv + 2 * e) * d.e);
  }
  const double held = sh.cp_gather_rotate ? sequence_kv + ekv * d.e : 2 * ekv * d.e;
  const double forward = 12 * e, backward = 4 * (e + ekv) + d.e * (e + ekv) + 12 * ekv;
  return held + (sh.forward_only ? forward : std::max(forward, backward));
}

void ring_exchange(Builder& B, const Dims& d, const LayerShape& sh, int qkv) {
  const double sequence_kv = d.b * d.s * (kv_width(d, sh)) / d.t * d.e;  // K and V of all s tokens
  const double backward_factor = sh.cp_merge == CpMerge::kEagerFp32 ? 3 : 2;
  if (sh.cp_gather_rotate) {
    int gradients = B.tensor(0, 0);
    LayerOp& dkv = B.op("cp_ring_dkv", OpClass::kCollective, {qkv}, gradients);
    dkv.comm = CommKind::kAllGather;  // a ring pass: each rank receives (cp - 1)/cp of the volume
    dkv.comm_bytes = (backward_factor - 1) * sequence_kv;
    dkv.comm_phases = CommPhases::kBackwardOnly;
    dkv.group = GroupKind::kContext;
    dkv.overlaps_attention = sh.cp_overlap;
    dkv.attention_core = true;
    int gathered = B.tensor(0, 0);
    LayerOp& ag = B.op("cp_kv_gather_rotate", OpClass::kCollective, {gradients}, gathered);
    ag.comm = CommKind::kAllGather;
    ag.comm_bytes = sequence_kv;
    ag.group = GroupKind::kContext;
    ag.overlaps_attention = sh.cp_overlap;
    ag.overlap_window = 1.0 / sh.cp;
    ag.attention_core = true;
    return;
  }
  int gathered = B.tensor(0, 0);  // blocks consumed as they arrive, kept by no one
  LayerOp& ring = B.op("cp_ring_kv", OpClass::kCollective, {qkv}, gathered);
  ring.comm = CommKind::kAllGather;
  ring.comm_bytes = sequence_kv;
  ring.group = GroupKind::kContext;
  ring.overlaps_attention = sh.cp_overlap;
  ring.backward_comm_factor = backward_factor;
  ring.attention_core = true;  // recomputing the attention runs the ring again
}

// All-gather context parallelism (Strategy::cp_comm kAllGather; Llama 3 Herd, Dubey et al.
// 2024, Sec. 3.3.2; Transformer Engine's AttnFuncWithCPAndKVAllGather, cp_comm_type
// "all_gather"): each rank gathers the whole sequence's K and V before its attention -- "the
// all-gather communication latency is exposed in the critical path", small under GQA -- and
// reorders the gathered chunks into sequence order (index_select: read and write the gathered
// K, V). Its backward gathers K, V again, runs into full-sequence dK, dV (zeroed, then each of
// the two query chunks' gradients added over the keys it attends: about the whole of them
// once), reorders them and reduce-scatters them to their ranks, 16-bit: twice the forward's
// bytes on the wire. Nothing gathered is saved: the forward keeps the rank's own Q, K, V.
// Memory bytes per gathered element: forward 2 (reorder), backward 2 (reorder) + 1 (zero) + 3
// (add) + 2 (reorder back) = 8, four times the forward's.
void kv_all_gather(Builder& B, const Dims& d, const LayerShape& sh, int qkv) {
  const double sequence_kv = d.b * d.s * kv_width(d, sh) / d.t * d.e;  // K and V of all s tokens
  int gathered = B.tensor(0, 0);
  LayerOp& ag = B.op("cp_kv_all_gather", OpClass::kCollective, {qkv}, gathered);
  ag.comm = CommKind::kAllGather;
  ag.comm_bytes = sequence_kv;
  ag.group = GroupKind::kContext;
  ag.backward_comm_factor = 2;  // the backward's re-gather and the dK, dV reduce-scatter
  ag.attention_core = true;
  LayerOp& reorder = B.op("cp_kv_reorder", OpClass::kMemoryBound, {}, B.tensor(0, 0));
  reorder.eager_bytes = 2 * sequence_kv;
  reorder.eager_launches = 2;
  reorder.backward_bytes_factor = 4;
  reorder.workspace_B = 2 * sequence_kv;  // the gathered and the reordered K, V (dK, dV after)
  reorder.attention_core = true;
}

// Ring attention's per-step merges (Strategy::cp_merge), on the rank whose every step takes
// all its queries (the last: with load-balanced chunks the others halve some steps' queries
// instead of their keys, same FLOP, less merging), for E output elements and K, V elements
// E_kv = E_k + E_v:
//   kFused (Transformer Engine, AttnFuncWithCP at v1.4: flash_attn_fwd_out_correction is
//   jit-fused): the output zeroed (2E), then for each of the cp steps one kernel out +=
//   out_step * exp(lse_step - lse) in 16 bit: read 2 + 2, write 2 B, 6E; backward, each of
//   the cp steps, dq.add_(dq_step) and dkv.add_(dkv_step) in place: 6E + 6E_kv, two kernels.
//   kEagerFp32 (PyTorch _SDPAMerger, convert_to_f32), for the cp - 1 steps after the first:
//   forward a step casts the step's output
//   to fp32 (read 2, write 4), out - block_out (8, 4), sigmoid(lse diff) * that (4, 4), out -
//   that (8, 4): 38E, and concatenates K, V for the next step (read 2, write 2: 4E_kv); 4
//   kernels and 4 small ones on the log-sum-exps; once: the first step's cast and the final
//   cast back, 12E. Backward a step: grad_query += (fp32 += 16 bit: read 4 + 2, write 4:
//   10E); dK, dV partial updates (half added: 5, then the whole concatenated: 8, 13E_kv),
//   their fp32 concatenation for the rotation (8E_kv) and K, V's (4E_kv): 10E + 25E_kv; once:
//   three zeroed fp32 accumulators (4E + 4E_kv) and the final casts (6E + 6E_kv).
void ring_merge(Builder& B, const Dims& d, const LayerShape& sh) {
  const double steps = sh.cp - 1, e = d.n * d.q / d.t, ekv = d.n * kv_width(d, sh) / d.t;
  const bool eager = sh.cp_merge == CpMerge::kEagerFp32;
  const double cp = sh.cp;
  const double forward = eager ? steps * (38 * e + 4 * ekv) + 12 * e : cp * 6 * e + 2 * e;
  const double backward =
      eager ? steps * (10 * e + 25 * ekv) + 10 * e + 10 * ekv : cp * (6 * e + 6 * ekv);
  LayerOp& merge = B.op("cp_merge", OpClass::kMemoryBound, {}, B.tensor(0, 0));
  merge.eager_bytes = forward;
  merge.eager_launches = static_cast<int16_t>(eager ? steps * 8 + 1 : cp);
  merge.backward_bytes_factor = backward / forward;
  merge.attention_core = true;  // recomputed with the attention
}

// TorchTitan's repeat_kv (Strategy::kv_repeat): K and V copied from the K/V heads up to the
// query heads, one kernel each (read the K/V heads' 2 B, write the query heads'); the
// backward sums each group's gradients back (the same bytes).
int repeat_kv(Builder& B, const Dims& d) {
  const int expanded = B.tensor(d.n * 2 * d.q / d.t * d.e);
  LayerOp& copy = B.op("repeat_kv", OpClass::kMemoryBound, {}, expanded);
  copy.eager_bytes = d.n * (d.kw + d.vw) / d.t * d.e;
  copy.eager_launches = 1;
  copy.backward_bytes_factor = 1;
  copy.attention_core = true;
  return expanded;
}

int ulysses_all_to_all(Builder& B, std::string_view name, int in, double bytes) {
  int out = B.tensor(bytes);
  LayerOp& a2a = B.op(name, OpClass::kCollective, {in}, out);
  a2a.comm = CommKind::kAllToAll;
  a2a.comm_bytes = bytes;
  a2a.group = GroupKind::kContext;
  a2a.attention_core = true;  // recomputing the attention redoes its all-to-alls
  return out;
}

// Sliding-window attention (TransformerSpec::sliding_window: w keys per query, itself
// included) on a share of the layers, as FlashAttention's local kernels run it: the thread block
// of query rows [m T, (m + 1) T) walks the key tiles from floor((m T - w + 1) / T) to m (Dao-AILab
// flash-attention csrc/flash_attn/src/flash_fwd_kernel.h, n_block_min/n_block_max; T = 128 keys
// and rows for head dim 64, flash_fwd_launch_template.h run_mha_fwd_hdim64), so each row
// computes T (1 + ceil((w - 1) / T)) keys, unmasked but for the tiles at the band's two edges
// (2 w - 1 keys when not causal). A band that reaches the whole sequence is full attention. The
// windowed share of the layers' attention FLOP is computed at the kernel's non-causal rate for
// that many keys; the model FLOP count the attended pairs (2 s w of a causal s^2 for the s^2 the
// full-attention convention counts).
void window_band(LayerOp& fa, const Dims& d, bool causal, double softmax_flops) {
  constexpr double kTile = 128;
  const double w = causal ? d.window : 2 * d.window - 1;
  const double keys = std::min(d.s, kTile * (1 + std::ceil((w - 1) / kTile)));
  const double full = fa.matmul_flops;                  // every layer's attention unwindowed
  const double dense = fa.model_flops;                  // 2 core_flops: all s x s scores
  const double band = dense * keys / d.s;               // the windowed layer's computed FLOP
  if (band >= full) return;                             // no cheaper than full attention
  const double share = d.window_share;
  fa.matmul_flops = (1 - share) * full + share * band;
  fa.attention_band_share = share * band / fa.matmul_flops;
  fa.attention_band_keys = keys;
  const double attended = std::min(1.0, (causal ? 2 : 1) * std::min(w, d.s) / d.s);
  fa.model_flops = (1 - share) * dense + share * dense * attended;
  fa.other_flops = (1 - share) * softmax_flops / d.cp + share * softmax_flops / d.cp * keys / d.s;
}

int attention_core_ops(Builder& B, const Dims& d, const LayerShape& sh, bool dropout, int qkv) {
  const double scores = d.b * d.a_local * d.s * d.s * d.e;  // per-head s x s scores
  // Each rank attends its s / cp queries to all s keys; with load-balanced chunks the causal
  // work is the same on every rank.
  // Q K^T takes 2 s^2 d_qk and P V 2 s^2 d_v FLOP per head and sequence: core_flops is half
  // their sum over the rank's heads (2 b s^2 h / t for standard heads), doubled below.
  const double core_flops = d.b * d.s * d.s * d.a_local * (d.qkd + d.vd) / d.cp;
  int context = B.tensor(d.n * d.q / d.t * d.e);
  if (sh.fusion.flash_attention) {
    const bool ulysses = sh.cp > 1 && sh.cp_comm == CpComm::kAllToAll;
    const bool all_gather = sh.cp > 1 && sh.cp_comm == CpComm::kAllGather;
    const bool ring = sh.cp > 1 && sh.cp_comm == CpComm::kRing;
    const bool repeated = sh.kv_repeat && d.kv < d.q && d.kw == d.kv;
    const int kv_in = repeated ? repeat_kv(B, d) : -1;
    if (ring) ring_exchange(B, d, sh, qkv);
    if (all_gather) kv_all_gather(B, d, sh, qkv);
    // Ulysses (Jacobs et al. 2023): an all-to-all over the cp ranks turns each rank's s/cp
    // tokens of every head into all s tokens of heads/cp (the same bytes, (cp-1)/cp of them
    // moved), on the critical path; the attention runs whole; a second all-to-all turns the
    // output back.
    if (ulysses) qkv = ulysses_all_to_all(B, "cp_a2a_qkv", qkv, d.n * (d.q + 2 * d.kv) / d.t * d.e);
    int attended = ulysses ? B.tensor(d.n * d.q / d.t * d.e) : context;
    LayerOp& fa = kv_in >= 0 ? B.op("flash_attention", OpClass::kFlashAttention, {qkv, kv_in}, attended)
                             : B.op("flash_attention", OpClass::kFlashAttention, {qkv}, attended);
    fa.model_flops = 2 * core_flops;
    fa.matmul_flops = 2 * core_flops * (sh.causal ? 0.5 : 1.0);  // causal skips masked tiles
    fa.other_flops = 5 * scores / d.e / d.cp;
    fa.saves = kSaveInput0 | kSaveOutput;          // Q, K, V and the output
    if (kv_in >= 0) fa.saves |= kSaveInput1;       // the repeated K, V (SDPA saves its inputs)
    fa.aux_saved_bytes = d.b * d.a_local * d.s / d.cp * 4;  // fp32 log-sum-exp per row
    if (ring) fa.workspace_B = ring_workspace(d, sh);  // live while the steps run
    fa.backward_flops_factor = 2.5;  // Dao 2023: backward runs 5 GEMMs to forward's 2
    // What the kernel's efficiency depends on: the keys a query row attends per launch and
    // the head dim. Ring attention runs one launch per K/V block of s / cp keys, unmasked but
    // for the diagonal one (load-balanced chunks); Ulysses and no cp attend all s keys.
    // All-gather runs one launch per local chunk of s / (2 cp) queries over the keys before
    // it (chunks c = rank and 2 cp - 1 - rank: (c + 1/2) s / (2 cp) keys a row on average,
    // s / 2 over the two), unmasked but for the diagonal block (bottom-right causal).
    fa.attention_keys = ulysses || sh.cp == 1 ? d.s : all_gather ? d.s / 2 : d.s / sh.cp;
    fa.attention_causal = sh.causal && (ulysses || sh.cp == 1);
    fa.attention_head_dim = d.qkd;
    if (d.window_share > 0 && (ulysses || sh.cp == 1)) window_band(fa, d, sh.causal, 5 * scores / d.e);
    // Ring attention runs one kernel per K/V block: cp launches of 1/cp of the work each;
    // all-gather one per local chunk, on two streams.
    if (ring) fa.eager_launches = static_cast<int16_t>(sh.cp - 1);
    if (all_gather) fa.eager_launches = 1;
    if (ring) ring_merge(B, d, sh);
    if (ulysses) return ulysses_all_to_all(B, "cp_a2a_out", attended, d.n * d.q / d.t * d.e);
    return context;
  }
  int raw = B.tensor(scores);
  const double head_dim = d.q / (d.a_local * d.t), heads = d.b * d.a_local;
  // 2 * b * (a/t) * s * s * (h/a) = 2bs^2h/t FLOP each.
  LayerOp& qk = B.matmul("attn_scores", qkv, raw, 0, d.s, d.s, head_dim, heads);  // saves Q, K, V: 6sbh/t
  qk.attention_core = true;
  qk.high_precision = true;  // attention's batched GEMMs stay 16-bit under fp8 training
  int scaled = B.tensor(scores), masked = B.tensor(scores), probs = B.tensor(scores);
  B.elementwise("scale", {raw}, scaled, 1, FusionRule::kSoftmax, 0).attention_core = true;
  B.elementwise("mask", {scaled}, masked, 1, FusionRule::kSoftmax, 0).attention_core = true;
  LayerOp& sm = B.elementwise("softmax", {masked}, probs, 5, FusionRule::kSoftmax, 0);
  sm.attention_core = true;
  sm.saves = kSaveOutput;  // softmax output: 2as^2b
  int attended = probs;
  if (dropout) {
    attended = B.tensor(scores);
    LayerOp& drop = B.elementwise("attn_dropout", {probs}, attended, 2, FusionRule::kNone, -1);
    drop.attention_core = true;
    drop.aux_saved_bytes = d.b * d.a_local * d.s * d.s;  // dropout mask: as^2b
  }
  LayerOp& av = B.matmul("attn_context", attended, context, 0, d.s, head_dim, d.s, heads);
  av.saves = kSaveInput0;  // dropout output: 2as^2b (V is saved with Q, K above)
  av.high_precision = true;
  return context;
}

// Megatron-Core's core attention module (recompute_modules "core_attn"): from Q, K, V to the
// context the output projection reads, context parallelism's exchanges included.
int attention_core(Builder& B, const Dims& d, const LayerShape& sh, bool dropout, int qkv) {
  B.set_module(kModuleCoreAttn);
  const int context = attention_core_ops(B, d, sh, dropout, qkv);
  B.set_module(0);
  return context;
}

// The fusion group of an up projection GEMM with its bias and activation in its epilogue
// (FusionPlan::gemm_activation); the layer's other groups number below it.
constexpr int kGemmEpilogueGroup = 7;

// SwiGLU as the eager PyTorch model code writes it, F.silu(w1(x)) * w3(x) (TorchTitan's and
// Hugging Face's Llama FeedForward, IBM FMS's GatedLinearUnit), where the model code's other
// elementwise ops are eager too (no fused norm: FusionPlan::fused_norm; a fused stack runs one
// kernel: Megatron's bias_swiglu_impl, Transformer Engine's swiglu, Inductor's fusion). Per
// output element of r bytes: silu reads the gate and writes its output (2r), mul reads that
// output and the up projection and writes (3r), where one fused kernel reads 2r and writes r:
// 2r more, one kernel more. Autograd saves silu's output for mul's backward, beside the gate
// and the up projection the fused kernel's backward reads (r more kept). The backward runs
// three kernels: mul's two gradients (each reads the output gradient and the other factor and
// writes, 3r) and silu's (reads the gradient and the gate, writes, 3r): 9r, 1.8x the forward's
// 5r, one launch beyond the forward's two.
void eager_swiglu(LayerOp& act, double region) {
  act.eager_bytes = 2 * region;
  act.eager_launches = 1;
  act.backward_bytes_factor = 1.8;
  act.backward_extra_launches = 1;
  act.eager_saved_bytes = region;
}

int mlp_activation(Builder& B, const Dims& d, const TransformerSpec& t, int up, double f,
                   bool in_gemm) {
  int x = up;
  const double region = d.n * f / d.t * d.e;
  if (t.activation == Activation::kSwiGLU) {
    int out = B.tensor(region);
    LayerOp& act = B.elementwise("swiglu", {x}, out, 6, FusionRule::kEpilogue, 0);
    act.saves = kSaveInput0;  // gate and up projections: 2 * n * f / t
    if (!B.fused_norm()) eager_swiglu(act, region);
    return out;
  }
  const FusionRule rule = in_gemm ? FusionRule::kGemmEpilogue : FusionRule::kEpilogue;
  const int group = in_gemm ? kGemmEpilogueGroup : 0;
  if (t.linear_bias) {
    int biased = B.tensor(region);
    B.elementwise("fc1_bias", {x}, biased, 1, rule, group).weight_bytes = f / d.t * d.e;
    x = biased;
  }
  int out = B.tensor(region);
  LayerOp& act = B.elementwise(t.activation == Activation::kGeLU ? "gelu" : "relu", {x}, out,
                               8, rule, group);
  act.saves = kSaveInput0;  // activation input: 8sbh/t (in a GEMM epilogue: its aux output)
  return out;
}

// Column-parallel up projection, activation, row-parallel down projection of width f (split
// over tp): returns the partial sums the tp ranks reduce.
int dense_mlp(Builder& B, const Dims& d, const TransformerSpec& t, int x, double f,
              std::string_view up_name, std::string_view down_name) {
  const double f_in = t.activation == Activation::kSwiGLU ? 2 * f : f;  // gate + up for SwiGLU
  int up = B.tensor(d.n * f_in / d.t * d.e);
  LayerOp& up_proj = B.matmul(up_name, x, up, d.h * f_in / d.t * d.e, d.n, f_in / d.t, d.h);
  if (t.activation == Activation::kSwiGLU) up_proj.mm_split = {f, f, 0};  // w1 (gate), w3 (up)
  // FusionPlan::gemm_activation: the bias and activation join the GEMM's kernel, so only the
  // tensors that leave it (the activation, and the pre-activation the backward reads) go
  // through memory, in the forward and, for the derivative, in the backward.
  const bool in_gemm = B.gemm_activation() && t.activation != Activation::kSwiGLU;
  if (in_gemm) up_proj.fusion = FusionRule::kGemmEpilogue, up_proj.fusion_group = kGemmEpilogueGroup;
  int act = mlp_activation(B, d, t, up, f, in_gemm);
  int down = B.tensor(d.n * d.h * d.e);
  B.matmul(down_name, act, down, f * d.h / d.t * d.e, d.n, d.h, f / d.t);
  return down;
}

// Mixture-of-experts MLP (Megatron-Core's MoELayer with the alltoall token dispatcher; GShard,
// Lepikhin et al. 2020). Each rank routes the tokens it holds (its sequence-parallel shard:
// n / tp): a router GEMM (h x experts) and top-k pick k experts per token; the k copies of each
// token are permuted into expert order and sent by an all-to-all over the ep ranks to the rank
// holding their expert; each rank runs its experts/ep experts as grouped GEMMs on what it
// received; a second all-to-all returns the outputs, which are summed with their router
// weights. With balanced routing a rank receives as many copies as it sends (n k / tp, h
// elements each); the most loaded rank receives `load` times that and sets everyone's pace, so
// its all-to-all bytes and GEMM rows are scaled by it (model FLOPs are not). Shared experts
// run as a dense, tensor-parallel MLP beside the routed ones. The router weights scale the
// experts' activation (Megatron-Core since 0.13, commit 2659630, "memory efficient token
// permutation": weighted SwiGLU on the permuted probs), so the combine's unpermute is a plain
// sum that saves only its index map, and the expert outputs are not kept for the backward.
// Transformer Engine's GroupedLinear (Megatron-Core's TEGroupedMLP) issues one cuBLAS GEMM per
// local expert, round robin on 4 compute streams (TransformerEngine v2.8
// common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm; common/util/multi_stream.cpp
// num_compute_streams = 4): ceil(experts / streams) rounds of concurrent launches, each paying
// a launch's fixed cost. One grouped kernel (CUTLASS's, torch._grouped_mm) is one round.
double expert_gemm_rounds(const LayerShape& sh, double local_experts) {
  if (sh.expert_gemm_streams <= 0) return 1;
  return std::ceil(local_experts / sh.expert_gemm_streams);
}

int moe_mlp(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t, int mid,
            bool add_norm) {
  const MoeSpec& m = t.moe;
  const double tokens = d.nr, copies = tokens * m.top_k;
  const double load = m.capacity_factor > 0 ? m.capacity_factor : m.load_imbalance;
  const double received = copies * load;  // token copies on the most loaded rank
  const double local_experts = double(m.experts) / sh.ep;
  const double rows = received / local_experts;  // tokens per local expert
  const double fe = t.expert_ffn();
  const double fe_in = t.activation == Activation::kSwiGLU ? 2 * fe : fe;

  int y = norm(B, d, sh, t, "norm2", mid, add_norm);
  B.set_module(kModuleMoe);  // Megatron-Core's MoELayer: router to combine, shared experts
  int logits = B.tensor(tokens * m.experts * 4);  // fp32 router scores
  LayerOp& router = B.matmul("router", y, logits, d.h * m.experts * d.e, tokens, m.experts, d.h);
  router.high_precision = true;  // routers stay 16-bit or higher under fp8 training
  int routes = B.tensor(tokens * m.top_k * 8);  // top-k weights and expert indices
  LayerOp& topk = B.op("router_topk", OpClass::kMemoryBound, {logits}, routes);
  topk.other_flops = 6 * tokens * m.experts;  // softmax (or sigmoid) and top-k over the scores
  topk.saves = kSaveOutput;

  // A permutation's backward is the inverse permutation of the gradients: the forward's bytes
  // (Transformer Engine's moe_permute: its backward is moe_unpermute of the gradient), where a
  // memory-bound op's backward otherwise reads its saved input as well.
  int permuted = B.tensor(copies * d.h * d.e);
  B.op("permute", OpClass::kMemoryBound, {y, routes}, permuted).backward_bytes_factor = 1;
  int maps_in = -1;  // what sizes the dispatch: HybridEP's routing maps, the all-to-all's counts
  if (sh.expert_sort && sh.ep > 1 && m.capacity_factor <= 0) {
    // Megatron-Core's dropless all-to-all dispatcher sizes its exchange from every EP rank's
    // tokens per expert, an int64 an expert all-gathered over the expert group before the
    // all-to-all, once per layer forward (token_dispatcher.py MoEAlltoAllTokenDispatcher.
    // preprocess: gather_from_sequence_parallel_region(num_local_tokens_per_expert,
    // group=tp_ep_group); expert tp 1). Token dropping with padding to capacity knows the
    // sizes and gathers nothing (its drop_and_pad branch returns first).
    const double gathered = 8.0 * m.experts * sh.ep;
    maps_in = B.collective("ep_token_count_gather", CommKind::kAllGather, routes, gathered, 0, gathered);
    B.last().group = GroupKind::kExpert;
    B.last().comm_phases = CommPhases::kForwardOnly;
  }
  if (sh.routing_map_gather) {
    // HybridEP's preprocess reads every EP rank's routing map: an NCCL all-gather of a bool per
    // token and expert (tokens x experts bytes a rank, ep times that gathered) before the
    // dispatch, in the forward only: the handle it yields serves the combine and the backward
    // (DeepEP hybrid-ep csrc/hybrid_ep/executor/executor.cu allgather_routing_map,
    // deep_ep/hybrid_ep_buffer.py dispatch_with_permute).
    const double gathered = tokens * m.experts * sh.ep;
    int maps = B.collective("ep_routing_map_gather", CommKind::kAllGather, routes, gathered, 0, gathered);
    B.last().group = GroupKind::kExpert;
    B.last().comm_phases = CommPhases::kForwardOnly;
    maps_in = maps;
  }
  int dispatched = B.tensor(received * d.h * d.e);
  LayerOp& dispatch = maps_in >= 0
                          ? B.op("ep_dispatch", OpClass::kCollective, {permuted, maps_in}, dispatched)
                          : B.op("ep_dispatch", OpClass::kCollective, {permuted}, dispatched);
  dispatch.comm = CommKind::kAllToAll;
  dispatch.comm_bytes = received * d.h * d.e;
  dispatch.group = GroupKind::kExpert;
  if (sh.expert_sort && sh.ep > 1) {
    // Megatron-Core's all-to-all dispatcher sends the permuted router weights in an all-to-all
    // of their own after the tokens' (token_dispatcher.py MoEAlltoAllTokenDispatcher.
    // token_dispatch: global_probs = all_to_all(ep_group, permuted_probs, output_splits,
    // input_splits), at 0d8e0714 and 3097d81d), and its backward returns their gradients the
    // same way (tensor_parallel/mappings.py _AllToAll): one weight a copy in the router's
    // 16-bit output dtype, a latency-bound exchange each way. DeepEP and HybridEP carry the
    // weights inside their dispatch kernels.
    int probs = B.tensor(received * d.e);
    LayerOp& a2a = B.op("ep_dispatch_probs", OpClass::kCollective, {routes}, probs);
    a2a.comm = CommKind::kAllToAll;
    a2a.comm_bytes = received * d.e;
    a2a.group = GroupKind::kExpert;
  }
  // Tokens from an all-to-all arrive grouped by source rank; the local experts' GEMMs need them
  // grouped by expert: one more permutation of the received copies and their router weights
  // (Megatron-Core's alltoall dispatcher: "Permutation 2: Sort tokens by local expert",
  // sort_chunks_by_idxs in dispatch_postprocess, and its inverse in combine_preprocess;
  // token_dispatcher.py). DeepEP and HybridEP permute into expert order as they receive.
  const bool sort = sh.expert_sort && local_experts > 1;
  if (sort) {
    int sorted = B.tensor(received * d.h * d.e);
    B.op("sort_by_expert", OpClass::kMemoryBound, {dispatched}, sorted).backward_bytes_factor = 1;
    dispatched = sorted;
  }

  // Transformer Engine's FP8 grouped GEMMs need each expert's rows aligned to 16 (cuBLAS's FP8
  // leading-dimension rule; the weight gradient's operand is the rows transposed on Hopper):
  // Megatron-Core's TEGroupedMLP pads dropless counts with Fp8Padding before fc1 and strips the
  // padding after fc2 with Fp8Unpadding, each a copy of the rows (multi_padding_kernel /
  // multi_unpadding_kernel: read and write e B an element; the pad rows, under 16 an expert,
  // are left out), plus a small copy of the router weights beside the pad; the backward runs
  // the inverse copies of the gradients (Strategy::expert_fp8_padding).
  const bool pad = sh.expert_fp8_padding && m.capacity_factor <= 0;
  if (pad) {
    int padded = B.tensor(received * d.h * d.e);
    LayerOp& op = B.op("expert_fp8_pad", OpClass::kMemoryBound, {dispatched}, padded);
    op.backward_bytes_factor = 1;
    op.eager_launches = 1;
    dispatched = padded;
  }
  int up = B.tensor(received * fe_in * d.e);
  LayerOp& fc1 = B.matmul("expert_fc1", dispatched, up, local_experts * d.h * fe_in * d.e, rows,
                          fe_in, d.h, local_experts);
  fc1.model_flops = 2 * copies * fe_in * d.h;
  fc1.gemm_rounds = expert_gemm_rounds(sh, local_experts);
  // Megatron-Core's TEGroupedMLP (ExpertGemm::kMultiStream) clamps a gated activation's inputs
  // (TransformerSpec::glu_limit) outside its fused kernel: weighted_bias_quick_geglu_impl
  // chunks fc1's output, clamps each half into a new tensor and concatenates them before the
  // compiled activation (megatron/core/fusions/fused_bias_geglu.py at 0d8e0714 and 3097d81d):
  // two clamps (read and write f e B a row each) and the cat (read and write 2f e), 8 f e B a
  // row, three launches. The backward runs clamp_backward on each half (read the gradient and
  // the saved input, write the gradient: 3 f e each) and chunk's backward, a cat of the two (2 f
  // e read and written): 10 f e, 1.25x the forward. The clamp sits inside the checkpointed
  // activation, so moe_act recomputation runs it again.
  int glu_in = up;
  if (sh.expert_gemm_streams > 0 && t.glu_limit > 0 && t.activation == Activation::kSwiGLU) {
    int clamped = B.tensor(received * fe_in * d.e);
    LayerOp& clamp = B.op("expert_glu_clamp", OpClass::kMemoryBound, {up}, clamped);
    clamp.eager_bytes = 2 * received * fe_in * d.e;  // the clamped halves, written and read by the cat
    clamp.eager_launches = 2;
    clamp.backward_bytes_factor = 1.25;
    clamp.saves = kSaveInput0;  // clamp_backward's mask reads its input
    clamp.module |= kModuleMoeAct;
    glu_in = clamped;
  }
  int act = B.tensor(received * fe * d.e);
  LayerOp& glu = B.elementwise(t.activation == Activation::kSwiGLU ? "expert_swiglu" : "expert_gelu",
                               {glu_in, routes}, act, 6, FusionRule::kEpilogue, 3);
  glu.saves = kSaveInput0 | kSaveInput1;  // its input and the router weights
  glu.module |= kModuleMoeAct;
  if (sh.expert_gemm_streams > 0 && t.activation != Activation::kSwiGLU) {
    // Megatron-Core's TEGroupedMLP (ExpertGemm::kMultiStream) fuses only gated activations
    // with the router weights (experts.py bias_act_func: weighted_bias_swiglu_impl,
    // weighted_bias_quick_geglu_impl); a non-gated one runs as eager ops: the activation (read
    // and write e B an element), a multiply by the fp32 router probabilities (read e, write
    // 4 B) and a cast back (read 4, write e): 4e + 8 B where one fused pass moves 2e, so 2e + 8
    // B (12 in bf16) and two launches beyond it; the backward moves twice that.
    glu.eager_bytes = (2 * d.e + 8) * received * fe;
    glu.eager_launches = 2;
  }
  int down = B.tensor(received * d.h * d.e);
  LayerOp& fc2 = B.matmul("expert_fc2", act, down, local_experts * fe * d.h * d.e, rows, d.h, fe,
                          local_experts);
  fc2.model_flops = 2 * copies * fe * d.h;
  fc2.gemm_rounds = expert_gemm_rounds(sh, local_experts);  // fc1's (a reference into g.ops may dangle)

  if (pad) {
    int unpadded = B.tensor(received * d.h * d.e);
    B.op("expert_fp8_unpad", OpClass::kMemoryBound, {down}, unpadded).backward_bytes_factor = 1;
    down = unpadded;
  }
  // TEGroupedMLP builds fc2 with skip_bias_add and adds each local expert's bias scaled by the
  // router weights in eager PyTorch (experts.py _apply_bias at 0d8e0714: torch.cat([t + b * p
  // for each expert's rows])): per row b * p written (h e B), read with t by the add, whose
  // result is written (2 h e read, h e written), and the cat's copy (h e read and written): 6 h
  // e B a row, two launches an expert and the cat; the router weights are 16-bit (the router
  // runs in the activations' dtype unless moe_router_dtype says otherwise, and Transformer
  // Engine's fused top-k keeps the logits' dtype). The backward: the multiply's two gradients,
  // each a product and a reduction (3 h e each), and split's backward, a cat of the rows'
  // gradients (2 h e): 8 h e, 4/3 the forward, about two launches per forward launch.
  if (sh.expert_gemm_streams > 0 && t.linear_bias) {
    int biased = B.tensor(received * d.h * d.e);
    LayerOp& bias = B.op("expert_fc2_bias", OpClass::kMemoryBound, {down}, biased);
    bias.weight_bytes = local_experts * d.h * d.e;
    bias.other_flops = 2 * received * d.h;
    bias.eager_bytes = 4 * received * d.h * d.e;
    bias.eager_launches = static_cast<int16_t>(2 * local_experts);
    bias.backward_bytes_factor = 8.0 / 6.0;
    bias.backward_launch_factor = 2;
    down = biased;
  }
  if (sort) {
    int unsorted = B.tensor(received * d.h * d.e);
    B.op("unsort_by_expert", OpClass::kMemoryBound, {down}, unsorted).backward_bytes_factor = 1;
    down = unsorted;
  }
  int combined = B.tensor(copies * d.h * d.e);
  LayerOp& combine = B.op("ep_combine", OpClass::kCollective, {down}, combined);
  combine.comm = CommKind::kAllToAll;
  combine.comm_bytes = received * d.h * d.e;
  combine.group = GroupKind::kExpert;
  int moe_out = B.tensor(tokens * d.h * d.e);
  LayerOp& unpermute = B.op("unpermute", OpClass::kMemoryBound, {combined, routes}, moe_out);
  unpermute.other_flops = copies * d.h;  // sum of the k weighted outputs per token
  unpermute.saves = kSaveInput1;  // the routing (index map) only
  // Its backward scatters the output gradient back to the k copies: the permutation of the
  // forward's bytes (Transformer Engine's _moe_unpermute_mask_map.backward without probs, the
  // router weights having scaled the activation: one permute_with_mask_map of the gradient,
  // TE v2.9 pytorch/permutation.py; Megatron-Core's combine_postprocess passes no probs).
  unpermute.backward_bytes_factor = 1;

  int x = moe_out;
  if (m.shared_experts > 0) {
    const double fs = double(m.shared_experts) * t.shared_ffn();
    B.set_module(kModuleMoe | kModuleSharedExperts);
    int shared = dense_mlp(B, d, t, sp_gather(B, d, sh, "sp_all_gather2", y), fs, "shared_fc1",
                           "shared_fc2");
    if (sh.tp > 1) {
      shared = B.collective("tp_reduce_shared",
                            sh.sequence_parallel ? CommKind::kReduceScatter : CommKind::kAllReduce,
                            shared, tokens * d.h * d.e, tokens * d.h * d.e, d.n * d.h * d.e);
    }
    B.set_module(kModuleMoe);
    int sum = B.tensor(tokens * d.h * d.e);
    B.elementwise("shared_add", {moe_out, shared}, sum, 1, FusionRule::kBiasDropoutResidual, 2);
    x = sum;
  }
  B.set_module(0);
  int out = B.tensor(tokens * d.h * d.e);
  B.elementwise("residual_add", {x, mid}, out, 1, FusionRule::kBiasDropoutResidual, 2);
  return out;
}

// Multi-head latent attention (DeepSeek-V2 Sec. 2.1, Megatron-Core's MLASelfAttention): the
// norm output is projected down to the query rank r_q and to the K/V rank r_kv plus the shared
// RoPE key (d_rope), both unsplit by tp and run on the rank's sequence-parallel shard, then
// gathered (the narrow low-rank tensor crosses the tp ranks, not the hidden state); each is
// normalized and projected up per head (column-parallel): queries to d_nope + d_rope, keys and
// values to d_nope + d_v. RoPE on the query's and the shared key's RoPE parts, concatenated
// into the heads' keys, feeds the fused attention.
int mla_projections(Builder& B, const Dims& d, const LayerShape& sh, const TransformerSpec& t,
                    int input, bool add_norm) {
  const MlaSpec& m = t.mla;
  const double rq = m.q_lora_rank, rkv = m.kv_lora_rank, dr = m.qk_rope_head_dim;
  const double nope = m.qk_nope_head_dim, low = rq + rkv + dr, a = d.a_local;
  int y = norm(B, d, sh, t, "norm1", input, add_norm);
  int down = B.tensor(d.nr * low * d.e);
  B.matmul("mla_down", y, down, d.h * low * d.e, d.nr, low, d.h);
  if (sh.sequence_parallel) {
    down = B.collective("sp_all_gather1", CommKind::kAllGather, down, d.n * low * d.e,
                        d.nr * low * d.e, d.n * low * d.e);
  }
  int q_low = B.tensor(d.n * rq * d.e), kv_low = B.tensor(d.n * rkv * d.e);
  LayerOp& qn = B.elementwise("q_norm", {down}, q_low, 5, FusionRule::kNone, -1);
  qn.saves = kSaveInput0;
  qn.weight_bytes = rq * d.e;
  LayerOp& kvn = B.elementwise("kv_norm", {down}, kv_low, 5, FusionRule::kNone, -1);
  kvn.weight_bytes = rkv * d.e;
  B.set_module(kModuleMlaUpProj);  // recompute_modules "mla_up_proj": up projections and RoPE
  int q = B.tensor(d.n * a * (nope + dr) * d.e);
  B.matmul("q_up", q_low, q, rq * a * (nope + dr) * d.e, d.n, a * (nope + dr), rq);
  int kv = B.tensor(d.n * a * (nope + d.vd) * d.e);
  B.matmul("kv_up", kv_low, kv, rkv * a * (nope + d.vd) * d.e, d.n, a * (nope + d.vd), rkv);
  // Q (d_nope + d_rope), K (d_nope + the shared d_rope) and V per head, RoPE applied.
  int qkv = B.tensor(d.n * a * (2 * (nope + dr) + d.vd) * d.e);
  LayerOp& rope = B.op("mla_rope", OpClass::kMemoryBound, {q, kv, down}, qkv);
  rope.other_flops = 6 * d.n * (a + 1) * dr;
  B.set_module(0);
  return qkv;
}

}  // namespace

// Separate linears on one input (FusionPlan::separate_linears: TorchTitan's Llama runs wq, wk,
// wv and w1, w3 as nn.Linear modules of their own on the normed input): each linear's backward
// writes its own gradient of that input (n tokens x h, the sequence-parallel gather's output
// under TP), and autograd sums the k of them (torch/csrc/autograd/input_buffer.cpp
// InputBuffer::add: an in-place add as each arrives, read 2 and write 1 element). Eager: k - 1
// adds of 3 n h e, one kernel each. Compiled, Inductor's backward graph holds the sum as
// pointwise adds it cannot fuse into the extern mm kernels that produce them: without tensor
// parallelism it fuses them into the norm's backward reduction (a prologue reading the k
// gradients where the norm read one: (k - 1) n h e more, no kernel of its own); with it the
// reduce-scatter of the summed gradient stands between, so one kernel reads k and writes 1:
// (k + 1) n h e. Charged on the norm before the linears (its backward, whose input the sum is).
void linear_grad_sums(LayerGraph& g, const Dims& d, const LayerShape& sh, const TransformerSpec& t) {
  auto charge = [&](std::string_view norm_name, int readers) {
    if (readers < 2) return;
    for (LayerOp& op : g.ops) {
      if (op.name != norm_name) continue;
      const double grad = d.n * d.h * d.e;
      if (!sh.fusion.compiled) {
        op.backward_extra_bytes = (readers - 1) * 3 * grad;
        op.backward_extra_launches = static_cast<int16_t>(readers - 1);
      } else if (sh.tp == 1) {
        op.backward_extra_bytes = (readers - 1) * grad;
      } else {
        op.backward_extra_bytes = (readers + 1) * grad;
        op.backward_extra_launches = 1;
      }
    }
  };
  charge("norm1", 3);  // wq, wk, wv
  if (!t.moe.enabled()) charge("norm2", t.activation == Activation::kSwiGLU ? 2 : 1);  // w1, w3
}

// A mixture-of-experts layer reads its normed input in two places, the router's GEMM and the
// token permutation (Megatron-Core's MoELayer: router(hidden_states), then
// token_dispatcher.dispatch_preprocess(hidden_states, ...); DeepEP's and HybridEP's dispatch
// read it too), and in a third with shared experts (shared_experts(hidden_states)): each
// backward writes its own gradient of that input (the rank's n / tp tokens x h) and autograd
// sums them (torch/csrc/autograd/input_buffer.cpp InputBuffer::add), k - 1 adds of read 2 and
// write 1 in eager mode, one kernel each; compiled, fused into the norm's backward reduction
// ((k - 1) n h e more read, no kernel), as for the separate linears above. Charged on norm2.
void moe_input_grad_sum(LayerGraph& g, const Dims& d, const LayerShape& sh, const TransformerSpec& t) {
  const int readers = 2 + (t.moe.shared_experts > 0 ? 1 : 0);
  const double grad = d.nr * d.h * d.e;
  for (LayerOp& op : g.ops) {
    if (op.name != "norm2") continue;
    if (sh.fusion.compiled) {
      op.backward_extra_bytes += (readers - 1) * grad;
    } else {
      op.backward_extra_bytes += (readers - 1) * 3 * grad;
      op.backward_extra_launches = static_cast<int16_t>(op.backward_extra_launches + readers - 1);
    }
  }
}

LayerGraph build_transformer_layer(const TransformerSpec& t, const LayerShape& sh) {
  LayerGraph g;
  g.tensors.reserve(32);
  g.ops.reserve(32);
  g.fp8_saved_fraction = sh.fp8_saved_inputs ? 1.0 / sh.element_bytes : 0.0;
  g.fp8_weights_gathered = sh.fp8_weight_gather;
  g.policy_saves_read_only = sh.fusion.compiled;
  g.recompute_modules = sh.recompute_modules;
  Builder B(g, sh);
  const Dims d = dims_of(t, sh);
  const bool add_norm = sh.fusion.norm_residual;
  g.input_tensor = B.tensor(d.nr * d.h * d.e);  // residual stream, 2sbh (/t under SP)

  int qkv = -1;
  if (t.mla.enabled()) {
    qkv = mla_projections(B, d, sh, t, g.input_tensor, add_norm);
  } else {
    int x = norm_and_gather(B, d, sh, t, "norm1", "sp_all_gather1", "tp_input_grad1",
                            g.input_tensor, add_norm);
    qkv = B.tensor(d.n * (d.q + 2 * d.kv) / d.t * d.e);
    LayerOp& proj_qkv = B.matmul("qkv", x, qkv, d.h * (d.q + 2 * d.kv) / d.t * d.e, d.n,
                                 (d.q + 2 * d.kv) / d.t, d.h);  // saves its input: 2sbh
    proj_qkv.mm_split = {d.q, d.kv, d.kv};  // wq, wk, wv (TorchTitan's and HF's Llama)
    if (t.qk_norm) qkv = qk_norm(B, d, sh, qkv);
    if (t.rotary) qkv = rotary(B, d, sh, t, qkv);
    if (sh.fusion.qkv_split_copies) qkv_split_copies(B, d, t);
  }
  int context = attention_core(B, d, sh, t.dropout, qkv);
  int proj = B.tensor(d.n * d.h * d.e);
  B.matmul("attn_proj", context, proj, d.q * d.h / d.t * d.e, d.n, d.h, d.q / d.t);
  int mid = reduce_and_residual(B, d, sh, t, "tp_reduce1", proj, g.input_tensor, 1,
                                !t.mla.enabled());

  if (t.moe.enabled()) {
    g.output_tensor = moe_mlp(B, d, sh, t, mid, add_norm);
  } else {
    B.set_module(kModuleMlp);  // the dense MLP module, its tp collectives included
    int x = norm_and_gather(B, d, sh, t, "norm2", "sp_all_gather2", "tp_input_grad2", mid, add_norm);
    int down = dense_mlp(B, d, t, x, d.f, "fc1", "fc2");
    g.output_tensor = reduce_and_residual(B, d, sh, t, "tp_reduce2", down, mid, 2, true);
  }

  if (sh.fusion.separate_linears && !t.mla.enabled()) linear_grad_sums(g, d, sh, t);
  if (t.moe.enabled()) moe_input_grad_sum(g, d, sh, t);
  if (sh.fsdp_gather_element_bytes > 0) fsdp_copies(B, g, d, sh);
  if (sh.fp8_shard_share > 0) fp8_fsdp_shard_cast(B, sh);
  if (sh.autocast_weights) autocast_weight_casts(g, d);
  for (LayerOp& o : g.ops) {
    if (!B.rule_on(o.fusion)) o.fusion_group = -1;
  }
  return g;
}

}  // namespace stratasim
