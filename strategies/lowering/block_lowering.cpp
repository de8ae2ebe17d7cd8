#include "strategies/lowering/block_lowering.h"

#include <algorithm>
#include <limits>

namespace stratasim {
namespace {

struct Usage {
  std::vector<int> producer;       // op writing each tensor (-1: block input)
  std::vector<int> last_consumer;  // last op reading each tensor (-1: none)
};

Usage usage_of(const LayerGraph& g) {
  Usage u{std::vector<int>(g.tensors.size(), -1), std::vector<int>(g.tensors.size(), -1)};
  for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
    const LayerOp& op = g.ops[i];
    for (int16_t in : op.inputs) {
      if (in >= 0) u.last_consumer[in] = i;
    }
    if (op.output >= 0) u.producer[op.output] = i;
  }
  return u;
}

// Matrix multiplies an op runs under eager model code (LayerOp::mm_split): bmm is not mm.
int mm_calls(const LayerOp& op) {
  if (op.cls != OpClass::kMatmul || op.attention_core) return 0;
  int n = 0;
  for (double w : op.mm_split) n += w > 0;
  return std::max(n, 1);
}

// TorchTitan's op-level policy saves the output of every other matrix multiply of a layer (the
// 1st, 3rd, ...: its mm counter is odd) and of fused attention (SDPA); reduce-scatters are saved
// too. Everything else is recomputed (torchtitan/distributed/activation_checkpoint.py,
// _save_list and the mm_count rule). The counter runs over the model's nn.Linear calls: wq, wk,
// wv, wo, w1, w3, w2 in a Llama layer, so of the fused q|k|v GEMM q and v are saved, of the
// gate|up GEMM the gate. The share of op i's output the policy saves, by output width.
double op_policy_saved_share(const LayerGraph& g, int i) {
  const LayerOp& op = g.ops[i];
  if (op.cls == OpClass::kFlashAttention) return 1;
  if (op.cls == OpClass::kCollective) return op.comm == CommKind::kReduceScatter ? 1 : 0;
  if (mm_calls(op) == 0) return 0;
  int before = 0;
  for (int j = 0; j < i; ++j) before += mm_calls(g.ops[j]);
  if (mm_calls(op) == 1 && op.mm_split[0] <= 0) return (before + 1) % 2 == 1 ? 1 : 0;
  double saved = 0, total = 0;
  for (int c = 0; c < static_cast<int>(op.mm_split.size()) && op.mm_split[c] > 0; ++c) {
    total += op.mm_split[c];
    if ((before + c + 1) % 2 == 1) saved += op.mm_split[c];
  }
  return saved / total;
}

bool op_saved_by_op_policy(const LayerGraph& g, int i) { return op_policy_saved_share(g, i) > 0; }

// Selective recomputation by module (Strategy::recompute_modules): the modules of op, the
// core attention's ops marked either way.
uint8_t modules_of(const LayerOp& op) {
  return op.module | (op.attention_core ? kModuleCoreAttn : 0);
}

// Op runs again in a module the graph's selection checkpoints normally (its forward rerun from
// the module's saved input before the module's backward).
bool checkpointed(const LayerGraph& g, const LayerOp& op, Recompute mode) {
  return mode == Recompute::kSelective &&
         (modules_of(op) & g.recompute_modules & ~kOutputDiscardingModules) != 0;
}

// Op's output is freed after its consumers' forward and recomputed from its inputs.
bool output_discarded(const LayerGraph& g, const LayerOp& op, Recompute mode) {
  return mode == Recompute::kSelective && !checkpointed(g, op, mode) &&
         (modules_of(op) & g.recompute_modules & kOutputDiscardingModules) != 0;
}

bool selectively_recomputed(const LayerGraph& g, const LayerOp& op, Recompute mode) {
  return checkpointed(g, op, mode) || output_discarded(g, op, mode);
}

bool op_state_kept(const LayerGraph& g, const LayerOp& op, Recompute mode) {
  if (mode == Recompute::kFull) return false;
  if (mode == Recompute::kOpSelective) return op.cls == OpClass::kFlashAttention;
  return !checkpointed(g, op, mode);
}

bool same_group(const LayerOp& a, const LayerOp& b) {
  return a.cls != OpClass::kCollective && b.cls != OpClass::kCollective && a.fusion_group >= 0 &&
         a.fusion == b.fusion && a.fusion_group == b.fusion_group && a.device == b.device;
}

Kernel make_kernel(const LayerGraph& g, const Usage& u, const std::vector<bool>& saved,
                   int first, int last, Recompute mode) {
  Kernel k;
  const LayerOp& head = g.ops[first];
  k.cls = head.cls;
  k.first_op = first;
  k.last_op = last;
  k.fused_ops = static_cast<uint16_t>(last - first + 1);
  k.device = head.device;
  k.family = head.family;
  k.task = head.task;
  for (int i = first + 1; i <= last; ++i) {
    if (g.ops[i].family != head.family) k.family = -1;
  }
  k.comm = head.comm;
  k.comm_bytes = head.comm_bytes;
  k.comm_phases = head.comm_phases;
  k.group = head.group;
  k.overlaps_attention = head.overlaps_attention;
  k.overlap_window = head.overlap_window;
  k.reads_input_fused = head.reads_input_fused;
  k.parameter_traffic = head.parameter_traffic;
  for (int i = first; i <= last; ++i) {
    const LayerOp& op = g.ops[i];
    if (op.cls == OpClass::kMatmul || op.cls == OpClass::kFlashAttention) k.cls = op.cls;
    if (op.cls == OpClass::kMatmul && !op.high_precision) {
      k.fp8_eligible = true;
      if (op.inputs[0] >= 0 && g.tensors[op.inputs[0]].fp8) k.fp8_input_precast = true;
      if (op.output >= 0) k.fp8_grad_shard = g.tensors[op.output].fp8_grad_shard;
      if (op.weight_bytes > 0 && g.fp8_weights_gathered) k.fp8_weight_precast = true;
    }
    k.mm_calls = static_cast<uint8_t>(std::max<int>(k.mm_calls, mm_calls(op)));
    if (op.gemm_m > 0) {
      k.gemm_m = op.gemm_m, k.gemm_n = op.gemm_n, k.gemm_k = op.gemm_k, k.gemm_batch = op.gemm_batch;
      k.gemm_rounds = op.gemm_rounds;
    }
    if (op.cls == OpClass::kFlashAttention) {
      k.attention_keys = op.attention_keys, k.attention_head_dim = op.attention_head_dim;
      k.attention_causal = op.attention_causal;
      k.attention_band_share = op.attention_band_share, k.attention_band_keys = op.attention_band_keys;
    }
    k.matmul_flops += op.matmul_flops;
    k.model_flops += op.model_flops;
    k.other_flops += op.other_flops;
    k.bytes += op.weight_bytes;
    for (int j = 0; j < kMaxOpInputs; ++j) {
      const int t = op.inputs[j];
      if (t < 0 || (u.producer[t] >= first && u.producer[t] <= last)) continue;
      if (op.reads_input_fused && i == first) continue;  // arrives in registers
      bool seen = false;  // a tensor read twice by one kernel is loaded once
      for (int p = first; p < i && !seen; ++p) {
        for (int16_t q : g.ops[p].inputs) seen = seen || q == t;
      }
      if (!seen) k.bytes += g.tensors[t].bytes;
    }
    if (op.rereads_input && op.inputs[0] >= 0) k.bytes += g.tensors[op.inputs[0]].bytes;
    k.bytes += op.eager_bytes;
    k.launches += op.eager_launches;
    const int out = op.output;
    if (out >= 0 && (u.last_consumer[out] > last || saved[out] || out == g.output_tensor)) {
      k.bytes += g.tensors[out].bytes;
    }
    if (op_state_kept(g, op, mode)) k.bytes += op.aux_saved_bytes;
  }
  return k;
}

CommKind conjugate(CommKind c) {
  switch (c) {
    case CommKind::kAllGather: return CommKind::kReduceScatter;
    case CommKind::kReduceScatter: return CommKind::kAllGather;
    default: return c;
  }
}

Kernel backward_of(const LayerGraph& g, const Kernel& f) {
  Kernel b = f;
  b.phase = Phase::kBackward;
  if (f.cls == OpClass::kCollective) {
    b.comm = conjugate(f.comm);
    b.comm_bytes = f.comm_bytes * g.ops[f.first_op].backward_comm_factor;
    return b;
  }
  double factor = 2;
  for (int i = f.first_op; i <= f.last_op; ++i) factor = std::max(factor, g.ops[i].backward_flops_factor);
  b.matmul_flops = f.matmul_flops * factor;
  b.model_flops = f.model_flops * 2;  // model FLOPs: backward = 2x forward (Narayanan Eq. 3)
  b.other_flops = f.other_flops * 2;
  // Backward reads the output gradient and the saved inputs and writes the input gradient
  // (and weight gradient): about twice the forward traffic (LayerOp::backward_bytes_factor).
  double bytes_factor = 0;
  for (int i = f.first_op; i <= f.last_op; ++i) bytes_factor = std::max(bytes_factor, g.ops[i].backward_bytes_factor);
  b.bytes = f.bytes * bytes_factor;
  int launch_factor = f.cls == OpClass::kMatmul ? 2 : 1;  // dgrad + wgrad
  for (int i = f.first_op; i <= f.last_op; ++i) {
    launch_factor = std::max<int>(launch_factor, g.ops[i].backward_launch_factor);
  }
  b.launches = launch_factor * f.launches;
  for (int i = f.first_op; i <= f.last_op; ++i) {
    b.bytes += g.ops[i].backward_extra_bytes;
    b.launches += g.ops[i].backward_extra_launches;
  }
  // The weight gradient of a linear layer costs what its forward GEMM does (2 m n k).
  for (int i = f.first_op; i <= f.last_op; ++i) {
    const LayerOp& op = g.ops[i];
    if (op.cls == OpClass::kMatmul && op.weight_bytes > 0) b.weight_grad_flops += op.matmul_flops;
  }
  b.reads_input_fused = false;
  return b;
}

// Share of kernel k the backward pass recomputes: all or nothing, except a GEMM whose separate
// matrix multiplies the op policy saves in part (the k of q|k|v, the up half of gate|up).
double recomputed_share(const LayerGraph& g, const Kernel& k, Recompute mode) {
  if (mode == Recompute::kFull) return 1;
  if (mode == Recompute::kNone) return 0;
  if (mode == Recompute::kOpSelective) {
    if (k.first_op == k.last_op && k.cls == OpClass::kMatmul) {
      return 1 - op_policy_saved_share(g, k.first_op);
    }
    for (int i = k.first_op; i <= k.last_op; ++i) {
      if (op_saved_by_op_policy(g, i)) return 0;
    }
    return 1;
  }
  for (int i = k.first_op; i <= k.last_op; ++i) {
    if (selectively_recomputed(g, g.ops[i], mode)) return 1;
  }
  return 0;
}

}  // namespace

namespace {

// The tensors a backward under the op policy reads, directly (what the ops save without
// recomputation) or to recompute one it reads: walking the layer backwards, a read tensor the
// policy does not save (or saves in part: the k of q|k|v) is recomputed from its producer's
// inputs, which are read in turn.
std::vector<bool> read_by_backward(const LayerGraph& g) {
  std::vector<bool> read(g.tensors.size(), false);
  for (const LayerOp& op : g.ops) {
    for (int j = 0; j < kMaxOpInputs; ++j) {
      if ((op.saves & (1u << j)) && op.inputs[j] >= 0) read[op.inputs[j]] = true;
    }
    if ((op.saves & kSaveOutput) && op.output >= 0) read[op.output] = true;
  }
  for (int i = static_cast<int>(g.ops.size()) - 1; i >= 0; --i) {
    const LayerOp& op = g.ops[i];
    if (op.output < 0 || !read[op.output] || op_policy_saved_share(g, i) >= 1) continue;
    for (int16_t t : op.inputs) {
      if (t >= 0) read[t] = true;
    }
  }
  return read;
}

std::vector<bool> saved_with(const LayerGraph& g, const Usage& u, Recompute mode) {
  std::vector<bool> saved(g.tensors.size(), false);
  if (mode == Recompute::kFull) {
    saved[g.input_tensor] = true;
    for (int t : g.extra_inputs) saved[t] = true;
    return saved;
  }
  if (mode == Recompute::kOpSelective) {  // the checkpoint's input and what the policy saves
    saved[g.input_tensor] = true;
    for (int t : g.extra_inputs) saved[t] = true;
    const std::vector<bool> read =
        g.policy_saves_read_only ? read_by_backward(g) : std::vector<bool>();
    for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
      const int t = g.ops[i].output;
      if (t >= 0 && op_saved_by_op_policy(g, i) && (read.empty() || read[t])) saved[t] = true;
    }
    return saved;
  }
  // What the ops save; under selective recomputation, a normally checkpointed module keeps
  // only what ops outside it save of the tensors it makes (its output, read by the next
  // module), and an output-discarding op keeps none of its output.
  std::vector<bool> saved_outside(g.tensors.size(), false);
  for (const LayerOp& op : g.ops) {
    const bool inside = checkpointed(g, op, mode);
    for (int j = 0; j < kMaxOpInputs; ++j) {
      if ((op.saves & (1u << j)) && op.inputs[j] >= 0) {
        saved[op.inputs[j]] = true;
        if (!inside) saved_outside[op.inputs[j]] = true;
      }
    }
    if ((op.saves & kSaveOutput) && op.output >= 0) {
      saved[op.output] = true;
      if (!inside) saved_outside[op.output] = true;
    }
  }
  if (mode != Recompute::kSelective) return saved;
  for (size_t t = 0; t < saved.size(); ++t) {
    const int p = u.producer[t];
    if (p < 0) continue;
    if (output_discarded(g, g.ops[p], mode)) saved[t] = false;
    // A sequence-parallel all-gather's output is saved as its shard, the gathered op's output:
    // discarding that discards it.
    const LayerOp& gather = g.ops[p];
    if (gather.cls == OpClass::kCollective && gather.comm == CommKind::kAllGather &&
        gather.group == GroupKind::kTensor && gather.inputs[0] >= 0 &&
        u.producer[gather.inputs[0]] >= 0 &&
        output_discarded(g, g.ops[u.producer[gather.inputs[0]]], mode)) {
      saved[t] = false;
    }
    if (checkpointed(g, g.ops[p], mode)) saved[t] = saved_outside[t];
  }
  // What recomputation starts from: the inputs a recomputed op reads from an op that is not
  // recomputed (or from the block's input) stay in memory.
  for (const LayerOp& op : g.ops) {
    if (!selectively_recomputed(g, op, mode)) continue;
    for (int16_t t : op.inputs) {
      if (t < 0) continue;
      const int p = u.producer[t];
      if (p < 0 || !selectively_recomputed(g, g.ops[p], mode)) saved[t] = true;
    }
  }
  return saved;
}

// Bytes kept of each saved tensor. With FP8 training that saves FP8 inputs (Transformer
// Engine's Linear and GroupedLinear keep the FP8 cast of their input for the weight gradient
// and drop the 16-bit one: linear.py, "Discard row-wise data since it is not needed in
// backward pass"; 1 B per element on Hopper and Blackwell alike), a tensor only linear layers
// save is kept at fp8_saved_fraction of its size; one that another op saves as well (the
// attention output, saved by the attention and read by the output projection) is kept whole
// and in FP8 beside it. With `last_op`, only the tensors made by ops up to it (and the block's
// inputs) and the state of those ops count: what is live once the backward has walked back to
// that op.
double saved_bytes_with(const LayerGraph& g, const std::vector<bool>& saved, Recompute mode,
                        int last_op = std::numeric_limits<int>::max()) {
  std::vector<uint8_t> linear(g.fp8_saved_fraction > 0 ? g.tensors.size() : 0, 0),
      other(linear.size(), 0);
  // A per-op policy (kOpSelective) keeps what it caches, the 16-bit GEMM outputs among them,
  // never a linear layer's FP8 cast (TorchTitan's list names no cast op): the policy's saved
  // set is the whole of it.
  if (!linear.empty() && mode != Recompute::kFull && mode != Recompute::kOpSelective) {
    for (const LayerOp& op : g.ops) {
      const bool fp8_linear = op.cls == OpClass::kMatmul && !op.high_precision && op.weight_bytes > 0;
      for (int j = 0; j < kMaxOpInputs; ++j) {
        if ((op.saves & (1u << j)) && op.inputs[j] >= 0) (fp8_linear ? linear : other)[op.inputs[j]] = 1;
      }
      if ((op.saves & kSaveOutput) && op.output >= 0) other[op.output] = 1;
    }
  }
  // The op policy keeps part of a GEMM's output when it saves some of its matrix multiplies.
  std::vector<double> share(mode == Recompute::kOpSelective ? g.tensors.size() : 0, 1.0);
  for (int i = 0; i < static_cast<int>(g.ops.size()) && !share.empty(); ++i) {
    if (g.ops[i].output >= 0 && mm_calls(g.ops[i]) > 0) share[g.ops[i].output] = op_policy_saved_share(g, i);
  }
  std::vector<int> producer;  // with last_op: the tensors made by the ops up to it only
  if (last_op < static_cast<int>(g.ops.size())) {
    producer.assign(g.tensors.size(), -1);
    for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
      if (g.ops[i].output >= 0) producer[g.ops[i].output] = i;
    }
  }
  double bytes = 0;
  for (size_t t = 0; t < saved.size(); ++t) {
    if (!saved[t] || (!producer.empty() && producer[t] > last_op)) continue;
    const double whole = g.tensors[t].saved_bytes * (share.empty() ? 1.0 : share[t]);
    if (linear.empty() || !linear[t]) {
      bytes += whole;
    } else {
      bytes += (other[t] ? whole : 0) + g.fp8_saved_fraction * whole;
    }
  }
  for (int i = 0; i < static_cast<int>(g.ops.size()) && i <= last_op; ++i) {
    if (op_state_kept(g, g.ops[i], mode)) bytes += g.ops[i].aux_saved_bytes + g.ops[i].eager_saved_bytes;
  }
  return bytes;
}

// What recomputation has rebuilt and the backward still holds while op i runs its backward:
// the tensors the layer would save without recomputation (`kept_by_none`), made by op i or
// before it (the backward walks the layer in reverse and has freed what later ops made), less
// those saved under `mode` (`saved`). Never below zero: a policy may save a tensor no op's
// backward keeps (the op policy's w2 output).
double recomputed_live_at(const LayerGraph& g, const std::vector<bool>& kept_by_none,
                          const std::vector<bool>& saved, Recompute mode, int i) {
  if (mode == Recompute::kNone) return 0;
  return std::max(0.0, saved_bytes_with(g, kept_by_none, Recompute::kNone, i) -
                           saved_bytes_with(g, saved, mode, i));
}

// The forward writes every tensor that leaves its kernel or is saved for the backward.
std::vector<Kernel> fuse_with(const LayerGraph& g, const Usage& u, const std::vector<bool>& saved,
                              Recompute mode) {
  std::vector<Kernel> kernels;
  kernels.reserve(g.ops.size());
  const int n = static_cast<int>(g.ops.size());
  for (int first = 0; first < n;) {
    int last = first;
    while (last + 1 < n && same_group(g.ops[first], g.ops[last + 1])) ++last;
    kernels.push_back(make_kernel(g, u, saved, first, last, mode));
    first = last + 1;
  }
  return kernels;
}

}  // namespace

std::vector<bool> saved_tensors(const LayerGraph& g, Recompute mode) {
  return saved_with(g, usage_of(g), mode);
}

double saved_activation_bytes(const LayerGraph& g, Recompute mode) {
  return saved_bytes_with(g, saved_tensors(g, mode), mode);
}

std::vector<Kernel> fuse_kernels(const LayerGraph& g, Recompute mode) {
  const Usage u = usage_of(g);
  return fuse_with(g, u, saved_with(g, u, mode), mode);
}

std::vector<Kernel> backward_kernels(const LayerGraph& g, const std::vector<Kernel>& forward,
                                     Recompute mode) {
  std::vector<Kernel> out;
  out.reserve(forward.size() * 2);
  for (const Kernel& k : forward) {
    const double share = recomputed_share(g, k, mode);
    if (share <= 0 || k.comm_phases == CommPhases::kBackwardOnly || k.parameter_traffic) continue;
    Kernel r = k;
    r.phase = Phase::kRecompute;
    if (share < 1) {  // the unsaved matrix multiplies only: same rows and depth, fewer columns
      r.matmul_flops *= share, r.model_flops *= share, r.other_flops *= share;
      r.bytes *= share, r.gemm_n *= share;
    }
    out.push_back(r);
  }
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    if (it->comm_phases == CommPhases::kForwardOnly) continue;  // a collective or a memory pass
    out.push_back(backward_of(g, *it));
  }
  return out;
}

void lower_block(Block& block, Recompute mode, bool forward_only) {
  const LayerGraph& g = block.graph;
  const Usage u = usage_of(g);
  // Inference keeps nothing for a backward: a fused kernel writes only what leaves it.
  const std::vector<bool> saved = forward_only ? std::vector<bool>(g.tensors.size(), false) : saved_with(g, u, mode);
  std::vector<Kernel> all = fuse_with(g, u, saved, mode);
  // Backward-only kernels (collectives, a layout copy only the backward makes) have no forward
  // cost: the backward is built from the full list, the forward (and the recomputation copied
  // from it) leaves them out.
  block.backward = backward_kernels(g, all, mode);
  std::erase_if(all, [](const Kernel& k) { return k.comm_phases == CommPhases::kBackwardOnly; });
  block.forward = std::move(all);
  block.saved_activation_B = saved_bytes_with(g, saved, mode);
  // While one block runs its backward, what recomputation rebuilt is live as well, and the
  // largest working set one of its ops needs beyond the saved tensors.
  const std::vector<bool> kept_by_none = saved_with(g, u, Recompute::kNone);
  block.peak_transient_B =
      mode == Recompute::kNone
          ? 0
          : saved_bytes_with(g, kept_by_none, Recompute::kNone) - block.saved_activation_B;
  // An op's working set (ring attention's K/V blocks, the loss's logits) sits beside what
  // recomputation has rebuilt up to it.
  double reserved = 0;  // an op's working set with the allocator's slack beside it
  for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
    const LayerOp& op = g.ops[i];
    if (op.workspace_B <= 0 && op.allocator_slack_B <= 0) continue;
    const double working = recomputed_live_at(g, kept_by_none, saved, mode, i) + op.workspace_B;
    block.peak_transient_B = std::max(block.peak_transient_B, working);
    reserved = std::max(reserved, working + op.allocator_slack_B);
  }
  block.allocator_slack_B = std::max(0.0, reserved - block.peak_transient_B);
  if (forward_only) {
    block.backward.clear();
    block.saved_activation_B = 0;
    block.peak_transient_B = 0;
    block.allocator_slack_B = 0;
    for (const LayerOp& op : g.ops) {
      double live = op.workspace_B + (op.output >= 0 ? g.tensors[op.output].bytes : 0.0);
      for (int16_t t : op.inputs) live += t >= 0 ? g.tensors[t].bytes : 0.0;
      block.peak_transient_B = std::max(block.peak_transient_B, live);
    }
  }
}

}  // namespace stratasim
