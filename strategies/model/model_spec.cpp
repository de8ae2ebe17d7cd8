#include "strategies/model/model_spec.h"

#include <algorithm>

namespace stratasim {

std::string_view graph_op_kind_name(GraphOpKind k) {
  switch (k) {
    case GraphOpKind::kMatmul: return "matmul";
    case GraphOpKind::kConv: return "conv";
    case GraphOpKind::kNorm: return "norm";
    case GraphOpKind::kElementwise: return "elementwise";
    case GraphOpKind::kPool: return "pool";
    case GraphOpKind::kSoftmax: return "softmax";
    case GraphOpKind::kLoss: return "loss";
    case GraphOpKind::kStencil: return "stencil";
    case GraphOpKind::kTask: return "task";
  }
  return "?";
}

int input_rows(const OpGraphSpec& g, const std::vector<int>& heights, int in) {
  if (in >= 0) return heights[in];
  const size_t k = static_cast<size_t>(-1 - in);
  return k < g.external_heights.size() ? g.external_heights[k] : 0;
}

std::vector<int> spatial_heights(const OpGraphSpec& g) {
  const int n = static_cast<int>(g.ops.size());
  std::vector<int> h(n, 0);
  for (int i = 0; i < n; ++i) {
    const GraphOp& op = g.ops[i];
    if (op.height > 0) {
      h[i] = op.height;
      continue;
    }
    if ((op.kind != GraphOpKind::kElementwise && op.kind != GraphOpKind::kNorm) || op.inputs.empty()) continue;
    int common = -1;
    for (int in : op.inputs) {
      const int rows = input_rows(g, h, in);
      if (rows == 0 || (common >= 0 && rows != common)) {
        common = 0;
        break;
      }
      common = rows;
    }
    h[i] = std::max(common, 0);
  }
  return h;
}

bool holds_filters(const GraphOp& op) {
  return (op.kind == GraphOpKind::kConv || op.kind == GraphOpKind::kMatmul) && op.params > 0;
}

std::vector<char> channel_split(const OpGraphSpec& g) {
  const int n = static_cast<int>(g.ops.size());
  std::vector<char> split(n, 0);
  for (int i = 0; i < n; ++i) {
    const GraphOp& op = g.ops[i];
    if (op.kind == GraphOpKind::kLoss) continue;
    if (holds_filters(op)) {
      split[i] = 1;
      continue;
    }
    for (int in : op.inputs) split[i] |= in >= 0 && split[in];
  }
  return split;
}

bool params_split(const OpGraphSpec& g, const std::vector<char>& split, int i) {
  return holds_filters(g.ops[i]) || (split[i] && g.ops[i].params > 0);
}

std::string_view family_name(ModelFamily f) {
  switch (f) {
    case ModelFamily::kDecoder: return "decoder";
    case ModelFamily::kEncoder: return "encoder";
    case ModelFamily::kOpGraph: return "op_graph";
  }
  return "?";
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kGeLU: return "gelu";
    case Activation::kReLU: return "relu";
    case Activation::kSwiGLU: return "swiglu";
  }
  return "?";
}

namespace {

// One MLP of width f: up (gate + up for SwiGLU) and down projections with their biases.
double mlp_params(const TransformerSpec& t, double f) {
  const double h = t.hidden;
  const double bias = t.linear_bias ? 1.0 : 0.0;
  const double up_matrices = t.activation == Activation::kSwiGLU ? 2.0 : 1.0;
  return up_matrices * h * f + bias * up_matrices * f + f * h + bias * h;
}

// Everything but the MLP: attention (q, k, v, output projection) and the two norms.
double mla_params(const TransformerSpec& t) {
  const MlaSpec& m = t.mla;
  const double h = t.hidden, a = t.heads;
  const double down = h * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim);
  const double norms = m.q_lora_rank + m.kv_lora_rank;
  const double up = m.q_lora_rank * a * t.qk_head_dim() +
                    m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim);
  return down + norms + up + a * m.v_head_dim * h;  // + the output projection
}

double attention_and_norm_params(const TransformerSpec& t) {
  const double norm_params = t.norm == NormKind::kLayerNorm ? 2.0 * t.hidden : t.hidden;  // gamma (+ beta)
  if (t.mla.enabled()) return mla_params(t) + 2 * norm_params;
  const double h = t.hidden, q = t.attention_width();
  const double kv = static_cast<double>(t.kv_heads_or_heads()) * t.head_dim();
  const double bias = t.linear_bias ? 1.0 : 0.0;
  const double attention = h * (q + 2 * kv) + bias * (q + 2 * kv) + q * h + bias * h;
  const double qk_norms = t.qk_norm ? 2.0 * t.head_dim() : 0.0;  // a gain each for q and k heads
  return attention + 2 * norm_params + qk_norms;
}

// Router (h x experts) and shared experts: the MoE layer's parameters outside the routed experts.
double moe_dense_params(const TransformerSpec& t) {
  return double(t.hidden) * t.moe.experts + t.moe.shared_experts * mlp_params(t, t.shared_ffn());
}

}  // namespace

double layer_params(const TransformerSpec& t) {
  if (!t.moe.enabled()) return dense_layer_params(t);
  return attention_and_norm_params(t) + moe_dense_params(t) + expert_layer_params(t);
}

double dense_layer_params(const TransformerSpec& t) {
  return attention_and_norm_params(t) + mlp_params(t, t.ffn_or_default());
}

double replicated_layer_params(const TransformerSpec& t) {
  if (!t.mla.enabled()) return 0;
  const MlaSpec& m = t.mla;
  return double(t.hidden) * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) + m.q_lora_rank +
         m.kv_lora_rank;
}

TransformerSpec dense_variant(const TransformerSpec& t) {
  TransformerSpec d = t;
  d.moe = MoeSpec{};
  return d;
}

double expert_layer_params(const TransformerSpec& t) {
  return t.moe.enabled() ? t.moe.experts * mlp_params(t, t.expert_ffn()) : 0.0;
}

double active_layer_params(const TransformerSpec& t) {
  if (!t.moe.enabled()) return layer_params(t);
  return attention_and_norm_params(t) + moe_dense_params(t) + t.moe.top_k * mlp_params(t, t.expert_ffn());
}

double embedding_params(const TransformerSpec& t) {
  const double positions = t.learned_positions ? static_cast<double>(t.seq_len) : 0.0;
  return (static_cast<double>(t.vocab) + positions) * t.hidden;
}

double head_params(const TransformerSpec& t) {
  const double norm_params = t.norm == NormKind::kLayerNorm ? 2.0 * t.hidden : t.hidden;
  const double output = t.tied_embeddings ? 0.0 : static_cast<double>(t.vocab) * t.hidden;
  return norm_params + output;
}

double total_params(const ModelSpec& m) {
  if (m.family == ModelFamily::kOpGraph) {
    double p = 0;
    for (const GraphOp& op : m.graph.ops) p += op.params;
    return p;
  }
  const TransformerSpec& t = m.transformer;
  const int dense = t.moe.enabled() ? std::min(t.moe.first_dense_layers, t.layers) : 0;
  return (t.layers - dense) * layer_params(t) + dense * dense_layer_params(t) +
         embedding_params(t) + head_params(t);
}

}  // namespace stratasim
