// Megatron-Core's TEGroupedMLP (ExpertGemm::kMultiStream) runs two pieces of GPT-OSS-style
// experts as eager PyTorch around its fused kernels (megatron/core/transformer/moe/experts.py
// and fusions/fused_bias_geglu.py at 0d8e0714, Megatron-Bridge v0.2.0's pin): the clamp of a
// gated activation's inputs (TransformerSpec::glu_limit) and fc2's bias, added per local expert
// scaled by the router weights (_apply_bias). Worked by hand on a small MoE decoder: hidden
// 1024, SwiGLU, biases, 8 experts of width 512, top-2, ep 1, micro-batch 1 x 512 tokens, so
// 1024 token copies reach the experts of each rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "sim/core/json_reader.h"
#include "sim/cost/block_cost.h"
#include "strategies/model/model_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

ModelSpec clamped_moe(double glu_limit, bool bias) {
  ModelSpec m = testing::small_gpt(4);
  TransformerSpec& t = m.transformer;
  t.activation = Activation::kSwiGLU, t.norm = NormKind::kRMSNorm, t.linear_bias = bias;
  t.glu_limit = glu_limit;
  t.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 512};
  return m;
}

Strategy te_experts(ExpertGemm gemm = ExpertGemm::kMultiStream) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1, s.zero_stage = 1;
  s.expert_gemm = gemm;
  fusion_preset("all", &s.fusion);
  return s;
}

Plan lowered(const ModelSpec& m, const Strategy& s) { return testing::lower_on_dgx_a100(m, s, 8); }

bool has(const Plan& p, std::string_view name) {
  const Block& b = *p.layer;
  return std::any_of(b.forward.begin(), b.forward.end(),
                     [&](const Kernel& k) { return b.graph.ops[k.first_op].name == name; });
}

size_t at(const Block& b, std::string_view name) {
  for (size_t i = 0; i < b.forward.size(); ++i) {
    if (b.graph.ops[b.forward[i].first_op].name == name) return i;
  }
  return b.forward.size();
}

constexpr double kCopies = 1024;  // 512 tokens x top-2, all on this rank's 8 experts

}  // namespace

TEST_CASE("expert eager ops: the clamped gated activation's inputs, 8 f e B a row forward, 10 f e backward") {
  // fc1's output is 2 x 512 wide: 1024 x 1024 x 2 B = 2,097,152 B. Two clamps (each read and
  // write half of it) and the cat (read and write all of it): 4 x 2,097,152 = 8,388,608 B, three
  // launches. Backward: clamp_backward per half (gradient and saved input read, gradient
  // written: 3 x 1,048,576) and chunk's backward cat (2 x 2,097,152): 10,485,760 B, three
  // launches.
  const Plan p = lowered(clamped_moe(7, false), te_experts());
  const Block& b = *p.layer;
  const double up = kCopies * 1024 * 2;
  const Kernel& f = kernel(b.forward, b, "expert_glu_clamp");
  CHECK(f.bytes == doctest::Approx(4 * up));
  CHECK(f.launches == 3);
  const Kernel& back = kernel(b.backward, b, "expert_glu_clamp");
  CHECK(back.bytes == doctest::Approx(2 * (3 * up / 2) + 2 * up));  // 5 x 2,097,152
  CHECK(back.launches == 3);
  CHECK(at(b, "expert_fc1") < at(b, "expert_glu_clamp"));
  CHECK(at(b, "expert_glu_clamp") < at(b, "expert_swiglu"));
  // It lengthens the layer each way by its own kernel.
  const Plan plain = lowered(clamped_moe(0, false), te_experts());
  const BlockCost with = block_cost(b, p), without = block_cost(*plain.layer, plain);
  CHECK(with.forward_s > without.forward_s);
  CHECK(with.backward_s > without.backward_s);

  // Megatron-Core's moe_act recomputation checkpoints the activation with its clamp: both run
  // again before the backward.
  Strategy recompute = te_experts();
  recompute.recompute = Recompute::kSelective;
  recompute.recompute_modules = kModuleMoeAct;
  const Plan r = lowered(clamped_moe(7, false), recompute);
  size_t rerun = 0;
  for (const Kernel& k : r.layer->backward) {
    const std::string_view name = r.layer->graph.ops[k.first_op].name;
    if (k.phase != Phase::kRecompute) continue;
    if (name == "expert_glu_clamp") CHECK(k.bytes == doctest::Approx(4 * up));
    rerun += name == "expert_glu_clamp" || name == "expert_swiglu";
  }
  CHECK(rerun == 2);

  // Only where the stack runs it apart: no limit, or a grouped-GEMM stack (its own fused
  // activation), has no clamp kernel.
  CHECK_FALSE(has(plain, "expert_glu_clamp"));
  CHECK_FALSE(has(lowered(clamped_moe(7, false), te_experts(ExpertGemm::kGrouped)), "expert_glu_clamp"));
}

TEST_CASE("expert eager ops: fc2's bias scaled by the router weights, per local expert, 6 h e B a row") {
  // fc2's output: 1024 rows x 1024 x 2 B = 2,097,152 B. b * p written, read with t by the add,
  // the sum written, the cat's copy: 6 x 2,097,152 = 12,582,912 B, plus the 8 experts' biases
  // read (8 x 1024 x 2 = 16,384 B); 2 launches an expert and the cat: 17. Backward 4/3 of it
  // (the multiply's two gradients, 3 h e each, and split's cat, 2 h e), 34 launches.
  const Plan p = lowered(clamped_moe(0, true), te_experts());
  const Block& b = *p.layer;
  const double out = kCopies * 1024 * 2, biases = 8 * 1024 * 2;
  const Kernel& f = kernel(b.forward, b, "expert_fc2_bias");
  CHECK(f.bytes == doctest::Approx(6 * out + biases));
  CHECK(f.launches == 17);
  CHECK(f.other_flops == doctest::Approx(2 * kCopies * 1024));
  const Kernel& back = kernel(b.backward, b, "expert_fc2_bias");
  CHECK(back.bytes == doctest::Approx((6 * out + biases) * 4 / 3));
  CHECK(back.launches == 34);
  CHECK(at(b, "expert_fc2") < at(b, "expert_fc2_bias"));
  CHECK(at(b, "expert_fc2_bias") < at(b, "unpermute"));
  // A grouped-GEMM stack (the bias in the GEMM's epilogue) and bias-free experts have none.
  CHECK_FALSE(has(lowered(clamped_moe(0, true), te_experts(ExpertGemm::kGrouped)), "expert_fc2_bias"));
  CHECK_FALSE(has(lowered(clamped_moe(0, false), te_experts()), "expert_fc2_bias"));
}

TEST_CASE("expert eager ops: glu_limit in the model, its round trip and its errors") {
  auto read = [](const std::string& text) {
    return read_model(JsonNode(parse_json_text(text, "m.json"), "m.json", "model"));
  };
  const std::string base = R"({"family": "decoder", "layers": 2, "hidden": 256, "heads": 4,
      "seq_len": 128, "vocab": 64, "activation": "swiglu")";
  const ModelSpec m = read(base + R"(, "glu_limit": 7})");
  CHECK(m.transformer.glu_limit == 7.0);
  CHECK(to_json(m).at("glu_limit") == 7.0);
  CHECK(read(to_json(m).dump()).transformer == m.transformer);
  CHECK_FALSE(to_json(read(base + "}")).contains("glu_limit"));
  CHECK(model_preset("gpt-oss-120b").transformer.glu_limit == 7.0);

  std::string what = testing::input_error_message([&] { read(base + R"(, "glu_limit": -1})"); });
  CAPTURE(what);
  CHECK(what.find("m.json: model.glu_limit: -1") != std::string::npos);
  CHECK(what.find("must be 0 (no clamp) or a positive limit") != std::string::npos);
  what = testing::input_error_message([&] {
    read(R"({"family": "decoder", "layers": 2, "hidden": 256, "heads": 4, "seq_len": 128,
             "vocab": 64, "activation": "gelu", "glu_limit": 7})");
  });
  CHECK(what.find("m.json: model.glu_limit: 7") != std::string::npos);
  CHECK(what.find("needs activation swiglu") != std::string::npos);
}

}  // namespace stratasim
