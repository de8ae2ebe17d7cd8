// YaRN's attention factor (TransformerSpec::rope_attention_factor) and a fused rotary kernel
// that cannot apply it (FusionPlan::fused_rope_unscaled): Megatron-Core falls back from
// Transformer Engine's fused RoPE to its eager _apply_rotary_pos_emb_bshd when mscale != 1.0
// (rope_utils.py at 0d8e0714). Worked by hand on a small GPT: hidden 1024, 16 heads (MHA),
// micro-batch 1 x seq 512, tp 1, so q and k hold 2 x 512 x 1024 = 1,048,576 elements.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/core/json_reader.h"
#include "strategies/model/hf_config.h"
#include "strategies/model/model_json.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

ModelSpec yarn_gpt(double factor) {
  ModelSpec m = testing::small_gpt(2);
  TransformerSpec& t = m.transformer;
  t.rotary = true, t.learned_positions = false;
  t.rope_attention_factor = factor;
  return m;
}

Strategy fused(bool unscaled) {
  Strategy s = testing::all_fused();
  s.fusion.fused_rope_unscaled = unscaled;
  return s;
}

const Kernel& rope(const Plan& p, bool forward) {
  return kernel(forward ? p.layer->forward : p.layer->backward, *p.layer, "rope");
}

ModelSpec import_hf(const std::string& text) {
  return read_hf_config(JsonNode(parse_json_text(text, "config.json"), "config.json", ""));
}

}  // namespace

TEST_CASE("yarn rope: an unscaled fused kernel runs Megatron-Core's eager rope, 10 e B more a q/k element") {
  // Fused: read and write q, k, v once (3 x 524,288 x 2 B each way = 6,291,456 B). Eager: 10 x
  // 1,048,576 x 2 = 20,971,520 B more, 23 launches more; the backward 17/12 of the forward.
  const double qk = 2.0 * 512 * 1024, qkv = 3.0 * 512 * 1024;
  const Plan plain = testing::lower_on_dgx_a100(yarn_gpt(1.3466), fused(false), 8);
  const Plan eager = testing::lower_on_dgx_a100(yarn_gpt(1.3466), fused(true), 8);
  CHECK(rope(plain, true).bytes == doctest::Approx(2 * qkv * 2));
  CHECK(rope(eager, true).bytes == doctest::Approx(2 * qkv * 2 + 10 * qk * 2));
  CHECK(rope(eager, true).launches - rope(plain, true).launches == 23);
  CHECK(rope(eager, false).bytes == doctest::Approx((2 * qkv * 2 + 10 * qk * 2) * 17 / 12));
  // Plain RoPE (factor 1) keeps the fused kernel under the same stack.
  const Plan unit = testing::lower_on_dgx_a100(yarn_gpt(1), fused(true), 8);
  CHECK(rope(unit, true).bytes == doctest::Approx(rope(plain, true).bytes));
  CHECK(rope(unit, false).bytes == doctest::Approx(rope(plain, false).bytes));
}

TEST_CASE("yarn rope: the attention factor from a Hugging Face config, as transformers computes it") {
  const std::string llama = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 64)";
  CHECK(import_hf(llama + "}").transformer.rope_attention_factor == 1.0);
  // 0.1 ln 32 + 1 = 1.34657...
  CHECK(import_hf(llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 32}})").transformer.rope_attention_factor ==
        doctest::Approx(0.1 * std::log(32.0) + 1));
  // DeepSeek-V3: mscale = mscale_all_dim, the ratio 1.
  CHECK(import_hf(llama + R"(, "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}})")
            .transformer.rope_attention_factor == doctest::Approx(1.0));
  CHECK(import_hf(llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4, "attention_factor": 1.2}})")
            .transformer.rope_attention_factor == doctest::Approx(1.2));
  CHECK(import_hf(llama + R"(, "rope_scaling": {"rope_type": "linear", "factor": 4}})").transformer.rope_attention_factor == 1.0);
  // GptOssConfig's default rope_scaling is YaRN with factor 32.
  const ModelSpec oss = import_hf(R"({"model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": 128,
      "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 64, "head_dim": 64,
      "num_local_experts": 4, "num_experts_per_tok": 2})");
  CHECK(oss.transformer.rope_attention_factor == doctest::Approx(0.1 * std::log(32.0) + 1));
  CHECK(model_preset("gpt-oss-120b").transformer.rope_attention_factor == doctest::Approx(0.1 * std::log(32.0) + 1));
  CHECK_THROWS_WITH_AS(import_hf(llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": -2}})"),
                       "config.json: rope_scaling.factor: -2 must be a positive scaling factor of at most 1e6",
                       InputError);
}

TEST_CASE("yarn rope: the model and fusion keys, their round trips and errors") {
  auto model = [](const std::string& extra) {
    const std::string text = R"({"family": "decoder", "layers": 2, "hidden": 256, "heads": 4,
        "seq_len": 128, "vocab": 64, "rotary": true)" + extra + "}";
    return read_model(JsonNode(parse_json_text(text, "m.json"), "m.json", "model"));
  };
  const ModelSpec m = model(R"(, "rope_attention_factor": 1.5)");
  CHECK(m.transformer.rope_attention_factor == 1.5);
  CHECK(to_json(m).at("rope_attention_factor") == 1.5);
  CHECK_FALSE(to_json(model("")).contains("rope_attention_factor"));
  const std::string what = testing::input_error_message([&] { model(R"(, "rope_attention_factor": 0)"); });
  CAPTURE(what);
  CHECK(what.find("m.json: model.rope_attention_factor: 0") != std::string::npos);
  CHECK(what.find("must be a positive factor of at most 100") != std::string::npos);

  auto strategy = [](const std::string& text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  const Strategy s = strategy(R"({"global_batch": 8, "fusion": {"preset": "all", "fused_rope_unscaled": true}})");
  CHECK(s.fusion.fused_rope_unscaled);
  CHECK(to_json(s).at("fusion").at("fused_rope_unscaled") == true);
  CHECK_FALSE(to_json(fused(false)).at("fusion").contains("fused_rope_unscaled"));
  const std::string bad = testing::input_error_message(
      [&] { strategy(R"({"global_batch": 8, "fusion": {"fused_rope_unscaled": "yes"}})"); });
  CHECK(bad.find("s.json: strategy.fusion.fused_rope_unscaled") != std::string::npos);
}

}  // namespace stratasim
