// Key names and defaults are those of the transformers library's configuration classes
// (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, MixtralConfig, Qwen2MoeConfig,
// Qwen3MoeConfig, DeepseekV3Config, GptOssConfig, GPT2Config, GPTNeoXConfig): a key left out of a
// config.json takes the class default, so the defaults below are those classes' defaults.
#include "strategies/model/hf_config.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace stratasim {
namespace {

constexpr int kMaxDim = 100000000;

// A key of a config.json, absent when left out or null (transformers writes None as null).
std::optional<JsonNode> find_set(const JsonNode& n, std::string_view key) {
  if (!n.is_object() || !n.has(key) || n.raw().at(std::string(key)).is_null()) return std::nullopt;
  return n.at(key);
}

int dim(const JsonNode& n, std::string_view key) {
  return static_cast<int>(n.at(key).as_integer(1, kMaxDim));
}
int dim_or(const JsonNode& n, std::string_view key, int fallback) {
  auto c = find_set(n, key);
  if (!c) return fallback;
  return static_cast<int>(c->as_integer(1, kMaxDim));
}
int count_or(const JsonNode& n, std::string_view key, int fallback) {
  auto c = find_set(n, key);
  if (!c) return fallback;
  return static_cast<int>(c->as_integer(0, kMaxDim));
}
bool flag_or(const JsonNode& n, std::string_view key, bool fallback) {
  auto c = find_set(n, key);
  return c ? c->as_bool() : fallback;
}
double number_or_null(const JsonNode& n, std::string_view key, double fallback) {
  auto c = find_set(n, key);
  return c ? c->as_number() : fallback;
}

void expect_activation(const JsonNode& n, std::string_view key, std::string_view fallback,
                       std::initializer_list<std::string_view> accepted) {
  auto c = n.find(key);
  const std::string act = c ? c->as_string() : std::string(fallback);
  if (std::find(accepted.begin(), accepted.end(), act) != accepted.end()) return;
  std::string list;
  for (auto a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
  n.at(key).fail("is not an activation this family can be modelled with (" + list + ")");
}

// Llama and its descendants: SwiGLU MLP (hidden_act "silu"), RMSNorm, RoPE, no biases, untied.
TransformerSpec llama_like(const JsonNode& n) {
  TransformerSpec t;
  t.layers = dim(n, "num_hidden_layers");
  t.hidden = dim(n, "hidden_size");
  t.heads = dim(n, "num_attention_heads");
  t.kv_heads = dim_or(n, "num_key_value_heads", t.heads);
  t.ffn_hidden = dim(n, "intermediate_size");
  t.vocab = dim(n, "vocab_size");
  expect_activation(n, "hidden_act", "silu", {"silu", "swish"});
  t.activation = Activation::kSwiGLU;
  t.norm = NormKind::kRMSNorm;
  t.rotary = true;
  t.learned_positions = false;
  t.tied_embeddings = flag_or(n, "tie_word_embeddings", false);
  t.linear_bias = flag_or(n, "attention_bias", false);
  t.dropout = number_or_null(n, "attention_dropout", 0) > 0;
  const int head_dim = count_or(n, "head_dim", 0);
  if (head_dim > 0 && head_dim * t.heads != t.hidden) t.head_dim_override = head_dim;
  return t;
}

// Sliding-window attention as transformers configures it: `sliding_window` keys per query, the
// query itself included (null: none), on the layers whose `layer_types` entry is
// "sliding_attention" (no layer_types: every layer, as MistralConfig applies it).
void read_sliding_window(const JsonNode& n, TransformerSpec& t) {
  t.sliding_window = count_or(n, "sliding_window", 0);
  auto types = find_set(n, "layer_types");
  if (t.sliding_window == 0 || !types) return;
  if (!types->is_array() || types->size() != static_cast<size_t>(t.layers)) {
    types->fail("must list one type for each of the num_hidden_layers=" + std::to_string(t.layers) +
                " layers");
  }
  int windowed = 0;
  for (size_t i = 0; i < types->size(); ++i) {
    const JsonNode e = types->element(i);
    const std::string type = e.as_string();
    if (type == "sliding_attention") ++windowed;
    else if (type != "full_attention") e.fail("is not a layer type modelled (sliding_attention, full_attention)");
  }
  t.windowed_layers = windowed;
}

// Mistral: Llama's layout; Mistral 7B v0.1 attends a 4096-key window (MistralConfig's default
// sliding_window), later releases set it null.
TransformerSpec mistral(const JsonNode& n) {
  TransformerSpec t = llama_like(n);
  t.sliding_window = n.has("sliding_window") ? count_or(n, "sliding_window", 0) : 4096;
  return t;
}

void every_layer_sparse(const JsonNode& n, std::string_view step_key) {
  if (dim_or(n, step_key, 1) != 1) {
    n.at(step_key).fail("must be 1: MoE layers only every k-th layer are not modelled");
  }
  if (auto only = find_set(n, "mlp_only_layers"); only && only->is_array() && only->size() > 0) {
    only->fail("must be empty: dense layers among the MoE layers are not modelled");
  }
}

TransformerSpec mixtral(const JsonNode& n) {
  TransformerSpec t = llama_like(n);
  t.moe.experts = dim(n, "num_local_experts");
  t.moe.top_k = dim(n, "num_experts_per_tok");
  t.moe.expert_ffn_hidden = t.ffn_hidden;  // each expert is a full Mistral MLP
  return t;
}

// GPT-OSS (OpenAI 2025; transformers' GptOssConfig and GptOssAttention): Mixtral's layout with
// heads of head_dim 64 apart from hidden, biases in the attention and expert projections,
// experts of intermediate_size with a clamped SwiGLU (swiglu_limit, 7.0 by default: glu_limit;
// costed as SwiGLU with the clamp where the stack runs it apart), and windowed layers
// alternating with full ones (layer_types). The learned attention sinks (one logit per head
// added to the softmax's denominator) are not modelled: a few FLOP per score.
TransformerSpec gpt_oss(const JsonNode& n) {
  TransformerSpec t = mixtral(n);
  t.linear_bias = flag_or(n, "attention_bias", true);
  const int head_dim = dim(n, "head_dim");
  if (head_dim * t.heads != t.hidden) t.head_dim_override = head_dim;
  read_sliding_window(n, t);
  t.glu_limit = 7.0;
  if (auto c = find_set(n, "swiglu_limit")) {
    t.glu_limit = c->as_number();
    if (!(t.glu_limit >= 0 && t.glu_limit <= 1e6)) c->fail("must be 0 (no clamp) or a positive limit of at most 1e6");
  }
  return t;
}

// Qwen2-MoE / Qwen3-MoE: routed experts of moe_intermediate_size; Qwen2-MoE adds one shared
// expert of shared_expert_intermediate_size.
TransformerSpec qwen_moe(const JsonNode& n) {
  TransformerSpec t = llama_like(n);
  every_layer_sparse(n, "decoder_sparse_step");
  t.moe.experts = dim(n, "num_experts");
  t.moe.top_k = dim(n, "num_experts_per_tok");
  t.moe.expert_ffn_hidden = dim(n, "moe_intermediate_size");
  if (const int shared = count_or(n, "shared_expert_intermediate_size", 0); shared > 0) {
    t.moe.shared_experts = 1;
    t.moe.shared_ffn_hidden = shared;
  }
  return t;
}

// DeepSeek-V2/V3: multi-head latent attention, the first first_k_dense_replace layers dense
// (intermediate_size), the others n_routed_experts of moe_intermediate_size and
// n_shared_experts shared experts of the same width.
TransformerSpec deepseek(const JsonNode& n) {
  TransformerSpec t = llama_like(n);
  every_layer_sparse(n, "moe_layer_freq");
  t.moe.experts = dim(n, "n_routed_experts");
  t.moe.top_k = dim(n, "num_experts_per_tok");
  t.moe.expert_ffn_hidden = dim(n, "moe_intermediate_size");
  t.moe.shared_experts = count_or(n, "n_shared_experts", 0);
  t.moe.first_dense_layers = count_or(n, "first_k_dense_replace", 0);
  t.moe.groups = std::max(1, count_or(n, "n_group", 1));
  t.moe.group_top_k = count_or(n, "topk_group", 0);
  if (t.moe.experts % t.moe.groups != 0) n.at("n_group").fail("must divide n_routed_experts");
  if (t.moe.group_top_k > t.moe.groups) n.at("topk_group").fail("must be at most n_group");
  if (t.moe.group_limited() && (t.moe.top_k % t.moe.group_top_k != 0 ||
                                t.moe.top_k / t.moe.group_top_k > t.moe.experts / t.moe.groups)) {
    n.at("topk_group").fail("must divide num_experts_per_tok, each chosen group giving at most its experts");
  }
  t.mtp_layers = count_or(n, "num_nextn_predict_layers", 0);
  t.mla.kv_lora_rank = dim(n, "kv_lora_rank");
  t.mla.q_lora_rank = count_or(n, "q_lora_rank", 0);
  if (t.mla.q_lora_rank == 0) {
    n.at("q_lora_rank").fail("must be set: queries without a low-rank projection (DeepSeek-V2-Lite) are not modelled");
  }
  t.mla.qk_nope_head_dim = dim(n, "qk_nope_head_dim");
  t.mla.qk_rope_head_dim = dim(n, "qk_rope_head_dim");
  t.mla.v_head_dim = dim(n, "v_head_dim");
  t.head_dim_override = 0;
  return t;
}

// GPT-2: learned positions, LayerNorm, GeLU MLP of n_inner (None: 4 n_embd), biases, dropout,
// tied embeddings.
TransformerSpec gpt2(const JsonNode& n) {
  TransformerSpec t;
  t.layers = dim(n, "n_layer");
  t.hidden = dim(n, "n_embd");
  t.heads = dim(n, "n_head");
  t.ffn_hidden = count_or(n, "n_inner", 0);
  t.vocab = dim(n, "vocab_size");
  expect_activation(n, "activation_function", "gelu_new", {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  t.activation = Activation::kGeLU;
  t.norm = NormKind::kLayerNorm;
  t.learned_positions = true;
  t.tied_embeddings = flag_or(n, "tie_word_embeddings", true);
  t.dropout = number_or_null(n, "resid_pdrop", 0.1) > 0;
  return t;
}

// GPT-NeoX (Pythia, GPT-NeoX-20B): rotary, LayerNorm, GeLU MLP, biases, untied.
TransformerSpec gpt_neox(const JsonNode& n) {
  TransformerSpec t;
  t.layers = dim(n, "num_hidden_layers");
  t.hidden = dim(n, "hidden_size");
  t.heads = dim(n, "num_attention_heads");
  t.ffn_hidden = dim(n, "intermediate_size");
  t.vocab = dim(n, "vocab_size");
  expect_activation(n, "hidden_act", "gelu", {"gelu", "gelu_new", "gelu_fast"});
  t.activation = Activation::kGeLU;
  t.norm = NormKind::kLayerNorm;
  t.rotary = number_or_null(n, "rotary_pct", 0.25) > 0;
  t.learned_positions = false;
  t.tied_embeddings = flag_or(n, "tie_word_embeddings", false);
  t.dropout = number_or_null(n, "hidden_dropout", 0) > 0;
  return t;
}

// Qwen3 (dense and MoE): Llama's layout plus RMSNorm on each head's query and key before RoPE
// (transformers' Qwen3Attention: q_norm, k_norm over head_dim).
TransformerSpec qwen3(const JsonNode& n) {
  TransformerSpec t = llama_like(n);
  t.qk_norm = true;
  return t;
}

TransformerSpec qwen3_moe(const JsonNode& n) {
  TransformerSpec t = qwen_moe(n);
  t.qk_norm = true;
  return t;
}

// YaRN's attention factor as transformers computes it (modeling_rope_utils.py
// _compute_yarn_parameters): rope_scaling's attention_factor; else, with mscale and
// mscale_all_dim, get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim); else
// get_mscale(factor) = 0.1 ln(factor) + 1 (1 for factor <= 1). Other scalings leave cos and sin
// unscaled. GptOssConfig defaults rope_scaling to YaRN with factor 32 when config.json omits it.
double rope_attention_factor(const JsonNode& n, bool yarn_by_default, double default_factor) {
  auto get_mscale = [](double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; };
  auto rs = find_set(n, "rope_scaling");
  if (!rs) return yarn_by_default ? get_mscale(default_factor, 1) : 1.0;
  rs->require_object();
  const std::string type = rs->has("rope_type") ? rs->at("rope_type").as_string()
                           : rs->has("type")    ? rs->at("type").as_string()
                                                : "";
  if (type != "yarn") return 1.0;
  const double factor = number_or_null(*rs, "factor", 1.0);
  if (!(factor > 0 && factor <= 1e6)) rs->at("factor").fail("must be a positive scaling factor of at most 1e6");
  double a = get_mscale(factor, 1);
  if (auto given = find_set(*rs, "attention_factor")) {
    a = given->as_number();
  } else if (find_set(*rs, "mscale") && find_set(*rs, "mscale_all_dim")) {
    a = get_mscale(factor, rs->at("mscale").as_number()) / get_mscale(factor, rs->at("mscale_all_dim").as_number());
  }
  if (!(a > 0 && a <= 100)) rs->fail("gives YaRN an attention factor of " + std::to_string(a) + "; it must be positive and at most 100");
  return a;
}

struct Family {
  std::string_view model_type;
  TransformerSpec (*read)(const JsonNode&);
};
constexpr Family kFamilies[] = {
    {"llama", llama_like},     {"mistral", mistral},   {"qwen2", llama_like},
    {"qwen3", qwen3},     {"mixtral", mixtral},      {"qwen2_moe", qwen_moe},
    {"qwen3_moe", qwen3_moe},   {"deepseek_v2", deepseek}, {"deepseek_v3", deepseek},
    {"gpt_oss", gpt_oss},      {"gpt2", gpt2},            {"gpt_neox", gpt_neox}};

}  // namespace

std::vector<std::string> hf_model_types() {
  std::vector<std::string> out;
  for (const Family& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

ModelSpec read_hf_config(const JsonNode& root) {
  root.require_object();
  const JsonNode type = root.at("model_type");
  const std::string name = type.as_string();
  for (const Family& f : kFamilies) {
    if (f.model_type != name) continue;
    ModelSpec m;
    m.family = ModelFamily::kDecoder;
    m.name = root.has("_name_or_path") && root.at("_name_or_path").is_string()
                 ? root.at("_name_or_path").as_string()
                 : name;
    m.transformer = f.read(root);
    m.transformer.rope_attention_factor = rope_attention_factor(root, name == "gpt_oss", 32.0);
    return m;
  }
  std::string known;
  for (const Family& f : kFamilies) known += (known.empty() ? "" : ", ") + std::string(f.model_type);
  type.fail("is not a model_type stratasim reads (known: " + known + ")");
}

}  // namespace stratasim
