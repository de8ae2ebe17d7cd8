// Strategy::fp8_param_gather: Transformer Engine's FP8 parameters (Megatron-Core's
// --fp8-param-gather, set by Megatron-Bridge's FP8 current-scaling precision config). The
// linear layers' weights live as FP8 tensors: ZeRO's parameter all-gathers (the distributed
// optimizer's after the step, Megatron-FSDP's per micro-batch) move 1 B a linear parameter;
// the fp32 master shard is quantized once per step and the gathered weights transposed once;
// the rowwise and transposed copies together hold what 16-bit weights held. Worked on a small
// GPT (hidden 1024, 2 layers) on 8 H100s.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "sim/cost/memory_model.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

Strategy te_fp8(int zero, bool fp8_params, Fp8Scaling scaling = Fp8Scaling::kCurrent) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1;
  s.zero_stage = zero;
  s.dtype = DType::kFp8;
  s.fp8_scaling = scaling;
  s.fp8_param_gather = fp8_params;
  return s;
}

Plan lowered(const Strategy& s, const ModelSpec& m = testing::small_gpt(2)) {
  return testing::lower_on("dgx_h100", m, s, 8);
}

double stage_gather_bytes(const std::vector<IterOp>& ops, GroupKind group) {
  double bytes = 0;
  for (const IterOp& op : ops) {
    if (op.kind == IterOpKind::kZeroGather && op.group == group) bytes += op.bytes;
  }
  return bytes;
}

double tail_bytes(const Plan& p, IterOpKind kind, GroupKind group) {
  double bytes = 0;
  for (const IterOp& op : p.iteration.tail[0]) {
    if (op.kind == kind && (kind == IterOpKind::kFp8WeightCast || op.group == group)) {
      bytes += op.bytes;
    }
  }
  return bytes;
}

bool has_shard_cast(const Plan& p) {
  for (const auto* ks : {&p.layer->forward, &p.layer->backward}) {
    for (const Kernel& k : *ks) {
      if (p.layer->graph.ops[k.first_op].name == "fp8_weight_shard_cast") return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("fp8 parameters: read and written back, in force for Transformer Engine's FP8 recipes under ZeRO") {
  const Json j = parse_json_text(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "current",
                                     "zero_stage": 1, "fp8_param_gather": true})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fp8_param_gather);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK_FALSE(to_json(Strategy{}).contains("fp8_param_gather"));
  const std::string what = testing::input_error_message([] {
    read_strategy(JsonNode(parse_json_text(R"({"global_batch": 8, "fp8_param_gather": "yes"})", "s.json"),
                           "s.json", "strategy"));
  });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.fp8_param_gather") != std::string::npos);
  CHECK(what.find("must be true or false") != std::string::npos);

  CHECK(lowered(te_fp8(3, true)).fp8_params);
  CHECK(lowered(te_fp8(1, true, Fp8Scaling::kDelayed)).fp8_params);
  CHECK(lowered(te_fp8(1, true)).fp8_weight_gather);  // the distributed optimizer's gather too
  CHECK_FALSE(lowered(te_fp8(1, false)).fp8_weight_gather);
  CHECK_FALSE(lowered(te_fp8(0, true)).fp8_params);  // DDP gathers no parameters
  // torchao's tensorwise recipe has its own float8 gather (fp8_fsdp_all_gather).
  CHECK_FALSE(lowered(te_fp8(3, true, Fp8Scaling::kTensorwise)).fp8_params);
  Strategy bf16 = te_fp8(3, true);
  bf16.dtype = DType::kBf16;
  CHECK_FALSE(lowered(bf16).fp8_params);
}

TEST_CASE("fp8 parameters under Megatron-FSDP: the layers gathered at 1 B, no cast per gather, held as 16-bit weights") {
  const Plan plain = lowered(te_fp8(3, false));
  const Plan fp8 = lowered(te_fp8(3, true));
  const double layers = 2 * plain.layer->params;
  const double edges = plain.embedding->params + plain.head->params;
  REQUIRE(plain.stages[0].params == doctest::Approx(layers + edges));
  const GroupKind g = plain.zero_group();
  // Forward: FSDP's root (embedding, head: 16-bit) and both layers; backward: the layers again.
  CHECK(stage_gather_bytes(plain.iteration.stages[0].forward.ops, g) ==
        doctest::Approx(2 * (layers + edges)));
  CHECK(stage_gather_bytes(fp8.iteration.stages[0].forward.ops, g) ==
        doctest::Approx(2 * edges + 1 * layers));
  CHECK(stage_gather_bytes(fp8.iteration.stages[0].backward.ops, g) == doctest::Approx(1 * layers));
  // The quantization happens at the step, not before each gather (torchao's shard cast).
  CHECK_FALSE(has_shard_cast(fp8));
  // Rowwise plus transposed FP8 copies: 1 + 1 B a parameter, what bf16 weights held.
  const std::vector<int> in_flight(1, 1);
  CHECK(rank_memory(fp8, in_flight)[0].weights_B ==
        doctest::Approx(rank_memory(plain, in_flight)[0].weights_B));
}

TEST_CASE("fp8 parameters under the distributed optimizer: the step's gather at 1 B, the shard quantized, the weights transposed once") {
  const Plan plain = lowered(te_fp8(1, false));
  const Plan fp8 = lowered(te_fp8(1, true));
  const double linear = 2 * plain.layer->params;  // the layers' weights (norm gains: rounding)
  const double edges = plain.embedding->params + plain.head->params;
  const GroupKind g = plain.zero_group();
  CHECK(tail_bytes(plain, IterOpKind::kParameterGather, g) == doctest::Approx(2 * (linear + edges)));
  CHECK(tail_bytes(fp8, IterOpKind::kParameterGather, g) == doctest::Approx(2 * edges + linear));
  // Current scaling without FP8 parameters casts the whole 16-bit weights each iteration: an
  // amax pass and a cast-transpose, 2 + 2 + 1 + 1 = 6 B a parameter. With them: the master
  // shard (P / 8) read for its amax and again for the cast (4 + 4 B) and written (1 B), and
  // the gathered FP8 weight transposed (read 1 B, write 1 B).
  CHECK(tail_bytes(plain, IterOpKind::kFp8WeightCast, g) == doctest::Approx(6 * linear));
  CHECK(tail_bytes(fp8, IterOpKind::kFp8WeightCast, g) == doctest::Approx(2 * linear + 9 * linear / 8));
  // Delayed scaling has its scale already: read 4 B, write 1 B on the shard.
  const Plan delayed = lowered(te_fp8(1, true, Fp8Scaling::kDelayed));
  CHECK(tail_bytes(delayed, IterOpKind::kFp8WeightCast, g) == doctest::Approx(2 * linear + 5 * linear / 8));
  const std::vector<int> in_flight(1, 1);
  CHECK(rank_memory(fp8, in_flight)[0].weights_B ==
        doctest::Approx(rank_memory(plain, in_flight)[0].weights_B));
}

TEST_CASE("fp8 parameters: the routed experts (TE GroupedLinear) are gathered at 1 B over the expert-data group") {
  ModelSpec m = testing::small_gpt(2);
  m.transformer.moe = MoeSpec{.experts = 4, .top_k = 1, .expert_ffn_hidden = 512};
  const Plan plain = lowered(te_fp8(1, false), m);
  const Plan fp8 = lowered(te_fp8(1, true), m);
  REQUIRE(fp8.edp == 8);  // ep 1: every rank holds the 4 experts, sharded over the 8
  // 2 layers of 4 GeLU experts, each 2 x 1024 x 512 weights and 512 + 1024 biases.
  const double experts = 2.0 * 4 * (2 * 1024 * 512 + 512 + 1024);
  REQUIRE(fp8.stages[0].expert_params == doctest::Approx(experts));
  CHECK(tail_bytes(plain, IterOpKind::kParameterGather, GroupKind::kExpertData) == doctest::Approx(2 * experts));
  CHECK(tail_bytes(fp8, IterOpKind::kParameterGather, GroupKind::kExpertData) == doctest::Approx(experts));
  // The shard quantized at the step: the dense linears' P / 8 and the experts' E / edp.
  const double linear = fp8.stage_linear_params(fp8.stages[0]);
  CHECK(tail_bytes(fp8, IterOpKind::kFp8WeightCast, GroupKind::kData) ==
        doctest::Approx(2 * linear + 9 * ((linear - experts) / 8 + experts / 8)));
  // Megatron-FSDP gathers them per micro-batch at 1 B too.
  const Plan z3 = lowered(te_fp8(3, true), m);
  CHECK(stage_gather_bytes(z3.iteration.stages[0].forward.ops, GroupKind::kExpertData) ==
        doctest::Approx(experts));
}

}  // namespace stratasim
