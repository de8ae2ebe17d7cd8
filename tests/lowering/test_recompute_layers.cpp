// Partial full recomputation (Strategy::recompute_layers; Megatron's --recompute-method block
// --recompute-num-layers N): the first N layers of each virtual pipeline stage recompute whole,
// the others keep their activations. Every figure below is the plans without recomputation and
// with full recomputation mixed by hand, layer by layer.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/iteration.h"
#include "strategies/lowering/lower.h"
#include "strategies/search/search_space.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"

using namespace stratasim;

namespace {

// An 8-layer GPT (hidden 1024) on 4 A100s: pp 2 (4 layers a stage), dp 2, 4 micro-batches.
Plan plan_of(const std::string& recompute) {
  const std::string text =
      R"({"name": "t", "model": {"family": "decoder", "name": "gpt", "layers": 8, "hidden": 1024,
          "heads": 16, "seq_len": 1024, "vocab": 32000},
          "cluster": {"preset": "dgx_a100", "devices": 4},
          "strategy": {"pp": 2, "micro_batch": 1, "global_batch": 8, "fusion": "megatron", )" +
      recompute + "}}";
  const Scenario sc = read_scenario(parse_json_text(text, "t.json"), "t.json");
  Expected<Plan> plan = lower(sc.model, sc.strategy, sc.hardware);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  return *plan;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Virtual stage i's compute op of `kind` in the plan's iteration program.
IterOp op_of(const Plan& plan, size_t i, IterOpKind kind) {
  const StageProgram& st = plan.iteration.stages.at(i);
  for (const StepProgram* step : {&st.forward, &st.backward}) {
    for (const IterOp& op : step->ops) {
      if (op.kind == kind) return op;
    }
  }
  FAIL("no such op");
  return IterOp{};
}

}  // namespace

TEST_CASE("recompute_layers: the stage's first N layers recompute whole and the rest keep their activations") {
  const Plan none = plan_of(R"("recompute": "none")");
  const Plan full = plan_of(R"("recompute": "full")");
  const Plan one = plan_of(R"("recompute": "full", "recompute_layers": 1)");
  REQUIRE(one.recomputed_layer);
  CHECK_FALSE(full.recomputed_layer);  // 0: every layer is the recomputed block itself
  const double kept = none.layer->saved_activation_B, input = full.layer->saved_activation_B;
  REQUIRE(kept > 2 * input);  // full recomputation keeps only the layer's input
  for (size_t i = 0; i < one.stages.size(); ++i) {
    const VirtualStage &a = none.stages[i], &b = one.stages[i];
    CAPTURE(i);
    CHECK(b.recomputed_layers == 1);
    // 3 layers keep everything, 1 keeps its input: the embedding/head part is the same.
    CHECK(b.activation_B == doctest::Approx(a.activation_B - kept + input));
    CHECK(b.params == a.params);
    // Its recomputation is that one layer's: a quarter of the full plan's (4 layers a stage).
    const IterOp r1 = op_of(one, i, IterOpKind::kRecompute), r4 = op_of(full, i, IterOpKind::kRecompute);
    CHECK(r1.flops == doctest::Approx(r4.flops / 4));
    CHECK(r1.bytes == doctest::Approx(r4.bytes / 4));
    // Forward and backward proper are the same work whatever is recomputed.
    CHECK(op_of(one, i, IterOpKind::kForward).flops == doctest::Approx(op_of(none, i, IterOpKind::kForward).flops));
    CHECK(op_of(one, i, IterOpKind::kBackward).flops == doctest::Approx(op_of(none, i, IterOpKind::kBackward).flops));
  }
  // The analytical engine: recomputation a quarter of full's; the iteration in between.
  const Prediction pn = predict_analytical(none), pf = predict_analytical(full), p1 = predict_analytical(one);
  REQUIRE(pf.recompute_s > 0);
  CHECK(p1.recompute_s == doctest::Approx(pf.recompute_s / 4));
  CHECK(pn.iteration_s < p1.iteration_s);
  CHECK(p1.iteration_s < pf.iteration_s);
  // Less memory than none, more than full.
  CHECK(p1.peak_memory_B < pn.peak_memory_B);
  CHECK(p1.peak_memory_B > pf.peak_memory_B);
  // More layers than a stage holds: every layer recomputes, as full does.
  const Plan all = plan_of(R"("recompute": "full", "recompute_layers": 64)");
  CHECK(all.stages[0].recomputed_layers == 4);
  CHECK(rel(predict_analytical(all).iteration_s, pf.iteration_s) < 1e-12);
  CHECK(predict_analytical(all).peak_memory_B == doctest::Approx(pf.peak_memory_B));
}

TEST_CASE("recompute_layers: interleaved stages each recompute their own first layers") {
  // pp 2 x interleave 2: four virtual stages of 2 layers; 1 of each recomputed.
  const Plan one = plan_of(R"("recompute": "full", "recompute_layers": 1, "schedule": "interleaved", "interleave": 2)");
  REQUIRE(one.stages.size() == 4);
  for (const VirtualStage& st : one.stages) CHECK(st.recomputed_layers == 1);
  const Plan full = plan_of(R"("recompute": "full", "schedule": "interleaved", "interleave": 2)");
  CHECK(predict_analytical(one).recompute_s == doctest::Approx(predict_analytical(full).recompute_s / 2));
}

TEST_CASE("recompute_layers: read, written back, and refused without full recomputation") {
  const char* good = R"({"global_batch": 8, "recompute": "full", "recompute_layers": 3})";
  const Strategy s = read_strategy(JsonNode(parse_json_text(good, "s.json"), "s.json", "strategy"));
  CHECK(s.recompute_layers == 3);
  CHECK(to_json(s).at("recompute_layers") == 3);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(recompute_label(s) == "full(first 3 layers of each stage)");
  const std::string what = testing::input_error_message([] {
    read_strategy(JsonNode(parse_json_text(R"({"global_batch": 8, "recompute": "selective", "recompute_layers": 2})",
                                           "s.json"),
                           "s.json", "strategy"));
  });
  CAPTURE(what);
  CHECK(what.find("s.json") != std::string::npos);
  CHECK(what.find("recompute_layers") != std::string::npos);
  CHECK(what.find("applies to recompute \"full\" only") != std::string::npos);
  // Set in code without full recomputation, lower() names the rule.
  Strategy bad = s;
  bad.recompute = Recompute::kNone;
  const Scenario sc = read_scenario(parse_json_text(R"({"name": "t", "model": {"family": "decoder", "name": "gpt",
      "layers": 8, "hidden": 1024, "heads": 16, "seq_len": 1024, "vocab": 32000},
      "cluster": {"preset": "dgx_a100", "devices": 1}, "strategy": {"global_batch": 8}})", "t.json"), "t.json");
  const Expected<Plan> refused = lower(sc.model, bad, sc.hardware);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().detail == "recompute_layers=3 with recompute none: it counts the layers of each stage "
                                  "that recompute whole (recompute full)");
}

TEST_CASE("recompute_layers: a search axis, reset where full recomputation is not searched") {
  const SearchSpace space = read_search_space(JsonNode(
      parse_json_text(R"({"recompute": ["none", "full"], "recompute_layers": [0, 2]})", "s.json"), "s.json", "search"));
  REQUIRE(space.size() == 4);
  Strategy base;
  base.global_batch = 8;
  int distinct = 0;
  for (uint64_t i = 0; i < space.size(); ++i) {
    SearchPoint p;
    point_at(space, i, base, 1, p);
    if (p.strategy.recompute == Recompute::kNone) CHECK(p.strategy.recompute_layers == 0);
    distinct += p.duplicate ? 0 : 1;
  }
  CHECK(distinct == 3);  // none, full, full with 2 layers
}
