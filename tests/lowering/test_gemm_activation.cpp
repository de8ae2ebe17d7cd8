// FusionPlan::gemm_activation: a non-gated MLP's bias and GeLU in its up projection GEMM's
// cuBLASLt epilogue (flash-attn's FusedDenseGeluDense, heuristic 0). Worked by hand on a small
// GPT: hidden 1024, ffn 4096, micro-batch 1 x seq 512 tokens, bf16, tp 1.
//   fc1 input  512 x 1024 x 2 B = 1,048,576 B      fc1 weight 1024 x 4096 x 2 B = 8,388,608 B
//   fc1 output 512 x 4096 x 2 B = 4,194,304 B      fc1 bias   4096 x 2 B       = 8,192 B
#include <doctest/doctest.h>

#include <string>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

Strategy fused(bool in_gemm) {
  Strategy s = testing::all_fused();
  s.fusion.gemm_activation = in_gemm;
  return s;
}

bool has_kernel_named(const Plan& p, const std::vector<Kernel>& ks, const std::string& name) {
  for (const Kernel& k : ks) {
    if (p.layer->graph.ops[k.first_op].name == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("gemm activation: the bias and GeLU join the up projection's kernel") {
  const ModelSpec gpt = testing::small_gpt(2);
  const Plan with = testing::lower_on_dgx_a100(gpt, fused(true), 8);
  const Plan without = testing::lower_on_dgx_a100(gpt, fused(false), 8);
  // Apart: fc1 reads its input and weight and writes its output (13,631,488 B); the bias + GeLU
  // kernel follows. In the epilogue: one kernel of fc1, fc1_bias and gelu writing the GeLU's
  // output and the pre-activation the backward reads, and reading the bias:
  // 1,048,576 + 8,388,608 + 8,192 + 4,194,304 + 4,194,304 = 17,833,984 B.
  const Kernel& apart = kernel(without.layer->forward, *without.layer, "fc1");
  const Kernel& joined = kernel(with.layer->forward, *with.layer, "fc1");
  CHECK(apart.bytes == doctest::Approx(13631488));
  CHECK(apart.fused_ops == 1);
  CHECK(joined.bytes == doctest::Approx(17833984));
  CHECK(joined.fused_ops == 3);
  CHECK(joined.cls == OpClass::kMatmul);
  // 2 x 512 x 4096 x 1024 FLOP of GEMM; the epilogue's 1 + 8 FLOP an output element.
  CHECK(joined.matmul_flops == doctest::Approx(2.0 * 512 * 4096 * 1024));
  CHECK(joined.other_flops == doctest::Approx(9.0 * 512 * 4096));
  CHECK(has_kernel_named(without, without.layer->forward, "fc1_bias"));
  CHECK_FALSE(has_kernel_named(with, with.layer->forward, "fc1_bias"));
  CHECK_FALSE(has_kernel_named(with, with.layer->backward, "fc1_bias"));
  CHECK(with.layer->forward.size() + 1 == without.layer->forward.size());
  // Nothing else moves: what the layer saves for the backward is the same tensors.
  CHECK(with.layer->saved_activation_B == doctest::Approx(without.layer->saved_activation_B));
}

TEST_CASE("gemm activation: a gated MLP is left as it is") {
  ModelSpec llama = testing::small_gpt(2);
  llama.transformer.activation = Activation::kSwiGLU;
  llama.transformer.linear_bias = false;
  const Plan with = testing::lower_on_dgx_a100(llama, fused(true), 8);
  const Plan without = testing::lower_on_dgx_a100(llama, fused(false), 8);
  REQUIRE(with.layer->forward.size() == without.layer->forward.size());
  CHECK(kernel(with.layer->forward, *with.layer, "fc1").bytes ==
        doctest::Approx(kernel(without.layer->forward, *without.layer, "fc1").bytes));
  CHECK(has_kernel_named(with, with.layer->forward, "swiglu"));
}

TEST_CASE("gemm activation: read from and written to a scenario's fusion object") {
  const Json j = parse_json_text(R"({"global_batch": 8, "fusion": {"preset": "all", "gemm_activation": true}})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fusion.gemm_activation);
  CHECK(s.fusion.elementwise_epilogue);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(to_json(Strategy{}).dump().find("gemm_activation") == std::string::npos);
  CHECK(describe_fusion(s.fusion).find("gemm+bias+act") != std::string::npos);
}

}  // namespace stratasim
