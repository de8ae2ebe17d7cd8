// Strategy::fp8_fsdp_all_gather: torchao's float8 all-gather for FSDP (TorchTitan's
// --float8.enable_fsdp_float8_all_gather). Each rank casts its shard of the linear weights to
// FP8 before the ZeRO-3 all-gather, which moves and leaves 1 B a parameter; the GEMMs cast no
// weight. Worked on a small GPT (hidden 1024, 2 layers) on 8 H100s.
#include <doctest/doctest.h>

#include <vector>

#include "sim/core/json_reader.h"
#include "sim/cost/memory_model.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

Strategy fsdp(DType dtype, bool fp8_gather) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1;
  s.zero_stage = 3;
  s.dtype = dtype;
  s.fp8_fsdp_all_gather = fp8_gather;
  return s;
}

Plan lowered(const Strategy& s, int layers = 2) {
  return testing::lower_on("dgx_h100", testing::small_gpt(layers), s, 8);
}

// Bytes of the stage's ZeRO-3 all-gathers in one forward step.
double forward_gather_bytes(const Plan& p, int vs = 0) {
  double bytes = 0;
  for (const IterOp& op : p.iteration.stages[vs].forward.ops) {
    if (op.kind == IterOpKind::kZeroGather) bytes += op.bytes;
  }
  return bytes;
}

}  // namespace

TEST_CASE("fp8 FSDP all-gather: read and written back, in force only for FP8 tensorwise ZeRO-3 over several ranks") {
  const Json j = parse_json_text(R"({"global_batch": 8, "dtype": "fp8", "zero_stage": 3,
                                     "fp8_fsdp_all_gather": true})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fp8_fsdp_all_gather);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(lowered(fsdp(DType::kFp8, true)).fp8_weight_gather);
  CHECK_FALSE(lowered(fsdp(DType::kFp8, false)).fp8_weight_gather);
  CHECK_FALSE(lowered(fsdp(DType::kBf16, true)).fp8_weight_gather);  // nothing to cast
  Strategy rowwise = fsdp(DType::kFp8, true);
  rowwise.fp8_scaling = Fp8Scaling::kRowwise;  // torchao gathers tensorwise casts only
  CHECK_FALSE(lowered(rowwise).fp8_weight_gather);
  Strategy zero1 = fsdp(DType::kFp8, true);
  zero1.zero_stage = 1;  // no per-use gather of the weights
  CHECK_FALSE(lowered(zero1).fp8_weight_gather);
}

TEST_CASE("fp8 FSDP all-gather: the linear layers' weights travel at 1 B, the embedding and head at 2 B") {
  const Plan plain = lowered(fsdp(DType::kFp8, false));
  const Plan fp8 = lowered(fsdp(DType::kFp8, true));
  // One stage holds the embedding, both layers and the head. The layers' parameters (their
  // norms' gains included: a rounding error) are the linear ones.
  const double layers = 2 * plain.layer->params;
  const double edges = plain.embedding->params + plain.head->params;
  CHECK(plain.stages[0].params == doctest::Approx(layers + edges));
  CHECK(forward_gather_bytes(plain) == doctest::Approx(2 * (layers + edges)));
  CHECK(forward_gather_bytes(fp8) == doctest::Approx(2 * edges + 1 * layers));
  // The backward re-gathers the layers only (FSDP's root, embedding and head, stays gathered).
  double back = 0;
  for (const IterOp& op : fp8.iteration.stages[0].backward.ops) {
    if (op.kind == IterOpKind::kZeroGather) back += op.bytes;
  }
  CHECK(back == doctest::Approx(1 * layers));
}

TEST_CASE("fp8 FSDP all-gather: the GEMMs find their weights cast, and the gathered layers are held at 1 B") {
  const Plan plain = lowered(fsdp(DType::kFp8, false));
  const Plan fp8 = lowered(fsdp(DType::kFp8, true));
  int precast = 0;
  for (const Kernel& k : fp8.layer->forward) {
    if (k.cls == OpClass::kMatmul && k.fp8_eligible) {
      CHECK(k.fp8_weight_precast);
      ++precast;
    }
  }
  CHECK(precast == 4);  // qkv, attention output, fc1, fc2
  for (const Kernel& k : plain.layer->forward) CHECK_FALSE(k.fp8_weight_precast);
  // ZeRO-3 holds two layers gathered (the one running and the one prefetched): 2 x P x 2 B
  // in bf16, 2 x P x 1 B in FP8.
  const std::vector<int> in_flight(1, 1);
  const double saved = rank_memory(plain, in_flight)[0].weights_B - rank_memory(fp8, in_flight)[0].weights_B;
  CHECK(saved == doctest::Approx(2 * plain.layer->params));
}

TEST_CASE("fp8 FSDP all-gather: stages kept gathered (pipeline) hold their linear weights at 1 B and gather them once so") {
  Strategy s = fsdp(DType::kFp8, false);
  s.pp = 2, s.global_batch = 16;
  const Plan plain = testing::lower_on("dgx_h100", testing::small_gpt(4), s, 8);
  s.fp8_fsdp_all_gather = true;
  const Plan fp8 = testing::lower_on("dgx_h100", testing::small_gpt(4), s, 8);
  REQUIRE(fp8.zero3_resident);
  REQUIRE(fp8.fp8_weight_gather);
  // Rank 0: the embedding (16-bit) and two layers (linear): the held copy loses a byte per
  // linear parameter.
  const std::vector<int> in_flight(2, 1);
  const double linear = 2 * plain.layer->params;
  CHECK(rank_memory(plain, in_flight)[0].weights_B - rank_memory(fp8, in_flight)[0].weights_B ==
        doctest::Approx(linear));
  // Its once-per-iteration gather: the same byte less per linear parameter.
  auto gather = [](const Plan& p) {
    for (const IterOp& op : p.iteration.tail[0]) {
      if (op.kind == IterOpKind::kParameterGather) return op.bytes;
    }
    return 0.0;
  };
  CHECK(gather(plain) - gather(fp8) == doctest::Approx(linear));
}

}  // namespace stratasim

namespace stratasim {

TEST_CASE("ZeRO-3 holds FSDP's root unit (embedding, final norm, head) gathered beside two layers") {
  // 8 ranks: every parameter's 16-bit copy sharded 8 ways, plus the gathered running and
  // prefetched layers (2 x P_layer x 2 B) and the root gathered from the forward through the
  // backward ((P_embedding + P_head) x 2 B).
  const Plan p = lowered(fsdp(DType::kBf16, false));
  const std::vector<int> in_flight(1, 1);
  const double all = p.stages[0].params;
  const double edges = p.embedding->params + p.head->params;
  CHECK(rank_memory(p, in_flight)[0].weights_B ==
        doctest::Approx(all * 2 / 8 + 2 * p.layer->params * 2 + edges * 2));
  // ZeRO-1 gathers nothing: the 16-bit weights whole.
  Strategy zero1 = fsdp(DType::kBf16, false);
  zero1.zero_stage = 1;
  const Plan z1 = lowered(zero1);
  CHECK(rank_memory(z1, in_flight)[0].weights_B == doctest::Approx(all * 2));
}

TEST_CASE("fp8 FSDP all-gather: each rank casts its shard of the linear weights before each gather") {
  // The 2-layer model on 8 ranks: a layer's P parameters, its shard P / 8 read as fp32 (4 B)
  // and written as FP8 (1 B): 5 P / 8 bytes before the forward's gather and again before the
  // backward's re-gather; parameter traffic, never recomputed.
  const Plan fp8 = lowered(fsdp(DType::kFp8, true));
  const Block& b = *fp8.layer;
  auto casts = [&b](const std::vector<Kernel>& ks) {
    std::vector<const Kernel*> out;
    for (const Kernel& k : ks) {
      if (b.graph.ops[k.first_op].name == "fp8_weight_shard_cast") out.push_back(&k);
    }
    return out;
  };
  const auto fwd = casts(b.forward), back = casts(b.backward);
  REQUIRE(fwd.size() == 1);
  REQUIRE(back.size() == 1);
  CHECK(fwd[0]->bytes == doctest::Approx(5 * b.params / 8));
  CHECK(back[0]->bytes == doctest::Approx(5 * b.params / 8));
  CHECK(fwd[0]->parameter_traffic);
  CHECK(casts(lowered(fsdp(DType::kFp8, false)).layer->forward).empty());
}

TEST_CASE("fp8 FSDP all-gather: routed experts are not Float8Linear modules") {
  // The count the gathers and the held copies use leaves the experts at 16 bit, and ZeRO-3's
  // gathers move them so (over the expert-data group) beside the FP8 dense linears.
  ModelSpec m = testing::small_gpt(2);
  m.transformer.moe = MoeSpec{.experts = 4, .top_k = 1, .expert_ffn_hidden = 512};
  Strategy s = fsdp(DType::kFp8, true);
  s.zero_stage = 1;
  const Plan p = testing::lower_on("dgx_h100", m, s, 8);
  const VirtualStage& st = p.stages[0];
  REQUIRE(st.expert_params > 0);
  const double edges = p.embedding->params + p.head->params;
  CHECK(p.stage_linear_params(st) == doctest::Approx(st.params - edges));
  CHECK(p.stage_fp8_gathered_params(st) == doctest::Approx(st.params - edges - st.expert_params));
  s.zero_stage = 3;
  const Plan z = testing::lower_on("dgx_h100", m, s, 8);
  REQUIRE(z.edp == 8);  // ep 1: all 4 experts on every rank, sharded over the 8
  REQUIRE(z.fp8_weight_gather);
  const VirtualStage& zs = z.stages[0];
  // 2 layers of 4 GeLU experts, each 2 x 1024 x 512 weights and 512 + 1024 biases: at 2 B.
  const double experts = 2.0 * 4 * (2 * 1024 * 512 + 512 + 1024);
  CHECK(zs.expert_params == doctest::Approx(experts));
  double expert_bytes = 0, dense_bytes = 0;
  for (const IterOp& op : z.iteration.stages[0].forward.ops) {
    if (op.kind != IterOpKind::kZeroGather) continue;
    (op.group == GroupKind::kExpertData ? expert_bytes : dense_bytes) += op.bytes;
  }
  CHECK(expert_bytes == doctest::Approx(2 * experts));
  // The dense part: its linear layers at 1 B, the embedding, the head and the norms at 2 B.
  const double fp8 = z.stage_fp8_gathered_params(zs);
  CHECK(dense_bytes == doctest::Approx(fp8 + 2 * (zs.params - zs.expert_params - fp8)));
}

}  // namespace stratasim
