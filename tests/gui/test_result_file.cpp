// Result files read back: a Prediction survives to_json -> read_prediction, and each kind of
// result file is told apart by its content.
#include <doctest/doctest.h>

#include "gui/result_file.h"
#include "sim/compare/compare.h"
#include "sim/core/error.h"
#include "sim/prediction/prediction_json.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

TEST_CASE("result file: a prediction read back equals the one written") {
  const Scenario sc = load_scenario(testing::scenario_path(testing::kLlama));
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  const Prediction& p = rows.front().prediction;
  const Json j{{"scenario", sc.name}, {"strategy", to_json(rows.front().strategy)},
               {"prediction", to_json(p)}};
  REQUIRE(is_result_json(j));
  const ResultFile r = read_result_json(j, "eval.json");
  CHECK(r.kind == ResultKind::kPrediction);
  REQUIRE(r.entries.size() == 1);
  const Prediction& q = r.entries[0].prediction;
  CHECK(r.entries[0].strategy == rows.front().strategy);
  CHECK(q.iteration_s == p.iteration_s);
  CHECK(q.bubble_s == p.bubble_s);
  CHECK(q.mfu == p.mfu);
  REQUIRE(q.rank_memory.size() == p.rank_memory.size());
  for (size_t i = 0; i < p.rank_memory.size(); ++i) CHECK(q.rank_memory[i].total() == p.rank_memory[i].total());
  REQUIRE(q.comms.size() == p.comms.size());
  for (size_t i = 0; i < p.comms.size(); ++i) {
    CHECK(q.comms[i].category == p.comms[i].category);
    CHECK(q.comms[i].exposed_s == p.comms[i].exposed_s);
  }
  REQUIRE(q.timeline.size() == p.timeline.size());
  CHECK(q.timeline.back().kind == p.timeline.back().kind);
  CHECK(q.timeline.back().end_s == p.timeline.back().end_s);
}

TEST_CASE("result file: compare output, scenarios and missing fields") {
  const Scenario sc = load_scenario(testing::scenario_path("tiny_2gpu_1layer.json"));
  const Json cmp = Json::array({Json{{"scenario", sc.name}, {"file", sc.file},
                                     {"variants", variants_json(evaluate_variants(sc))}}});
  const ResultFile r = read_result_json(cmp, "cmp.json");
  CHECK(r.kind == ResultKind::kVariants);
  CHECK(r.scenario == sc.name);
  CHECK(r.entries.size() == sc.variants.size());
  CHECK_FALSE(is_result_json(load_json_file(testing::scenario_path("tiny_2gpu_1layer.json"))));
  Json broken = cmp;
  broken[0]["variants"][0]["prediction"].erase("iteration_s");
  CHECK_THROWS_WITH_AS(read_result_json(broken, "cmp.json"),
                       doctest::Contains("cmp.json: [0].variants[0].prediction.iteration_s"),
                       InputError);
}

}  // namespace
}  // namespace stratasim
