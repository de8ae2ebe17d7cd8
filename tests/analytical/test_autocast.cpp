// PyTorch automatic mixed precision (Strategy::autocast_weights; strategies/lowering/
// autocast_casts.h): fp32 parameters cast to 16 bit at each use, their 16-bit gradients cast
// back and accumulated in fp32, worked out by hand on the small GPT.
#include <doctest/doctest.h>

#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/memory_model.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

// 4 layers, hidden 1024 (GPT-style: biases, LayerNorm, GeLU MLP of 4h), seq 512, vocab 32000;
// data parallel over 2 A100, micro-batch 2 of a global batch 8: 2 micro-batches.
Strategy amp(bool autocast, Recompute recompute = Recompute::kNone) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 2, s.recompute = recompute;
  s.autocast_weights = autocast;
  return s;
}

// One layer's parameters: attention 4h^2 + 4h (q, k, v and the projection with their biases),
// MLP 8h^2 + 5h, two LayerNorms 4h: 12h^2 + 13h = 12,596,224 for h = 1024.
constexpr double kLayerParams = 12.0 * 1024 * 1024 + 13 * 1024;

const Kernel* find_kernel(const std::vector<Kernel>& ks, const Block& b, std::string_view name) {
  for (const Kernel& k : ks) {
    if (b.graph.ops[k.first_op].name == name) return &k;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("autocast: each layer casts its fp32 weights once a forward pass and its gradients back") {
  const Plan p = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(true), 2);
  const Block& layer = *p.layer;
  const Kernel* cast = find_kernel(layer.forward, layer, "autocast_weight_cast");
  REQUIRE(cast != nullptr);
  // Forward: read 4 B, write the 2 B copy: 6 x 12,596,224 = 75,577,344 B, one cast for each of
  // the four GEMMs' weights (qkv, proj, fc1, fc2).
  CHECK(cast->bytes == doctest::Approx(6 * kLayerParams));
  CHECK(cast->launches == 4);
  // Backward: the 2 B gradient cast to fp32 (read 2, write 4) and added into the fp32 .grad
  // (read 4 + 4, write 4): 18 B an element, 226,732,032 B.
  const Kernel* back = find_kernel(layer.backward, layer, "autocast_weight_cast");
  REQUIRE(back != nullptr);
  CHECK(back->bytes == doctest::Approx(18 * kLayerParams));
  // The head casts the output projection's 1024 x 32000 weight once.
  const Block& head = *p.head;
  const Kernel* head_cast = find_kernel(head.forward, head, "autocast_weight_cast");
  REQUIRE(head_cast != nullptr);
  CHECK(head_cast->bytes == doctest::Approx(6.0 * 1024 * 32000));
  // Without autocast there is no cast.
  const Plan plain = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(false), 2);
  const Block& plain_layer = *plain.layer;
  CHECK(find_kernel(plain_layer.forward, plain_layer, "autocast_weight_cast") == nullptr);
}

TEST_CASE("autocast: fp32 parameters and gradients, no master copy, and the 16-bit copies saved") {
  const Plan p = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(true), 2);
  const Plan plain = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(false), 2);
  // Mixed-precision Adam with 16-bit parameters: 2 + 2 + (4 master + 8 moments) = 16 B; under
  // autocast 4 + 4 + 8: the same 16 B, held differently.
  CHECK(p.weight_bytes_per_param == 4);
  CHECK(p.grad_state_bytes_per_param == 4);
  CHECK(p.grad_bytes_per_param == 4);
  CHECK(p.optimizer_bytes_per_param == 8);
  CHECK(plain.weight_bytes_per_param == 2);
  CHECK(plain.optimizer_bytes_per_param == 12);
  // The iteration's tail: the data-parallel all-reduce moves 4 B gradients, and Adam reads the
  // fp32 weight, its gradient and both moments and writes the weight and the moments in place:
  // 4 + 4 + 2 x 8 + 4 = 28 B a parameter (16-bit parameters: 2 x 12 + 2 + 2, also 28).
  const double params = p.iteration.rank_params[0];
  bool reduced = false, stepped = false;
  for (const IterOp& op : p.iteration.tail[0]) {
    if (op.kind == IterOpKind::kGradientReduce) {
      CHECK(op.bytes == doctest::Approx(4 * params));
      reduced = true;
    }
    if (op.kind == IterOpKind::kOptimizerStep) {
      CHECK(op.bytes == doctest::Approx(28 * params));
      stepped = true;
    }
  }
  CHECK(reduced);
  CHECK(stepped);
  // Each linear layer keeps its 16-bit weight copy for its input gradient: 2 B a parameter of
  // the layer, per micro-batch in flight.
  const Block& layer = *p.layer;
  const Block& plain_layer = *plain.layer;
  CHECK(layer.saved_activation_B - plain_layer.saved_activation_B == doctest::Approx(2 * kLayerParams));
  // Under full recomputation the layer keeps only its input; the recomputed forward casts again.
  const Plan full = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(true, Recompute::kFull), 2);
  const Plan full_plain = testing::lower_on_dgx_a100(testing::small_gpt(4), amp(false, Recompute::kFull), 2);
  const Block& full_layer = *full.layer;
  CHECK(full_layer.saved_activation_B == doctest::Approx(full_plain.layer->saved_activation_B));
  int casts = 0;
  for (const Kernel& k : full_layer.backward) {
    casts += full_layer.graph.ops[k.first_op].name == "autocast_weight_cast";
  }
  CHECK(casts == 2);  // the recomputed cast and the gradients' cast back
}

TEST_CASE("autocast: autocast_weights is read, written back, and refused without a 16-bit dtype") {
  auto read = [](const char* text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  const Strategy s = read(R"({"global_batch": 8, "dtype": "fp16", "autocast_weights": true})");
  CHECK(s.autocast_weights);
  CHECK(to_json(s).at("autocast_weights") == true);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK_FALSE(to_json(Strategy{}).contains("autocast_weights"));
  CHECK_THROWS_WITH_AS(read(R"({"global_batch": 8, "dtype": "fp8", "autocast_weights": true})"),
                       doctest::Contains("s.json: strategy.autocast_weights: true needs a 16-bit dtype "
                                         "(\"bf16\" or \"fp16\")"),
                       InputError);
  CHECK_THROWS_WITH_AS(read(R"({"global_batch": 8, "dtype": "fp32", "autocast_weights": true})"),
                       doctest::Contains("strategy.autocast_weights"), InputError);
}
