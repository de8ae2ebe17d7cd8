// Transformer presets, each from its paper or model card.
#include <cmath>
#include <functional>
#include <map>

#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

ModelSpec gpt(std::string name, int layers, int hidden, int heads, int seq, int vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.family = ModelFamily::kDecoder;
  m.transformer = TransformerSpec{.layers = layers, .hidden = hidden, .heads = heads,
                                  .seq_len = seq, .vocab = vocab};
  return m;
}

ModelSpec llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                int seq, int vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.family = ModelFamily::kDecoder;
  m.transformer = TransformerSpec{.layers = layers, .hidden = hidden, .heads = heads,
                                  .kv_heads = kv_heads, .ffn_hidden = ffn,
                                  .activation = Activation::kSwiGLU, .norm = NormKind::kRMSNorm,
                                  .seq_len = seq, .vocab = vocab, .tied_embeddings = false,
                                  .learned_positions = false, .rotary = true,
                                  .linear_bias = false,
                                  .dropout = false};
  return m;
}

ModelSpec qk_normed(ModelSpec m) {
  m.transformer.qk_norm = true;
  return m;
}

ModelSpec moe(ModelSpec m, int experts, int top_k, int expert_ffn, int head_dim = 0) {
  m.transformer.moe = MoeSpec{.experts = experts, .top_k = top_k, .expert_ffn_hidden = expert_ffn};
  m.transformer.head_dim_override = head_dim;
  return m;
}

const std::map<std::string, std::function<ModelSpec()>>& presets() {
  static const std::map<std::string, std::function<ModelSpec()>> table = {
      // Brown et al. 2020, Table 2.1; Megatron's 51200 padded vocabulary.
      {"gpt3-175b", [] { return gpt("gpt3-175b", 96, 12288, 96, 2048, 51200); }},
      // Narayanan et al. SC21, Table 1, last row.
      {"megatron-1t", [] { return gpt("megatron-1t", 128, 25600, 160, 2048, 51200); }},
      // Narayanan et al. SC21, Table 1.
      {"gpt-18b", [] { return gpt("gpt-18b", 40, 6144, 48, 2048, 51200); }},
      // Touvron et al. 2023 (Llama 2), Table 1 and model card: GQA with 8 KV heads.
      {"llama2-70b", [] { return llama("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000); }},
      // Llama 3 model card (Meta, 2024).
      {"llama3-8b", [] { return llama("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256); }},
      {"llama3-70b", [] { return llama("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256); }},
      // Llama 3 Herd of Models (Dubey et al. 2024), Table 3: 126 layers, model dimension 16384,
      // FFN 53248, 128 heads with 8 key/value heads, vocabulary 128256; pre-trained at 8192 tokens.
      {"llama3-405b", [] { return llama("llama3-405b", 126, 16384, 128, 8, 53248, 8192, 128256); }},
      // Jiang et al. 2024 (Mixtral of Experts), Table 1: 8 experts, top-2, Mistral 7B's
      // dimensions; trained here at 4096 tokens (Megatron-Core's Mixtral recipe).
      {"mixtral-8x7b",
       [] { return moe(llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 4096, 32000), 8, 2, 14336); }},
      // Qwen3 technical report (Yang et al. 2025), Table 2, and the Hugging Face configs:
      // 128 experts, top-8, head_dim 128, untied embeddings, vocabulary 151936.
      // Its attention normalizes each head's query and key (q_norm, k_norm).
      {"qwen3-30b-a3b",
       [] { return qk_normed(moe(llama("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 4096, 151936), 128, 8, 768, 128)); }},
      {"qwen3-235b-a22b",
       [] { return qk_normed(moe(llama("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 4096, 151936), 128, 8, 1536, 128)); }},
      // GPT-OSS-120B (OpenAI 2025 model card; transformers' GptOssConfig; Megatron-Bridge's
      // GPTOSSProvider120B): 36 layers, hidden 2880, 64 heads of 64 with 8 KV heads, 128 experts
      // of 2880 (top-4), biases, vocabulary 201088, untied; every second layer attends a
      // 128-key sliding window (Hugging Face's sliding_window counts the query itself).
      {"gpt-oss-120b",
       [] {
         ModelSpec m = moe(llama("gpt-oss-120b", 36, 2880, 64, 8, 2880, 4096, 201088), 128, 4, 2880, 64);
         m.transformer.linear_bias = true;
         m.transformer.sliding_window = 128;
         m.transformer.windowed_layers = 18;
         m.transformer.glu_limit = 7;
         m.transformer.rope_attention_factor = 0.1 * std::log(32.0) + 1;  // YaRN, factor 32  // swiglu_limit 7.0 (GptOssConfig; GPTOSSProvider's activation_func_clamp_value)
         return m;
       }},
      // DeepSeek-V3 technical report (DeepSeek-AI 2024), Sec. 4.2 and its Hugging Face config: 61
      // layers (the first 3 dense, ffn 18432), hidden 7168, 128 heads of multi-head latent
      // attention (q rank 1536, kv rank 512, 128 + 64 RoPE query/key dims, 128 value dims), 256
      // routed experts of 2048 (top-8) and 1 shared, vocabulary 129280, and one multi-token
      // prediction depth (Sec. 2.2, 4.2: D = 1; num_nextn_predict_layers 1).
      {"deepseek-v3",
       [] {
         ModelSpec m = moe(llama("deepseek-v3", 61, 7168, 128, 128, 18432, 4096, 129280), 256, 8, 2048);
         m.transformer.moe.shared_experts = 1;
         m.transformer.moe.first_dense_layers = 3;
         m.transformer.moe.groups = 8, m.transformer.moe.group_top_k = 4;  // n_group, topk_group
         m.transformer.mtp_layers = 1;
         m.transformer.mla = MlaSpec{.q_lora_rank = 1536, .kv_lora_rank = 512};
         return m;
       }},
      // Devlin et al. 2019: 24 layers, 1024 hidden, 16 heads, seq 512, WordPiece 30522.
      {"bert-large",
       [] {
         ModelSpec m = gpt("bert-large", 24, 1024, 16, 512, 30522);
         m.family = ModelFamily::kEncoder;
         return m;
       }},
      {"resnet50", [] { return make_resnet50(); }},
      {"resnet101", [] { return make_resnet101(); }},
      // GPipe's (Huang et al. 2019, Table 1) AmoebaNet-D (18, 256), 1000 ImageNet classes.
      {"amoebanet-d-18-256", [] { return make_amoebanet_d(18, 256, 1000); }},
      // Simonyan & Zisserman 2015, configuration D; one of PipeDream's (SOSP'19) workloads.
      {"vgg16", [] { return make_vgg16(1000); }},
      // Zaremba et al. 2014 "large" LSTM language model: 2 layers, 1500 units, 35 steps.
      {"lstm-2layer", [] { return make_lstm_lm(2, 1500, 10000, 35); }},
      // GNMT as PipeDream (SOSP'19, Table 1) trains it on WMT16 En-De: 1024 units, a 32,320
      // word-piece vocabulary (MLPerf's GNMT), sentences padded to 50 tokens; GNMT-8 has 4
      // encoder and 4 decoder layers (MLPerf's), GNMT-16 8 and 8 (Wu et al. 2016).
      {"gnmt-8", [] { return make_gnmt(4, 4, 1024, 32320, 50); }},
      {"gnmt-16", [] { return make_gnmt(8, 8, 1024, 32320, 50); }},
      // The design documents' blur -> Sobel -> sharpen on 4K UHD (3840 x 2160) fp32 frames.
      {"image-pipeline-4k", [] { return make_image_pipeline(2160, 3840); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, make] : presets()) names.push_back(name);
  return names;
}

ModelSpec model_preset(const std::string& name) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    std::string known;
    for (const auto& n : model_preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("presets", "model", "\"" + name + "\"",
                     "is not a known model preset (known: " + known + ")");
  }
  return it->second();
}

}  // namespace stratasim
