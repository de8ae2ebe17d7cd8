// FusionPlan::separate_linears: q, k, v (and a gated MLP's gate and up) as separate nn.Linear
// modules on one normed input, as TorchTitan's Llama runs them; autograd sums their input
// gradients, charged on the norm's backward. Worked by hand on a small GPT: hidden 1024,
// micro-batch 1 x seq 512, so one gradient of the normed input is 512 x 1024 x 2 B =
// 1,048,576 B.
#include <doctest/doctest.h>

#include <string>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

constexpr double kGrad = 512.0 * 1024 * 2;

ModelSpec llama(bool swiglu = true) {
  ModelSpec m = testing::small_gpt(2);
  m.transformer.norm = NormKind::kRMSNorm;
  if (swiglu) m.transformer.activation = Activation::kSwiGLU;
  return m;
}

Strategy titan(bool separate, bool compiled, int tp) {
  Strategy s;
  s.tp = tp, s.sequence_parallel = tp > 1;
  s.global_batch = 8, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);
  s.fusion.compiled = compiled;
  s.fusion.separate_linears = separate;
  return s;
}

struct Extra {
  double bytes;
  int launches;
};
// What the flag adds to a norm's backward kernel.
Extra added(const char* norm, bool compiled, int tp, bool swiglu = true) {
  const Plan with = testing::lower_on_dgx_a100(llama(swiglu), titan(true, compiled, tp), 8);
  const Plan without = testing::lower_on_dgx_a100(llama(swiglu), titan(false, compiled, tp), 8);
  const Kernel& a = kernel(with.layer->backward, *with.layer, norm);
  const Kernel& b = kernel(without.layer->backward, *without.layer, norm);
  CHECK(kernel(with.layer->forward, *with.layer, norm).bytes ==
        doctest::Approx(kernel(without.layer->forward, *without.layer, norm).bytes));
  return {a.bytes - b.bytes, a.launches - b.launches};
}

}  // namespace

TEST_CASE("separate linears: eager autograd adds k - 1 gradients in place, 3 n h e each") {
  // Attention: wq, wk, wv, two adds: 2 x 3 x 1,048,576 = 6,291,456 B, two kernels. The gated
  // MLP: w1, w3, one add: 3,145,728 B, one kernel.
  Extra e = added("norm1", false, 1);
  CHECK(e.bytes == doctest::Approx(6291456));
  CHECK(e.launches == 2);
  e = added("norm2", false, 1);
  CHECK(e.bytes == doctest::Approx(3 * kGrad));
  CHECK(e.launches == 1);
  // A plain GELU MLP has one up projection: nothing to sum.
  e = added("norm2", false, 1, false);
  CHECK(e.bytes == 0);
  CHECK(e.launches == 0);
}

TEST_CASE("separate linears: compiled, the sum joins the norm's backward, or runs once beside TP") {
  // tp 1: Inductor reads the k gradients in the norm's backward where it read one: (k - 1) n h
  // e more, no kernel: 2,097,152 B (attention), 1,048,576 B (MLP).
  Extra e = added("norm1", true, 1);
  CHECK(e.bytes == doctest::Approx(2 * kGrad));
  CHECK(e.launches == 0);
  CHECK(added("norm2", true, 1).bytes == doctest::Approx(kGrad));
  // tp 2 with sequence parallelism: the gradients are of the gathered input (all 512 tokens),
  // and the reduce-scatter stands between them and the norm: one kernel reads k and writes
  // one: 4 x 1,048,576 (attention), 3 x 1,048,576 (MLP).
  e = added("norm1", true, 2);
  CHECK(e.bytes == doctest::Approx(4 * kGrad));
  CHECK(e.launches == 1);
  e = added("norm2", true, 2);
  CHECK(e.bytes == doctest::Approx(3 * kGrad));
  CHECK(e.launches == 1);
}

TEST_CASE("separate linears: a fusion key, read and written back") {
  const Json j = parse_json_text(R"({"global_batch": 8, "fusion": {"separate_linears": true}})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fusion.separate_linears);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(to_json(Strategy{}).dump().find("separate_linears") == std::string::npos);
}

}  // namespace stratasim
