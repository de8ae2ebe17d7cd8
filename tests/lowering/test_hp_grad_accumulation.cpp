// Strategy::hp_grad_accumulation: DeepSpeed's BF16_Optimizer adds every micro-batch's bf16
// gradients into fp32 buffers after the backward (bf16_optimizer.py _update_hp_grad:
// hp_grad.add_(lp.grad.to(fp32))): 2 + 4 B for the cast, 4 + 4 + 4 B for the add, 18 B a
// parameter, two kernels a parameter tensor, backward only. Worked by hand on the small GPT
// layer (hidden h = 1024, ffn 4h, biases, LayerNorm) at tp 1 and tp 2.
#include <doctest/doctest.h>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

Strategy bf16(bool pass, int tp = 1) {
  Strategy s = testing::all_fused();
  s.dtype = DType::kBf16;
  s.tp = tp;
  s.hp_grad_accumulation = pass;
  return s;
}

bool has_kernel(const std::vector<Kernel>& ks, const Block& b, std::string_view name) {
  for (const Kernel& k : ks) {
    if (b.graph.ops[k.first_op].name == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("hp grad accumulation: 18 B a parameter after each micro-batch's backward, nothing forward") {
  const double h = 1024;
  // A GPT layer's parameters: QKV 3h^2 + 3h, projection h^2 + h, fc1 4h^2 + 4h, fc2 4h^2 + h,
  // two LayerNorms 2h each: 12 h^2 + 13 h = 12,595,200.
  const double layer = 12 * h * h + 13 * h;
  const Plan off = testing::lower_on_dgx_a100(testing::small_gpt(2), bf16(false), 8);
  const Plan on = testing::lower_on_dgx_a100(testing::small_gpt(2), bf16(true), 8);
  const Block& b = *on.layer;
  CHECK_FALSE(has_kernel(b.forward, b, "hp_grad_accumulate"));
  CHECK_FALSE(has_kernel(off.layer->backward, *off.layer, "hp_grad_accumulate"));
  const Kernel& pass = kernel(b.backward, b, "hp_grad_accumulate");
  CHECK(pass.phase == Phase::kBackward);
  CHECK(pass.bytes == doctest::Approx(18 * layer));
  CHECK(pass.matmul_flops == 0);
  // The last backward kernel: the pass runs once the layer's gradients are all made.
  CHECK(b.graph.ops[b.backward.back().first_op].name == "hp_grad_accumulate");
  // The forward and the activations are untouched.
  CHECK(b.forward.size() == off.layer->forward.size());
  CHECK(b.saved_activation_B == doctest::Approx(off.layer->saved_activation_B));
  // tp 2: the rank's share of the layer, half of it (the model splits a layer's parameters
  // over tp, its few replicated norm parameters included).
  const Plan tp2 = testing::lower_on_dgx_a100(testing::small_gpt(2), bf16(true, 2), 8);
  const Kernel& half = kernel(tp2.layer->backward, *tp2.layer, "hp_grad_accumulate");
  CHECK(half.bytes == doctest::Approx(18 * layer / 2));
  // The edges: the word embeddings (32000 x h) and learned positions (512 x h) on the first
  // stage; on the last the final LayerNorm (2h) and, with tied embeddings and one stage, no
  // output matrix of its own (the embedding's gradient is the one accumulated).
  const Kernel& emb = kernel(on.embedding->backward, *on.embedding, "hp_grad_accumulate");
  CHECK(emb.bytes == doctest::Approx(18 * (32000 * h + 512 * h)));
  const Kernel& head = kernel(on.head->backward, *on.head, "hp_grad_accumulate");
  CHECK(head.bytes == doctest::Approx(18 * 2 * h));
  // Two kernels a parameter tensor: a layer's six weight-reading ops at least.
  CHECK(pass.launches >= 12);
}

TEST_CASE("hp grad accumulation: read from a scenario, only with bf16") {
  const Json j = parse_json_text(R"({"global_batch": 8, "dtype": "bf16", "hp_grad_accumulation": true})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.hp_grad_accumulation);
  CHECK(to_json(s).at("hp_grad_accumulation") == true);
  CHECK_FALSE(to_json(Strategy{}).contains("hp_grad_accumulation"));
  const Json bad = parse_json_text(R"({"global_batch": 8, "dtype": "fp16", "hp_grad_accumulation": true})", "s.json");
  const std::string message = testing::input_error_message([&] { read_strategy(JsonNode(bad, "s.json", "strategy")); });
  CHECK(message.find("s.json") != std::string::npos);
  CHECK(message.find("hp_grad_accumulation") != std::string::npos);
  CHECK(message.find("needs dtype \"bf16\"") != std::string::npos);
}

}  // namespace stratasim
