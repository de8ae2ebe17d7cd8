#include "strategies/lowering/edge_blocks.h"

#include "strategies/lowering/allocator_replay.h"
#include "strategies/lowering/autocast_casts.h"
#include "strategies/lowering/spatial_split.h"

#include <algorithm>
#include <array>

namespace stratasim {
namespace {

// The tensors an eager loss allocates and frees, per element of the local logits (bytes), in
// PyTorch's order; ids: 0 the bf16 logits (the output projection's result), 1 their fp32 copy
// (logits.float()), 2 the saved log-probabilities, the rest gradients and temporaries.
// F.cross_entropy (aten log_softmax + nll_loss): train.py drops the logits after the loss
// (`del pred`); the backward's nll gradient (zeros with the target's -1, 4 B) and
// log_softmax's input gradient (4 B) are live together with the saved log-probabilities;
// after log_softmax's node runs its input buffer and saved result go, and the cast back to
// bf16 (2 B) follows.
constexpr std::array<AllocatorStep, 11> kEagerLossTrace{{
    {0, 2}, {1, 4}, {2, 4}, {1, 0}, {0, 0},  // forward, then the logits dropped
    {3, 4}, {4, 4}, {3, 0}, {2, 0}, {5, 2}, {4, 0},  // backward
}};
// PyTorch's loss_parallel (torch/distributed/tensor/parallel/loss.py): _log_softmax shifts
// by the max (4 B), exponentiates (a 4 B temporary, freed after its sum) and subtracts the
// log-sum (the saved result, 4 B); the fused nll + log_softmax backward computes
// (zeros_like(x) with -1 at the targets + exp(x)) * grad_output: the zeros, the exp
// temporary, their sum and the product, beside the saved log-probabilities.
constexpr std::array<AllocatorStep, 19> kLossParallelTrace{{
    {0, 2}, {1, 4}, {6, 4}, {7, 4}, {7, 0}, {2, 4}, {6, 0}, {1, 0}, {0, 0},  // forward
    {3, 4}, {8, 4}, {9, 4}, {8, 0}, {4, 4}, {9, 0}, {3, 0}, {2, 0}, {5, 2}, {4, 0},  // backward
}};

// An eager loss's working set beyond its saved fp32 log-probabilities (counted with the saved
// logits), and what the caching allocator holds beside it: both per element of the logits.
// The bf16 logits' 2 B hole under the log-probabilities takes none of the 4 B gradients, so
// the range grows past it (TorchTitan's 8B at 32K tokens a GPU: 8.4 GB).
void set_loss_memory(LayerOp& ce, std::span<const AllocatorStep> trace, double elements) {
  const AllocatorPeaks peaks = replay_caching_allocator(trace);
  ce.workspace_B = (peaks.allocated_B - 4) * elements;
  ce.allocator_slack_B = (peaks.reserved_B - peaks.allocated_B) * elements;
}

int add_tensor(LayerGraph& g, double bytes, double saved = -1) {
  g.tensors.push_back(TensorInfo{bytes, saved < 0 ? bytes : saved});
  return static_cast<int>(g.tensors.size()) - 1;
}

LayerOp& add_op(LayerGraph& g, std::string_view name, OpClass cls, int in, int out) {
  LayerOp o;
  o.name = name;
  o.cls = cls;
  o.inputs[0] = static_cast<int16_t>(in);
  o.output = static_cast<int16_t>(out);
  g.ops.push_back(o);
  return g.ops.back();
}

int tp_collective(LayerGraph& g, std::string_view name, CommKind kind, int in, double out_bytes,
                  double message) {
  int out = add_tensor(g, out_bytes);
  LayerOp& o = add_op(g, name, OpClass::kCollective, in, out);
  o.comm = kind;
  o.comm_bytes = message;
  return out;
}

}  // namespace

LayerGraph build_embedding(const TransformerSpec& t, const LayerShape& sh) {
  LayerGraph g;
  const double e = sh.element_bytes, n = double(sh.micro_batch) * t.seq_len / sh.cp, h = t.hidden;
  const double nr = sh.sequence_parallel ? n / sh.tp : n;
  g.input_tensor = add_tensor(g, n * 4);  // token ids (int32)
  int x = add_tensor(g, n * h * e);
  LayerOp& lookup = add_op(g, "token_embedding", OpClass::kMemoryBound, g.input_tensor, x);
  lookup.weight_bytes = n * h * e;  // gathers one row per token
  if (sh.tp > 1) {  // partial lookups summed; the backward is an identity (Megatron)
    x = tp_collective(g, "tp_embedding_reduce",
                      sh.sequence_parallel ? CommKind::kReduceScatter : CommKind::kAllReduce, x,
                      nr * h * e, n * h * e);
    g.ops.back().comm_phases = CommPhases::kForwardOnly;
  }
  if (t.learned_positions) {
    int y = add_tensor(g, nr * h * e);
    LayerOp& pos = add_op(g, "position_add", OpClass::kMemoryBound, x, y);
    pos.weight_bytes = nr * h * e;
    pos.other_flops = nr * h;
    x = y;
  }
  if (t.dropout) {
    int out = add_tensor(g, nr * h * e);
    LayerOp& drop = add_op(g, "embedding_dropout", OpClass::kMemoryBound, x, out);
    drop.aux_saved_bytes = nr * h;  // dropout mask
    drop.other_flops = 2 * nr * h;
    x = out;
  }
  g.output_tensor = x;
  return g;
}

namespace {

// A norm over the hidden state `x` (nr tokens of h); eager RMSNorm without fused_norm (see
// transformer_layer).
int append_norm(LayerGraph& g, const TransformerSpec& t, const LayerShape& sh, std::string_view name, int x) {
  const double e = sh.element_bytes, n = double(sh.micro_batch) * t.seq_len / sh.cp, h = t.hidden;
  const double nr = sh.sequence_parallel ? n / sh.tp : n;
  int y = add_tensor(g, nr * h * e);
  LayerOp& norm = add_op(g, name, OpClass::kMemoryBound, x, y);
  norm.saves = kSaveInput0;
  norm.other_flops = 5 * nr * h;
  if (t.norm == NormKind::kRMSNorm && !sh.fusion.fused_norm) {
    norm.eager_bytes = nr * h * (2 * e + 28);
    norm.eager_launches = 5;
  }
  return y;
}

// The final norm, the vocabulary projection and the loss on hidden state `x` of `g`; returns the
// loss tensor.
int append_head(LayerGraph& g, const TransformerSpec& t, const LayerShape& sh, int x) {
  const double e = sh.element_bytes, n = double(sh.micro_batch) * t.seq_len / sh.cp, h = t.hidden;
  const double nr = sh.sequence_parallel ? n / sh.tp : n;
  const double vocab_local = double(t.vocab) / sh.tp;
  int y = append_norm(g, t, sh, "final_norm", x);
  if (sh.sequence_parallel) {
    int gathered = add_tensor(g, n * h * e, nr * h * e);
    LayerOp& ag = add_op(g, "sp_all_gather_head", OpClass::kCollective, y, gathered);
    ag.comm = CommKind::kAllGather;
    ag.comm_bytes = n * h * e;
    y = gathered;
  } else if (sh.tp > 1) {
    // The vocabulary-parallel projection's input gradient is summed over tp (an identity in
    // the forward pass).
    y = tp_collective(g, "tp_head_input_grad", CommKind::kAllReduce, y, n * h * e, n * h * e);
    g.ops.back().comm_phases = CommPhases::kBackwardOnly;
  }
  // Logits are produced in fp32 for a stable cross-entropy (Megatron), 4 bytes each.
  int logits = add_tensor(g, n * vocab_local * 4);
  LayerOp& proj = add_op(g, "output_projection", OpClass::kMatmul, y, logits);
  proj.high_precision = true;  // torchtitan's Float8 and Megatron's TE layers leave it in bf16
  proj.matmul_flops = proj.model_flops = 2 * n * h * vocab_local;
  proj.gemm_m = n, proj.gemm_n = vocab_local, proj.gemm_k = h;
  proj.weight_bytes = h * vocab_local * e;
  proj.saves = kSaveInput0;
  int loss = add_tensor(g, n * 4);
  LayerOp& ce = add_op(g, "cross_entropy", OpClass::kMemoryBound, logits, loss);
  ce.saves = kSaveInput0;  // softmax of the logits, reused by the backward
  ce.other_flops = 5 * n * vocab_local;
  if (!sh.fusion.fused_loss && sh.fusion.loss_parallel && sh.tp > 1) {
    // FusionPlan::loss_parallel: eager F.cross_entropy(logits.float()) on vocab-sharded logits
    // as PyTorch's loss_parallel runs it (TorchTitan with tp > 1: train.py's loss_parallel
    // context; torch/distributed/tensor/parallel/loss.py), the decomposed log_softmax and a
    // fused nll + log_softmax backward.
    // Per element of the local logits the forward casts (read 2, write 4 B), takes the max (4),
    // shifts (8), exponentiates (8), sums (4) and subtracts the log-sum (8): 38 B where one
    // fused pass reads 4. The backward writes zeros (4), adds exp(x) to them (read 8, write 4
    // through an exp temporary: 12 + 8), scales by the output gradient (8) and casts back
    // (6): 38 B, the forward's. At its peak the saved log-probabilities (counted with the saved
    // logits) sit beside the zeros, exp(x) and their sum, all fp32: 12 B beyond them, where an
    // unsharded eager loss holds 8 (kLossParallelTrace).
    ce.eager_bytes = 34 * n * vocab_local;
    ce.eager_launches = 6;
    ce.backward_bytes_factor = 1;
    set_loss_memory(ce, kLossParallelTrace, n * vocab_local);
  } else if (!sh.fusion.fused_loss) {
    // Eager F.cross_entropy(logits.float()) (TorchTitan's loss, HF models): per element of the
    // logits the forward casts bf16 -> fp32 (read 2, write 4 B) and log_softmax reads the
    // fp32 copy once more than one fused pass (4 B) -- 10 B beyond the fused op; the backward
    // (2x) writes the nll gradient, runs log_softmax's backward and casts back. Four kernels
    // beyond one. At the backward's start the saved log-probabilities (counted in the saved
    // logits) share memory with the fp32 output gradient and the fp32 input gradient: 8 B
    // (kEagerLossTrace).
    ce.eager_bytes = 10 * n * vocab_local;
    ce.eager_launches = 4;
    set_loss_memory(ce, kEagerLossTrace, n * vocab_local);
  } else if (sh.fusion.megatron_loss_ops) {
    // Megatron's _VocabParallelCrossEntropy (megatron/mpu/cross_entropy.py 2021,
    // megatron/core/tensor_parallel/cross_entropy.py) on logits.float(): per element of the
    // local logits the forward casts (read 2, write 4 B), takes the max (4), subtracts it in
    // place (8), exponentiates in place (8), sums (4) and divides in place (8): 38 B in six
    // kernels where one fused pass reads 4 B. The backward scales the saved softmax by the
    // output gradient in place (8) and casts back to 16 bits (read 4, write 2): 14 B in two
    // kernels, where a fused pass's backward moves 2 x 4 B.
    ce.eager_bytes = 34 * n * vocab_local;
    ce.eager_launches = 5;
    ce.backward_bytes_factor = 14.0 / 38.0;
  }
  if (sh.tp > 1) {  // vocab-parallel cross-entropy: max and sum all-reduces over tp
    loss = tp_collective(g, "tp_loss_reduce", CommKind::kAllReduce, loss, n * 4, 2 * n * 4);
    g.ops.back().comm_phases = CommPhases::kForwardOnly;
  }
  return loss;
}


// Appends `part`'s ops to `g`, part's input tensor being g's tensor `input`; returns part's
// output tensor in g. Fusion groups stay apart from g's.
int append_graph(LayerGraph& g, const LayerGraph& part, int input) {
  std::vector<int> index(part.tensors.size());
  for (size_t i = 0; i < part.tensors.size(); ++i) {
    if (int(i) == part.input_tensor) {
      index[i] = input;
    } else {
      index[i] = int(g.tensors.size());
      g.tensors.push_back(part.tensors[i]);
    }
  }
  int16_t groups = 0;
  for (const LayerOp& op : g.ops) groups = std::max<int16_t>(groups, op.fusion_group + 1);
  for (LayerOp op : part.ops) {
    for (int16_t& in : op.inputs) {
      if (in >= 0) in = static_cast<int16_t>(index[in]);
    }
    if (op.output >= 0) op.output = static_cast<int16_t>(index[op.output]);
    if (op.fusion_group >= 0) op.fusion_group = static_cast<int16_t>(op.fusion_group + groups);
    g.ops.push_back(op);
  }
  g.fp8_saved_fraction = std::max(g.fp8_saved_fraction, part.fp8_saved_fraction);
  g.fp8_weights_gathered = g.fp8_weights_gathered || part.fp8_weights_gathered;
  return index[part.output_tensor];
}

// One multi-token prediction depth (TransformerSpec::mtp_layers; DeepSeek-V3 Sec. 2.2,
// Megatron-Core's MultiTokenPredictionLayer, multi_token_prediction.py) on the previous depth's
// hidden state `hidden`: the next tokens' embedding (a lookup in the shared table), both
// normalized, concatenated and projected 2h -> h by eh_proj, a column-parallel linear without
// bias whose output is gathered over tp (gather_from_tensor_model_parallel_region) and, with
// sequence parallelism, re-split (scatter_to_sequence_parallel_region), then one transformer
// layer of the model's last kind. Returns its output hidden state.
int append_mtp_depth(LayerGraph& g, const TransformerSpec& t, const LayerShape& sh, int hidden) {
  const double e = sh.element_bytes, n = double(sh.micro_batch) * t.seq_len / sh.cp, h = t.hidden;
  const double nr = sh.sequence_parallel ? n / sh.tp : n;
  const int ids = add_tensor(g, n * 4);
  const int embedded = append_graph(g, build_embedding(t, sh), ids);
  const int enorm = append_norm(g, t, sh, "mtp_enorm", embedded);
  const int hnorm = append_norm(g, t, sh, "mtp_hnorm", hidden);
  const int both = add_tensor(g, 2 * nr * h * e);
  LayerOp& cat = add_op(g, "mtp_concat", OpClass::kMemoryBound, enorm, both);
  cat.inputs[1] = static_cast<int16_t>(hnorm);
  cat.backward_bytes_factor = 1;  // its backward splits the gradient: the same bytes
  int input = both;
  if (sh.tp > 1 && sh.sequence_parallel) {  // the column-parallel input gathered (saved sharded)
    input = add_tensor(g, 2 * n * h * e, 2 * nr * h * e);
    LayerOp& ag = add_op(g, "mtp_sp_all_gather", OpClass::kCollective, both, input);
    ag.comm = CommKind::kAllGather;
    ag.comm_bytes = 2 * n * h * e;
  } else if (sh.tp > 1) {  // its input gradient summed over tp
    input = tp_collective(g, "mtp_input_grad", CommKind::kAllReduce, both, 2 * n * h * e, 2 * n * h * e);
    g.ops.back().comm_phases = CommPhases::kBackwardOnly;
  }
  int projected = add_tensor(g, n * h / sh.tp * e);
  LayerOp& proj = add_op(g, "mtp_eh_proj", OpClass::kMatmul, input, projected);
  proj.matmul_flops = proj.model_flops = 2 * n * 2 * h * h / sh.tp;
  proj.gemm_m = n, proj.gemm_n = h / sh.tp, proj.gemm_k = 2 * h;
  proj.weight_bytes = 2 * h * h / sh.tp * e;
  proj.saves = kSaveInput0;
  if (sh.tp > 1) {
    // The output all-gathered over tp: forward only without sequence parallelism (its backward
    // is a split); with it, the scatter back to the sequence shard gathers the gradient again.
    projected = tp_collective(g, "mtp_gather_output", CommKind::kAllGather, projected, nr * h * e, n * h * e);
    if (!sh.sequence_parallel) g.ops.back().comm_phases = CommPhases::kForwardOnly;
  }
  return append_graph(g, build_transformer_layer(t, sh), projected);
}

}  // namespace

LayerGraph build_head(const TransformerSpec& t, const LayerShape& sh) {
  LayerGraph g;
  const double n = double(sh.micro_batch) * t.seq_len / sh.cp;
  const double nr = sh.sequence_parallel ? n / sh.tp : n;
  g.input_tensor = add_tensor(g, nr * t.hidden * sh.element_bytes);
  int loss = append_head(g, t, sh, g.input_tensor);
  // Multi-token prediction: each depth reads the one before (the main model's last hidden
  // state first) and ends in the shared output head and a loss of its own.
  int hidden = g.input_tensor;
  for (int depth = 0; depth < t.mtp_layers; ++depth) {
    hidden = append_mtp_depth(g, t, sh, hidden);
    loss = append_head(g, t, sh, hidden);
  }
  g.output_tensor = loss;
  // Strategy::autocast_weights: the output projection's weight cast once per forward pass
  // (autocast's cache keeps one copy for every head that shares it).
  if (sh.autocast_weights) {
    prepend_autocast_casts(g, double(t.hidden) * t.vocab / sh.tp, 1, sh.element_bytes);
  }
  return g;
}

namespace {

// FusionPlan::whole_chain: op i continues the run its predecessor is in (a run starts at any op
// and takes the memory-bound ops after it) when it is memory-bound and reads an op of the run.
// Its other inputs were made before the run (ops are in topological order and the run is
// consecutive), so the run stays one pass that reads them once.
bool joins_chain(const OpGraphSpec& spec, const LayerGraph& g, int i) {
  const GraphOp& op = spec.ops[i];
  const bool memory_bound = op.kind == GraphOpKind::kStencil || op.kind == GraphOpKind::kElementwise ||
                            op.kind == GraphOpKind::kNorm || op.kind == GraphOpKind::kPool ||
                            op.kind == GraphOpKind::kSoftmax;
  if (!memory_bound || i == 0 || spec.ops[i - 1].kind == GraphOpKind::kLoss) return false;
  const LayerOp& previous = g.ops[i - 1];
  const int start = previous.fusion_group >= 0 ? previous.fusion_group : i - 1;
  return std::any_of(op.inputs.begin(), op.inputs.end(), [&](int in) { return in >= start; });
}

}  // namespace

LayerGraph build_op_graph(const OpGraphSpec& spec, const LayerShape& sh, const std::vector<int>& devices) {
  LayerGraph g;
  const double b = sh.micro_batch, e = sh.element_bytes;
  const int n = static_cast<int>(spec.ops.size());
  std::vector<int> consumers(n, 0);
  for (const GraphOp& op : spec.ops) {
    for (int in : op.inputs) {
      if (in >= 0) ++consumers[in];
    }
  }
  // A spatial split (spatial_split.h): a device holds its share of each spatial tensor's rows.
  const std::vector<int> heights = sh.cp > 1 ? spatial_heights(spec) : std::vector<int>(n, 0);
  // Channel parallelism (model_spec.h channel_split): a device holds 1/tp of each split tensor's
  // channels, runs 1/tp of each split op and holds 1/tp of the split parameters.
  const std::vector<char> split = sh.tp > 1 ? channel_split(spec) : std::vector<char>(n, 0);
  auto channels = [&](int i) { return split[i] ? 1.0 / sh.tp : 1.0; };
  double input_elements = 0, input_share = 1;
  for (const GraphOp& op : spec.ops) {
    if (op.input_elements <= input_elements) continue;
    input_elements = op.input_elements;
    input_share = spatial_share(op.model_input_rows(), sh.cp);
  }
  g.ops.reserve(n);  // large graphs (AmoebaNet-D: 1086 ops) lowered per search point
  g.tensors.reserve(n + 1 + spec.external_inputs.size());
  g.input_tensor = add_tensor(g, input_elements * b * e * input_share);
  for (int i = 0; i < n; ++i) {
    add_tensor(g, spec.ops[i].output_elements * b * e * spatial_share(heights[i], sh.cp) * channels(i));
  }
  // A pipeline stage's inputs from earlier stages: tensors n + 1 + k; the first of them is the
  // block input when no op of the stage reads the model input.
  for (size_t k = 0; k < spec.external_inputs.size(); ++k) {
    const int rows = k < spec.external_heights.size() ? spec.external_heights[k] : 0;
    g.extra_inputs.push_back(add_tensor(g, spec.external_inputs[k] * b * e * spatial_share(rows, sh.cp)));
  }
  if (input_elements <= 0 && !g.extra_inputs.empty()) {
    g.input_tensor = g.extra_inputs.front();
    g.extra_inputs.erase(g.extra_inputs.begin());
  }
  auto tensor_of = [n](int input) { return input >= 0 ? input + 1 : n - input; };  // -1 - k -> n + 1 + k
  for (int i = 0; i < n; ++i) {
    const GraphOp& src = spec.ops[i];
    const bool compute = src.kind == GraphOpKind::kMatmul || src.kind == GraphOpKind::kConv;
    LayerOp& op = add_op(g, {}, compute ? OpClass::kMatmul : OpClass::kMemoryBound, 0, i + 1);
    op.source_op = static_cast<int16_t>(i + spec.source_offset);
    op.family = static_cast<int8_t>(src.family);
    op.task = src.kind == GraphOpKind::kTask;
    op.device = static_cast<int8_t>(devices.empty() ? 0 : devices[i]);
    for (size_t k = 0; k < src.inputs.size() && k < kMaxOpInputs; ++k) {
      op.inputs[k] = static_cast<int16_t>(tensor_of(src.inputs[k]));
    }
    // A spatial op runs its rows' share on each device of the split; an op without rows runs
    // whole on each (model FLOPs count it once over the group).
    (compute ? op.matmul_flops : op.other_flops) = src.flops * b * spatial_share(heights[i], sh.cp) * channels(i);
    op.model_flops = compute ? src.flops * b / sh.cp * channels(i) : 0;
    op.weight_bytes = src.params * e * (sh.tp > 1 && params_split(spec, split, i) ? 1.0 / sh.tp : 1.0);
    op.saves = src.kind == GraphOpKind::kElementwise ? kSaveOutput : kSaveInput0;
    op.rereads_input = src.kind == GraphOpKind::kNorm;  // batch statistics, then normalize
    // Epilogue fusion: a norm or elementwise op whose single input has no other consumer
    // joins its producer's kernel (conv + BN + ReLU, LSTM gate chains). Whole-chain fusion
    // (FusionPlan::whole_chain): a memory-bound op that reads an op of its predecessor's run
    // joins that run (joins_chain).
    const bool chainable = src.kind == GraphOpKind::kNorm || src.kind == GraphOpKind::kElementwise;
    const bool epilogue = chainable && src.inputs.size() == 1 && i > 0 && src.inputs[0] == i - 1 &&
                          consumers[i - 1] == 1 && sh.fusion.elementwise_epilogue;
    if ((epilogue || (sh.fusion.whole_chain && joins_chain(spec, g, i))) && op.device == g.ops[i - 1].device) {
      op.fusion = FusionRule::kEpilogue;
      LayerOp& producer = g.ops[i - 1];
      if (producer.fusion_group < 0) {
        producer.fusion = FusionRule::kEpilogue;
        producer.fusion_group = static_cast<int16_t>(i - 1);
      }
      op.fusion_group = producer.fusion_group;
    }
  }
  g.output_tensor = n;
  return g;
}

}  // namespace stratasim
