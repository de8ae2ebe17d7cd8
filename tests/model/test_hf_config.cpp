// Hugging Face configs (strategies/model/hf_config.h): hand-written config.json files of five
// families import to the dimensions of our presets and to the parameter counts their papers
// and model cards publish; what cannot be modelled is an InputError naming file, key and rule.
#include <doctest/doctest.h>

#include <string>

#include "sim/core/json_reader.h"
#include "strategies/model/hf_config.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

// A scenario's model object, as if written in tests/model/data/hf/scenario.json (hf_config
// paths are relative to the file that names them).
const std::string kScenario = std::string(STRATASIM_SOURCE_DIR) + "/tests/model/data/hf/scenario.json";

ModelSpec import(const std::string& text) {
  const Json j = parse_json_text(text, kScenario);
  return read_model(JsonNode(j, kScenario, "model"));
}

// Parameters a token passes through (the report's "active" count).
double active_params(const TransformerSpec& t) {
  const int dense = std::min(t.moe.first_dense_layers, t.layers);
  return (t.layers - dense) * active_layer_params(t) + dense * dense_layer_params(t) +
         embedding_params(t) + head_params(t);
}

// The preset with the import's name and sequence length, so that the rest compares whole.
void check_same_as_preset(const ModelSpec& imported, const std::string& preset) {
  ModelSpec p = model_preset(preset);
  p.name = imported.name;
  p.transformer.seq_len = imported.transformer.seq_len;
  CHECK(imported == p);
}

}  // namespace

TEST_CASE("hf config: Llama 3 8B imports as the llama3-8b preset, 8.03B parameters") {
  const ModelSpec m = import(R"({"hf_config": "llama3_8b.json", "seq_len": 8192, "name": "l3"})");
  CHECK(m.name == "l3");
  check_same_as_preset(m, "llama3-8b");
  // Meta's model card: 8B; the checkpoint holds 8,030,261,248 parameters:
  // 32 x (4096 x (4096 + 2 x 1024 + 4096) + 3 x 4096 x 14336 + 2 x 4096) + 2 x 128256 x 4096
  // + 4096 = 32 x 218,112,000 + 1,050,673,152 + 4096.
  CHECK(total_params(m) == doctest::Approx(8030261248.0).epsilon(1e-12));
}

TEST_CASE("hf config: Mixtral 8x7B imports with 8 experts top-2, 46.7B total and 12.9B active") {
  const ModelSpec m = import(R"({"hf_config": "mixtral_8x7b.json", "seq_len": 4096})");
  check_same_as_preset(m, "mixtral-8x7b");
  const TransformerSpec& t = m.transformer;
  CHECK(t.moe.experts == 8);
  CHECK(t.moe.top_k == 2);
  // Jiang et al. 2024: 47B parameters, 13B active per token (model card: 46.7B, 12.9B).
  CHECK(total_params(m) == doctest::Approx(46.7e9).epsilon(0.002));
  CHECK(active_params(t) == doctest::Approx(12.9e9).epsilon(0.005));
}

TEST_CASE("hf config: Qwen3-30B-A3B imports with head_dim 128 apart from hidden/heads") {
  const ModelSpec m = import(R"({"hf_config": "qwen3_30b_a3b.json", "seq_len": 4096})");
  check_same_as_preset(m, "qwen3-30b-a3b");
  const TransformerSpec& t = m.transformer;
  CHECK(t.head_dim() == 128);  // 32 heads x 128 = 4096 wide attention on hidden 2048
  CHECK(t.qk_norm);            // Qwen3Attention's q_norm and k_norm
  CHECK(t.moe.expert_ffn_hidden == 768);
  // Qwen3 technical report, Table 2: 30.5B total, 3.3B activated.
  CHECK(total_params(m) == doctest::Approx(30.5e9).epsilon(0.002));
  CHECK(active_params(t) == doctest::Approx(3.3e9).epsilon(0.02));
}

TEST_CASE("hf config: DeepSeek-V3 imports with MLA, a shared expert and 3 dense layers") {
  const ModelSpec m = import(R"({"hf_config": "deepseek_v3.json", "seq_len": 4096})");
  check_same_as_preset(m, "deepseek-v3");
  // Node-limited routing: n_group 8, topk_group 4.
  CHECK(m.transformer.moe.groups == 8);
  CHECK(m.transformer.moe.group_top_k == 4);
  // DeepSeek-V3 technical report: 671B total, 37B activated per token (without the MTP module).
  CHECK(total_params(m) == doctest::Approx(671e9).epsilon(0.002));
  CHECK(active_params(m.transformer) == doctest::Approx(37e9).epsilon(0.02));
}

TEST_CASE("hf config: GPT-2 small is 124,439,808 parameters, worked by hand") {
  const ModelSpec m = import(R"({"hf_config": "gpt2.json", "seq_len": 1024})");
  const TransformerSpec& t = m.transformer;
  CHECK(t.norm == NormKind::kLayerNorm);
  CHECK(t.learned_positions);
  CHECK(t.tied_embeddings);
  CHECK(t.linear_bias);
  CHECK(t.dropout);
  // Per layer 12 h^2 + 13 h = 7,077,888 + 9,984 (h = 768); 12 layers; token and position
  // embeddings (50257 + 1024) x 768 = 39,383,808; final LayerNorm 1,536; the head is tied.
  CHECK(total_params(m) == doctest::Approx(12 * 7087872.0 + 39383808.0 + 1536.0).epsilon(1e-12));
}

TEST_CASE("hf config: overrides beside hf_config apply after the import") {
  const ModelSpec m =
      import(R"({"hf_config": "llama3_8b.json", "seq_len": 131072, "layers": 4, "vocab": 32000})");
  CHECK(m.transformer.seq_len == 131072);
  CHECK(m.transformer.layers == 4);
  CHECK(m.transformer.vocab == 32000);
  CHECK(m.transformer.hidden == 4096);
}

TEST_CASE("hf config: what cannot be read or modelled names the file, the key and the rule") {
  CHECK_THROWS_WITH_AS(import(R"({"hf_config": "llama3_8b.json"})"),
                       doctest::Contains("scenario.json: model: {\"hf_config\":\"llama3_8b.json\"} needs seq_len beside hf_config"), InputError);
  CHECK_THROWS_WITH_AS(import(R"({"hf_config": "llama3_8b.json", "preset": "llama3-8b", "seq_len": 8})"),
                       doctest::Contains("model.hf_config: \"llama3_8b.json\" cannot be combined with preset"),
                       InputError);
  CHECK_THROWS_WITH_AS(import(R"({"hf_config": "nope.json", "seq_len": 8})"),
                       doctest::Contains("names a file that does not exist: "), InputError);
  const std::string dir = std::string(STRATASIM_SOURCE_DIR) + "/tests/model/data/hf/";
  auto read_config = [&](const std::string& text) {
    const Json j = parse_json_text(text, dir + "config.json");
    return read_hf_config(JsonNode(j, dir + "config.json", ""));
  };
  CHECK_THROWS_WITH_AS(read_config(R"({"model_type": "t5"})"),
                       doctest::Contains("config.json: model_type: \"t5\" is not a model_type stratasim reads (known: llama, mistral"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      read_config(R"({"model_type": "llama", "hidden_act": "relu", "num_hidden_layers": 2,
                      "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
                      "vocab_size": 100})"),
      doctest::Contains("hidden_act: \"relu\" is not an activation this family can be modelled with (silu, swish)"),
      InputError);
  CHECK_THROWS_WITH_AS(
      read_config(R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 64,
                      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
                      "decoder_sparse_step": 2, "num_experts": 4, "num_experts_per_tok": 1,
                      "moe_intermediate_size": 32})"),
      doctest::Contains("decoder_sparse_step: 2 must be 1: MoE layers only every k-th layer are not modelled"),
      InputError);
  CHECK_THROWS_WITH_AS(read_config(R"({"model_type": "llama", "hidden_size": 64})"),
                       doctest::Contains("num_hidden_layers"), InputError);
}

}  // namespace stratasim
