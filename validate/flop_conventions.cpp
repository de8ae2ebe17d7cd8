#include "validate/flop_conventions.h"

#include <cmath>
#include <regex>

#include "sim/core/units.h"
#include "validate/case_rules.h"

namespace stratasim {
namespace {

double field(const Json& c, const char* group, const char* key) {
  const Json& g = c.at(group);
  if (!g.contains(key) || !g.at(key).is_number()) {
    throw InputError("validation case " + c.value("id", std::string("?")) + ": " + group + "." +
                     key + " is needed by its FLOP convention");
  }
  return g.at(key).get<double>();
}

bool arch_has(const Json& c, const char* word) {
  return lowercase(c.at("model").value("arch", std::string())).find(word) != std::string::npos;
}

// Eq. 3 of Narayanan et al. (SC21) with its leading factor (96 with recomputation, 72 without)
// and the logits' denominator (16 with, 12 without; flash-attention's README keeps 16 at 72).
double narayanan(const Json& c, const TransformerSpec& t, double factor, double vocab_denominator) {
  const double B = field(c, "parallel", "global_batch"), s = t.seq_len, l = t.layers,
               h = t.hidden, V = t.vocab;
  return factor * B * s * l * h * h * (1 + s / (6 * h) + V / (vocab_denominator * l * h));
}

// The MLP width one token passes: the dense MLP, or its top-k routed and shared experts.
double active_ffn(const TransformerSpec& t) {
  if (!t.moe.enabled()) return t.ffn_or_default();
  return t.moe.top_k * t.expert_ffn() + t.moe.shared_experts * t.shared_ffn();
}

// Megatron-LM's num_floating_point_operations (megatron/training/training.py): per token
// 6 x the linear layers' weights plus the attention's scores and values over `attended` keys.
double megatron_model(const Json& c, const TransformerSpec& t, double attention_factor) {
  const double B = field(c, "parallel", "global_batch"), s = t.seq_len, l = t.layers,
               h = t.hidden, V = t.vocab;
  const double q_width = double(t.heads) * t.head_dim();
  const double kv_width = double(t.kv_heads_or_heads()) * t.head_dim();
  const double mlp_matrices = t.activation == Activation::kSwiGLU ? 3 : 2;
  const double matmul_params = l * (2 * h * q_width + 2 * h * kv_width + mlp_matrices * h * active_ffn(t)) + V * h;
  return B * s * (6 * matmul_params + attention_factor * l * s * q_width);
}

// Parameters one token passes, without the input embedding (the output projection counted;
// a tied one is the embedding matrix, counted once as PaLM does).
double nonembedding_active_params(const TransformerSpec& t) {
  const double tied_output = t.tied_embeddings ? double(t.vocab) * t.hidden : 0.0;
  return t.layers * active_layer_params(t) + head_params(t) + tied_output;
}

double six_n_attention(const Json& c, const TransformerSpec& t, double attention_factor) {
  const double B = field(c, "parallel", "global_batch"), s = t.seq_len;
  const double attention = attention_factor * t.layers * double(t.heads) * t.head_dim() * s;
  return B * s * (6 * nonembedding_active_params(t) + attention);
}

double six_n(const Json& c, const TransformerSpec& t) {
  const double B = field(c, "parallel", "global_batch");
  const double n = t.layers * active_layer_params(t) + embedding_params(t) + head_params(t);
  return B * t.seq_len * 6 * n;
}

// The text with spaces dropped and multiplication signs and superscripts spelled as ASCII, so
// "96·B·s·l·h²" and "96*B*s*l*h^2" read alike.
std::string formula_text(const std::string& text) {
  std::string s = lowercase(text);
  for (auto [from, to] : {std::pair<const char*, const char*>{"\xc2\xb7", "*"}, {"\xc3\x97", "*"},
                          {"\xe2\x8b\x85", "*"}, {"\xe2\x88\x99", "*"}, {"\xc2\xb2", "^2"}}) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at)) s.replace(at, std::string(from).size(), to);
  }
  std::erase_if(s, [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n'; });
  return s;
}

bool has(const std::string& text, const char* pattern) { return std::regex_search(text, std::regex(pattern)); }

// Whether the text says the attention is counted without the causal halving.
bool says_noncausal(const std::string& words) {
  return has(words, "non-?causal|no causal|without (the )?causal|not causal|full s ?x ?s|full attention");
}
bool says_causal(const std::string& words) { return !says_noncausal(words) && has(words, "causal"); }

}  // namespace

const std::vector<std::string>& flop_convention_names() {
  static const std::vector<std::string> names = {
      "narayanan_hardware", "narayanan_model",  "narayanan_three_quarters",
      "megatron_model_noncausal", "megatron_model_causal", "six_n_attention",
      "six_n_attention_causal", "six_n"};
  return names;
}

double iteration_flops(const std::string& convention, const Json& c, const TransformerSpec& t) {
  if (convention == "narayanan_hardware") return narayanan(c, t, 96, 16);
  if (convention == "narayanan_model") return narayanan(c, t, 72, 12);
  if (convention == "narayanan_three_quarters") return narayanan(c, t, 72, 16);
  if (convention == "megatron_model_noncausal") return megatron_model(c, t, 12);
  if (convention == "megatron_model_causal") return megatron_model(c, t, 6);
  if (convention == "six_n_attention") return six_n_attention(c, t, 12);
  if (convention == "six_n_attention_causal") return six_n_attention(c, t, 6);
  if (convention == "six_n") return six_n(c, t);
  std::string known;
  for (const std::string& n : flop_convention_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("validation rules: flop_convention \"" + convention + "\" is unknown (" + known + ")");
}

// Formulas first, as sources write them, then the words: Eq. 3's factor and logits term;
// Megatron's per-token bracket l*h^2*(12 + 12*g/a + ... + 12*s/h ...) whose s/h term is 12
// without the causal halving and 6 with it; 6N plus an attention term (PaLM, TorchTitan); 6N.
std::string convention_from_text(const std::string& full_text) {
  // A convention is stated in a sentence or two; a longer text is read as its first 16 KiB
  // (which also bounds std::regex's recursive matcher on hostile input).
  const std::string text = full_text.substr(0, 16384);
  const std::string f = formula_text(text), words = lowercase(text);
  const bool eq3_96 = has(f, "96\\*?b\\*?s\\*?l\\*?h\\^?2"), eq3_72 = has(f, "72\\*?b\\*?s\\*?l\\*?h\\^?2");
  const bool logits_16 = has(f, "v/\\(16\\*?l\\*?h\\)"), logits_12 = has(f, "v/\\(12\\*?l\\*?h\\)");
  if (eq3_96 && !eq3_72) return "narayanan_hardware";
  if (eq3_72 && !eq3_96) return logits_16 && !logits_12 ? "narayanan_three_quarters" : "narayanan_model";
  if (has(f, "l\\*?h\\^?2\\*?\\(12\\+")) {
    if (has(f, "\\+12\\*?s/h")) return "megatron_model_noncausal";
    if (has(f, "\\+6\\*?s/h")) return "megatron_model_causal";
  }
  const bool six_n_term = has(f, "(^|[^0-9.])6\\*?n([^a-z]|_|$)|6\\*?n\\*?d|6\\*?\\(?n_?non");
  const bool attention_term = has(f, "12\\*?l\\*?(n_heads|h|a)\\*?(head_dim|q|d)\\*?(seq_len|t|s)|12\\*?l\\*?h\\*?s|12lhqt");
  if (six_n_term && attention_term) return says_causal(words) ? "six_n_attention_causal" : "six_n_attention";
  if (has(words, "palm|chowdhery")) return says_causal(words) ? "six_n_attention_causal" : "six_n_attention";
  if (has(words, "narayanan|eq\\. ?3 of|sc ?'?21")) return "narayanan_hardware";
  if (has(words, "megatron|nemo|num_floating_point_operations|flop_utils")) {
    if (says_noncausal(words)) return "megatron_model_noncausal";
    if (says_causal(words)) return "megatron_model_causal";
  }
  if (six_n_term) return "six_n";
  return "";
}

std::string recompute_implied_by_flops(const Json& c) {
  const Json& m = c.at("measured");
  if (!m.contains("iteration_s") || !m.at("iteration_s").is_number() ||
      !m.contains("tflops_per_gpu") || !m.at("tflops_per_gpu").is_number() ||
      arch_has(c, "swiglu")) {
    return "";
  }
  const double B = field(c, "parallel", "global_batch"), s = field(c, "model", "seq_len"),
               l = field(c, "model", "layers"), h = field(c, "model", "hidden"),
               V = field(c, "model", "vocab"), gpus = field(c, "hardware", "num_gpus");
  const double base = B * s * l * h * h;
  const double with = 96 * base * (1 + s / (6 * h) + V / (16 * l * h));
  const double without = 72 * base * (1 + s / (6 * h) + V / (12 * l * h));
  const double measured =
      m.at("tflops_per_gpu").get<double>() * kTera * m.at("iteration_s").get<double>() * gpus;
  return std::fabs(with - measured) < std::fabs(without - measured) ? "full" : "none";
}

}  // namespace stratasim
