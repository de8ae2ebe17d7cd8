// Sliding-window attention (TransformerSpec::sliding_window, windowed_layers), worked by hand:
// the FLOP FlashAttention's local kernels compute (key tiles of 128 walked per query-row block),
// the kernel time at the non-causal rate for those keys, the JSON and Hugging Face readers and
// what context parallelism refuses.
#include <doctest/doctest.h>

#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/json_reader.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/transformer_layer.h"
#include "strategies/model/hf_config.h"
#include "strategies/model/model_json.h"
#include "tests/support/small_plans.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/simple_device.h"

using namespace stratasim;

namespace {

// s = 1024 tokens, b = 1, 2 heads of 64 (hidden 128), 2 layers.
TransformerSpec windowed(int window, int windowed_layers) {
  TransformerSpec t{.layers = 2, .hidden = 128, .heads = 2, .ffn_hidden = 256,
                    .activation = Activation::kSwiGLU, .norm = NormKind::kRMSNorm,
                    .seq_len = 1024, .vocab = 64, .tied_embeddings = false,
                    .learned_positions = false, .linear_bias = false, .dropout = false};
  t.sliding_window = window;
  t.windowed_layers = windowed_layers;
  return t;
}

const LayerOp& flash_op(const LayerGraph& g) {
  for (const LayerOp& op : g.ops) {
    if (op.cls == OpClass::kFlashAttention) return op;
  }
  FAIL("no flash_attention op");
  return g.ops.front();
}

LayerShape flash_shape() {
  LayerShape s{.micro_batch = 1};
  s.fusion.flash_attention = true;
  return s;
}

ModelSpec import_hf(const std::string& text) {
  const Json j = parse_json_text(text, "config.json");
  return read_hf_config(JsonNode(j, "config.json", ""));
}

ModelSpec read_inline(const std::string& text) {
  const Json j = parse_json_text(text, "m.json");
  return read_model(JsonNode(j, "m.json", "model"));
}

}  // namespace

TEST_CASE("sliding window: the attention FLOP of windowed layers, worked by hand") {
  // Without a window: core = b s^2 heads (d_qk + d_v) = 1024^2 x 2 x 128 = 268,435,456; the
  // model counts all s x s scores (2 core = 536,870,912), the causal kernel computes half.
  const LayerOp full = flash_op(build_transformer_layer(windowed(0, -1), flash_shape()));
  CHECK(full.matmul_flops == doctest::Approx(268435456.0));
  CHECK(full.model_flops == doctest::Approx(536870912.0));
  CHECK(full.attention_band_share == 0);

  // A 129-key window (Megatron-Core's window_size (128, 0)) on every layer: a block of 128
  // query rows walks 1 + ceil(128 / 128) = 2 key tiles, 256 keys a row: 536,870,912 x 256 /
  // 1024 = 134,217,728 FLOP computed; the model counts 2 x 129 of the 1024 keys a row.
  const LayerOp all = flash_op(build_transformer_layer(windowed(129, -1), flash_shape()));
  CHECK(all.matmul_flops == doctest::Approx(134217728.0));
  CHECK(all.attention_band_share == doctest::Approx(1.0));
  CHECK(all.attention_band_keys == 256);
  CHECK(all.model_flops == doctest::Approx(536870912.0 * 258 / 1024));

  // GPT-OSS's pattern, one layer of two windowed: the mean of the two layers' FLOP, of which
  // the windowed layer's 67,108,864 are a third.
  const LayerOp half = flash_op(build_transformer_layer(windowed(129, 1), flash_shape()));
  CHECK(half.matmul_flops == doctest::Approx(0.5 * 268435456.0 + 0.5 * 134217728.0));
  CHECK(half.attention_band_share == doctest::Approx(1.0 / 3));
  CHECK(half.model_flops == doctest::Approx(0.5 * 536870912.0 + 0.5 * 536870912.0 * 258 / 1024));

  // A 512-key window walks 1 + ceil(511 / 128) = 5 tiles, 640 keys a row: more than the
  // causal kernel's mean of 512, so the layer costs what full attention costs.
  const LayerOp wide = flash_op(build_transformer_layer(windowed(512, -1), flash_shape()));
  CHECK(wide.matmul_flops == doctest::Approx(268435456.0));
  CHECK(wide.attention_band_share == 0);
}

TEST_CASE("sliding window: the windowed share runs at the non-causal rate for its keys") {
  DeviceSpec d = testing::simple_device();
  // Plateau 0.6 at half that for 256 keys (non-causal); causal 0.4 at half for 1024 keys.
  d.flash2.forward = AttentionPass{0.6, 256, 0.4, 1024, {}};
  d.flash2.backward = d.flash2.forward;
  Kernel fa = testing::attention_kernel(3e9, 1024, true);
  fa.attention_band_share = 1.0 / 3, fa.attention_band_keys = 256;
  // Full layers: 2e9 / (1e15 x 0.4 x 1024 / 2048) = 10 us; windowed: 1e9 / (1e15 x 0.6 x
  // 256 / 512) = 3.333 us; + 1 us launch.
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s ==
        doctest::Approx(10e-6 + 1e-6 / 0.3 + 1e-6));
  fa.attention_band_share = 0;  // the same FLOP all causal: 3e9 / 2e14 = 15 us
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s == doctest::Approx(16e-6));
}

TEST_CASE("sliding window: the scenario keys, their round trip and their errors") {
  const ModelSpec m = read_inline(R"({"family": "decoder", "layers": 4, "hidden": 128, "heads": 2,
      "seq_len": 1024, "vocab": 64, "sliding_window": 129, "windowed_layers": 2})");
  CHECK(m.transformer.sliding_window == 129);
  CHECK(m.transformer.windowed_share() == doctest::Approx(0.5));
  const Json j = to_json(m);
  CHECK(j.at("sliding_window") == 129);
  CHECK(j.at("windowed_layers") == 2);
  // Every layer by default.
  CHECK(read_inline(R"({"family": "decoder", "layers": 4, "hidden": 128, "heads": 2,
      "seq_len": 1024, "vocab": 64, "sliding_window": 4096})").transformer.windowed_share() == 1.0);
  CHECK_THROWS_WITH_AS(read_inline(R"({"family": "decoder", "layers": 4, "hidden": 128, "heads": 2,
      "seq_len": 1024, "vocab": 64, "windowed_layers": 2})"),
                       "m.json: model.windowed_layers: 2 needs sliding_window (the window's keys) > 0",
                       InputError);
  CHECK_THROWS_WITH_AS(read_inline(R"({"family": "decoder", "layers": 4, "hidden": 128, "heads": 2,
      "seq_len": 1024, "vocab": 64, "sliding_window": 8, "windowed_layers": 5})"),
                       "m.json: model.windowed_layers: 5 must be at most layers=4", InputError);
}

TEST_CASE("sliding window: GPT-OSS-120B from its Hugging Face config, 116.8B parameters") {
  const Json j = parse_json_text(R"({"hf_config": "gpt_oss_120b.json", "seq_len": 4096})",
                                 std::string(STRATASIM_SOURCE_DIR) + "/tests/model/data/hf/scenario.json");
  const ModelSpec m = read_model(JsonNode(j, std::string(STRATASIM_SOURCE_DIR) + "/tests/model/data/hf/scenario.json", "model"));
  const TransformerSpec& t = m.transformer;
  CHECK(t.sliding_window == 128);
  CHECK(t.windowed_layers == 18);  // layer_types alternates sliding_attention, full_attention
  CHECK(t.head_dim() == 64);       // 64 heads x 64 = 4096 wide on hidden 2880
  CHECK(t.linear_bias);            // attention_bias, and the experts' biases
  CHECK(t.moe.experts == 128);
  CHECK(t.moe.top_k == 4);
  CHECK(t.glu_limit == 7.0);       // swiglu_limit
  // OpenAI's model card: 116.83B = attention 0.96B (36 x (2880 x 4096 x 2 + 2880 x 512 x 2 +
  // biases)) + MLP 114.71B (36 x 128 experts x (2880 x 5760 + 2880 x 2880 + biases) and
  // routers) + embedding and unembedding 1.16B (2 x 201088 x 2880).
  CHECK(total_params(m) == doctest::Approx(116.83e9).epsilon(0.002));
  // The gpt-oss-120b preset is the same model.
  ModelSpec preset = model_preset("gpt-oss-120b");
  preset.name = m.name;
  CHECK(preset == m);

  // MistralConfig's default window when config.json leaves the key out; null is none.
  const std::string mistral = R"({"model_type": "mistral", "num_hidden_layers": 32,
      "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
      "intermediate_size": 14336, "vocab_size": 32000)";
  CHECK(import_hf(mistral + "}").transformer.sliding_window == 4096);
  CHECK(import_hf(mistral + R"(, "sliding_window": null})").transformer.sliding_window == 0);
  CHECK_THROWS_WITH_AS(
      import_hf(R"({"model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": 128,
          "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 64, "head_dim": 64,
          "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
          "layer_types": ["sliding_attention", "linear_attention"]})"),
      "config.json: layer_types[1]: \"linear_attention\" is not a layer type modelled (sliding_attention, full_attention)",
      InputError);
  CHECK_THROWS_WITH_AS(
      import_hf(R"({"model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": 128,
          "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 64, "head_dim": 64,
          "num_local_experts": 4, "num_experts_per_tok": 2, "swiglu_limit": -1})"),
      "config.json: swiglu_limit: -1 must be 0 (no clamp) or a positive limit of at most 1e6", InputError);
}

TEST_CASE("sliding window: ring attention over windowed layers is refused with the rule") {
  ModelSpec m;
  m.family = ModelFamily::kDecoder;
  m.transformer = windowed(129, 1);
  Strategy s;
  s.cp = 2, s.global_batch = 1;
  fusion_preset("all", &s.fusion);
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 2;
  const Expected<Plan> ring = lower(m, s, hw);
  REQUIRE_FALSE(ring.has_value());
  CHECK(ring.error().reason == InfeasibleReason::kContextParallel);
  CHECK(ring.error().detail ==
        "ring and all-gather attention over sliding-window layers (model.sliding_window) is not modelled; use cp_comm a2a "
        "(Ulysses: each rank attends whole sequences of its heads)");
  CHECK(ring.error().field == "cp_comm");
  s.cp_comm = CpComm::kAllToAll;  // Ulysses: every rank runs whole sequences of 1 head
  const Expected<Plan> ulysses = lower(m, s, hw);
  REQUIRE_MESSAGE(ulysses.has_value(), (ulysses ? "" : ulysses.error().detail));
}
