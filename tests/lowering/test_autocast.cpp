// PyTorch automatic mixed precision (Strategy::autocast_weights; strategies/lowering/
// autocast_casts.h): fp32 parameters cast to 16 bit at each use, their 16-bit gradients cast
// back and accumulated in fp32, worked out by hand on the small GPT.
#include <doctest/doctest.h>

#include "sim/core/error.h"
#include "sim/core/json_reader.h"
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
  s.master_weights_fp32 = !autocast;
  return s;
}

Plan lowered(const Strategy& s) { return testing::lower_on_dgx_a100(testing::small_gpt(4), s, 2); }

// What autocast casts in one layer: the four GEMMs' weights, 4h^2 (q, k, v, projection) + 8h^2
// (fc1, fc2), and the three bias additions the layer graph carries (the projection's and fc2's
// h, fc1's 4h): 12h^2 + 6h = 12,589,056 elements in 7 tensors for h = 1024. The LayerNorms'
// 4h are not cast (autocast runs layer_norm in fp32).
constexpr double kCastElements = 12.0 * 1024 * 1024 + 6 * 1024;

const Kernel* cast_kernel(const std::vector<Kernel>& ks, const Block& b, Phase phase) {
  for (const Kernel& k : ks) {
    if (k.phase == phase && b.graph.ops[k.first_op].name == "autocast_weight_cast") return &k;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("autocast: each layer casts its fp32 weights once a forward pass and its gradients back") {
  const Plan p = lowered(amp(true));
  const Block& layer = *p.layer;
  const Kernel* cast = cast_kernel(layer.forward, layer, Phase::kForward);
  REQUIRE(cast != nullptr);
  // Forward: read 4 B, write the 2 B copy: 6 x 12,589,056 = 75,534,336 B, one cast a tensor.
  CHECK(cast->bytes == doctest::Approx(6 * kCastElements));
  CHECK(cast->launches == 7);
  // Backward: the 2 B gradient cast to fp32 (read 2, write 4) and added into the fp32 .grad
  // (read 4 + 4, write 4): 18 B an element, 226,603,008 B; a cast and an add a tensor.
  const Kernel* back = cast_kernel(layer.backward, layer, Phase::kBackward);
  REQUIRE(back != nullptr);
  CHECK(back->bytes == doctest::Approx(18 * kCastElements));
  CHECK(back->launches == 14);
  // The head casts the output projection's 1024 x 32000 weight once, and its gradient back.
  const Block& head = *p.head;
  const Kernel* head_cast = cast_kernel(head.forward, head, Phase::kForward);
  const Kernel* head_back = cast_kernel(head.backward, head, Phase::kBackward);
  REQUIRE(head_cast != nullptr);
  REQUIRE(head_back != nullptr);
  CHECK(head_cast->bytes == doctest::Approx(6.0 * 1024 * 32000));
  CHECK(head_back->bytes == doctest::Approx(18.0 * 1024 * 32000));
  // Without autocast there is no cast.
  const Plan plain = lowered(amp(false));
  CHECK(cast_kernel(plain.layer->forward, *plain.layer, Phase::kForward) == nullptr);
  CHECK(cast_kernel(plain.head->forward, *plain.head, Phase::kForward) == nullptr);
}

TEST_CASE("autocast: fp32 parameters and gradients, no master copy, Adam in place") {
  const Plan p = lowered(amp(true));
  const Plan plain = lowered(amp(false));
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
}

TEST_CASE("autocast: the 16-bit copies are kept for the backward unless recomputation casts again") {
  // Each linear layer keeps its 16-bit weight copy for its input gradient: 2 B an element cast,
  // per micro-batch in flight.
  const Plan p = lowered(amp(true)), plain = lowered(amp(false));
  CHECK(p.layer->saved_activation_B - plain.layer->saved_activation_B ==
        doctest::Approx(2 * kCastElements));
  // Megatron-style selective recomputation (the core attention) keeps them and casts once.
  const Plan sel = lowered(amp(true, Recompute::kSelective));
  const Plan sel_plain = lowered(amp(false, Recompute::kSelective));
  CHECK(sel.layer->saved_activation_B - sel_plain.layer->saved_activation_B ==
        doctest::Approx(2 * kCastElements));
  CHECK(cast_kernel(sel.layer->backward, *sel.layer, Phase::kRecompute) == nullptr);
  // Full recomputation keeps only the layer's input; its recomputed forward casts again, and
  // that cast runs first, so its copies sit beside everything the recomputation rebuilds.
  const Plan full = lowered(amp(true, Recompute::kFull));
  const Plan full_plain = lowered(amp(false, Recompute::kFull));
  CHECK(full.layer->saved_activation_B == doctest::Approx(full_plain.layer->saved_activation_B));
  const std::vector<Kernel>& rebuilt = full.layer->backward;
  REQUIRE(!rebuilt.empty());
  CHECK(rebuilt.front().phase == Phase::kRecompute);
  CHECK(full.layer->graph.ops[rebuilt.front().first_op].name == "autocast_weight_cast");
  CHECK(cast_kernel(rebuilt, *full.layer, Phase::kBackward) != nullptr);
  // Inference casts in its forward only.
  Strategy infer = amp(true);
  infer.workload = Workload::kInference;
  const Plan inf = lowered(infer);
  CHECK(cast_kernel(inf.layer->forward, *inf.layer, Phase::kForward) != nullptr);
  CHECK(inf.layer->backward.empty());
}

TEST_CASE("autocast: refused without a 16-bit dtype or on an operator graph, as a value") {
  Strategy fp8 = amp(true);
  fp8.dtype = DType::kFp8;  // what a search's dtype axis can set
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 2;
  const Expected<Plan> bad = lower(testing::small_gpt(4), fp8, hw);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().reason == InfeasibleReason::kPrecision);
  CHECK(bad.error().detail ==
        "autocast_weights casts fp32 parameters to a 16-bit dtype (bf16 or fp16), not fp8");
  CHECK(bad.error().field == "dtype");
  Strategy graph = amp(true);
  graph.global_batch = 2, graph.micro_batch = 1;
  HardwareModel one = catalog_cluster("dgx_a100");
  one.num_devices = 1;
  const Expected<Plan> op_graph = lower(testing::two_branch_graph(), graph, one);
  REQUIRE_FALSE(op_graph.has_value());
  CHECK(op_graph.error().reason == InfeasibleReason::kModel);
  CHECK(op_graph.error().field == "autocast_weights");
}

TEST_CASE("autocast: autocast_weights is read, written back, and refused where it cannot apply") {
  auto read = [](const char* text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  const Strategy s = read(R"({"global_batch": 8, "dtype": "fp16", "autocast_weights": true})");
  CHECK(s.autocast_weights);
  CHECK_FALSE(s.master_weights_fp32);
  CHECK(to_json(s).at("autocast_weights") == true);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK_FALSE(to_json(Strategy{}).contains("autocast_weights"));
  const char* fp8 = R"({"global_batch": 8, "dtype": "fp8", "autocast_weights": true})";
  CHECK_THROWS_WITH_AS(read(fp8),
                       doctest::Contains("s.json: strategy.autocast_weights: true needs a 16-bit "
                                         "dtype (\"bf16\" or \"fp16\"): torch.autocast casts the "
                                         "fp32 parameters to it"),
                       InputError);
  const char* fp32 = R"({"global_batch": 8, "dtype": "fp32", "autocast_weights": true})";
  CHECK_THROWS_WITH_AS(read(fp32),
                       doctest::Contains("strategy.autocast_weights: true needs a 16-bit dtype"),
                       InputError);
  const char* master =
      R"({"global_batch": 8, "autocast_weights": true, "master_weights_fp32": true})";
  CHECK_THROWS_WITH_AS(read(master),
                       doctest::Contains("s.json: strategy.master_weights_fp32: true conflicts "
                                         "with autocast_weights"),
                       InputError);
}
