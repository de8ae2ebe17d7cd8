// The optimizer's states per parameter: the fp32 master copy kept whole or as the low 16 bits
// beside bf16 weights (Strategy::master_param_remainders, Apex's DistributedFusedAdam
// store_param_remainders, which NeMo 1.x sets for bf16 O2 training).
#include <doctest/doctest.h>

#include <string>

#include "sim/core/json_reader.h"
#include "sim/cost/memory_model.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Strategy read_text(const std::string& text) {
  return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
}

double step_bytes(const Plan& p) {
  for (const IterOp& op : p.iteration.tail[0]) {
    if (op.kind == IterOpKind::kOptimizerStep) return op.bytes;
  }
  return 0.0;
}

}  // namespace

TEST_CASE("master_param_remainders: the fp32 master kept as 16-bit remainders holds 2 B, not 4") {
  // A small GPT in bf16 with the distributed optimizer (ZeRO-1) over 8 A100. Adam's states a
  // parameter: master 4 + moments 4 + 4 = 12 B; with the master's low 16 bits only (the bf16
  // weight holds the high ones): 2 + 4 + 4 = 10 B, 10/12 of the memory, sharded alike.
  Strategy s;
  s.global_batch = 8, s.dtype = DType::kBf16, s.zero_stage = 1;
  const Plan whole = testing::lower_on_dgx_a100(testing::small_gpt(4), s, 8);
  s.master_param_remainders = true;
  const Plan remainders = testing::lower_on_dgx_a100(testing::small_gpt(4), s, 8);
  CHECK(whole.optimizer_bytes_per_param == 12);
  CHECK(remainders.optimizer_bytes_per_param == 10);
  const MemoryBreakdown a = rank_memory(whole, {1})[0], b = rank_memory(remainders, {1})[0];
  CHECK(b.optimizer_B == doctest::Approx(a.optimizer_B * 10 / 12));
  CHECK(b.weights_B == a.weights_B);
  CHECK(b.gradients_B == a.gradients_B);
  // The step reads and writes the states (2 x 12 = 24 B, or 2 x 10 = 20), reads the 2 B
  // gradient, and writes the 2 B weight; from remainders it reads the weight too, to rebuild
  // the fp32 value: 24 + 2 + 2 = 28 against 20 + 2 + 2 x 2 = 26 B a parameter.
  CHECK(step_bytes(remainders) == doctest::Approx(step_bytes(whole) * 26 / 28));

  // Read, written back, left out of the JSON when off, and refused where there is no bf16
  // weight beside an fp32 master to hold the high bits.
  const Strategy r = read_text(R"({"global_batch": 8, "dtype": "bf16", "master_param_remainders": true})");
  CHECK(r.master_param_remainders);
  CHECK(read_strategy(JsonNode(to_json(r), "rt", "strategy")) == r);
  CHECK_FALSE(to_json(read_text(R"({"global_batch": 8, "dtype": "bf16"})")).contains("master_param_remainders"));
  CHECK(read_text(R"({"global_batch": 8, "dtype": "fp8", "master_param_remainders": true})").master_param_remainders);
  for (const char* bad : {R"({"global_batch": 8, "dtype": "fp16", "master_param_remainders": true})",
                          R"({"global_batch": 8, "dtype": "fp32", "master_param_remainders": true})",
                          R"({"global_batch": 8, "dtype": "bf16", "master_weights_fp32": false, "master_param_remainders": true})"}) {
    const std::string what = testing::input_error_message([&] { read_text(bad); });
    CAPTURE(what);
    CHECK(what.find("s.json: strategy.master_param_remainders: true") != std::string::npos);
    CHECK(what.find("needs bf16 parameters with an fp32 master copy") != std::string::npos);
  }
}
