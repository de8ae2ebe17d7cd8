// The even pipeline split with the embedding and the loss counted as layers (Megatron-Core's
// account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split; the Llama 3
// Herd's layout), worked by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/json_reader.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Strategy split(int pp, int v, bool embedding, bool loss) {
  Strategy s;
  s.pp = pp, s.interleave = v, s.global_batch = 2 * pp, s.micro_batch = 1;
  s.schedule = v > 1 ? ScheduleKind::kInterleaved1F1B : ScheduleKind::k1F1B;
  s.embedding_as_layer = embedding, s.loss_as_layer = loss;
  fusion_preset("megatron", &s.fusion);
  return s;
}

std::vector<int> layers_of(const Plan& p) {
  std::vector<int> out;
  for (const VirtualStage& st : p.stages) out.push_back(st.layers);
  return out;
}

}  // namespace

TEST_CASE("pipeline split: the embedding and the loss count as a layer each") {
  // Megatron-Bridge's own example: 94 layers on pp 16 with both: (94 + 2) / 16 = 6 units a
  // stage, the first and last one layer short: 5, 6 x 14, 5.
  const Plan p = testing::lower_on_dgx_a100(testing::small_gpt(94), split(16, 1, true, true), 16);
  std::vector<int> expected(16, 6);
  expected.front() = expected.back() = 5;
  CHECK(layers_of(p) == expected);
  // The embedding only: (94 + 1) / 16 = 5 rest 15, the first 15 stages one more: 6 - 1 = 5 on
  // the first, 6 on the next 14, 5 on the last.
  Strategy only = split(16, 1, true, false);
  only.uneven_stages = true;
  const Plan e = testing::lower_on_dgx_a100(testing::small_gpt(94), only, 16);
  expected.assign(16, 6);
  expected.front() = 5, expected.back() = 5;
  CHECK(layers_of(e) == expected);
  // The Llama 3 Herd's layout: 126 layers over pp 16 x v 8 = 128 virtual stages, "the first
  // model chunk on the first stage has only the embedding, and the last model chunk on the last
  // stage has only output projection and loss calculation".
  const Plan herd = testing::lower_on_dgx_a100(testing::small_gpt(126), split(16, 8, true, true), 16);
  REQUIRE(herd.stages.size() == 128);
  CHECK(herd.stages.front().layers == 0);
  CHECK(herd.stages.front().has_embedding);
  CHECK(herd.stages.back().layers == 0);
  CHECK(herd.stages.back().has_head);
  int total = 0;
  for (size_t i = 1; i + 1 < herd.stages.size(); ++i) CHECK(herd.stages[i].layers == 1);
  for (const VirtualStage& st : herd.stages) total += st.layers;
  CHECK(total == 126);
  // A single stage holds everything either way.
  CHECK(layers_of(testing::lower_on_dgx_a100(testing::small_gpt(8), split(1, 1, true, true), 1)) ==
        std::vector<int>{8});
}

TEST_CASE("pipeline split: stages with no layer run in both engines") {
  // 2 layers on pp 4 with both counted: 4 units, one a stage: embedding, layer, layer, head.
  const Plan p = testing::lower_on_dgx_a100(testing::small_gpt(2), split(4, 1, true, true), 4);
  CHECK(layers_of(p) == std::vector<int>{0, 1, 1, 0});
  const Prediction a = predict_analytical(p);
  CHECK(a.iteration_s > 0);
  CHECK(a.peak_memory_B > 0);
}

TEST_CASE("pipeline split: counted edges are read, written back and checked with the rule") {
  const Strategy s = read_strategy(JsonNode(parse_json_text(
      R"({"global_batch": 8, "pp": 2, "account_for_embedding_in_pipeline_split": true,
          "account_for_loss_in_pipeline_split": true})", "s.json"), "s.json", "strategy"));
  CHECK(s.embedding_as_layer);
  CHECK(s.loss_as_layer);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  auto refused = [](const Strategy& st, int layers, int devices) {
    HardwareModel hw = catalog_cluster("dgx_a100");
    hw.num_devices = devices;
    const Expected<Plan> p = lower(testing::small_gpt(layers), st, hw);
    REQUIRE_FALSE(p.has_value());
    return p.error().detail;
  };
  // 8 + 2 units on 4 stages: not even.
  CHECK(refused(split(4, 1, true, true), 8, 4) ==
        "pp=4 does not divide layers=8 plus 2 counted edge(s) (set uneven_stages to allow unequal stages)");
  Strategy both = split(4, 1, true, false);
  both.first_stage_layers = 1;
  CHECK(refused(both, 7, 4) ==
        "account_for_embedding/loss_in_pipeline_split shape the even split; they cannot be combined with "
        "stage_layers or first_stage_layers/last_stage_layers");
  CHECK(refused(split(8, 1, true, true), 4, 8) == "pp*interleave=8 exceeds layers=4 plus 2 counted edge(s)");
}
