#include "tests/fuzz/scenario_fuzz.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/prediction/prediction_json.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search.h"
#include "sim/search/search_json.h"
#include "strategies/lowering/iteration_graph.h"
#include "strategies/lowering/lower.h"
#include "validate/case_rules.h"
#include "validate/case_translation.h"

namespace stratasim::fuzz {
namespace {

// Work the target does per input stays small, so a slow input is a real finding (a loop that
// does not end, or work that grows without bound), not the fuzzer asking for 10^9 points.
constexpr int kMaxVariants = 4;
constexpr uint64_t kMaxSearchPoints = 64;
// Pipeline steps of the iteration graph drawn, and the size of the graph parsed back: under
// ASan a 70B ZeRO-3 graph of 1280 steps took 13 s to parse (the fuzzer's first timeout).
constexpr double kMaxGraphSteps = 256;
constexpr size_t kMaxGraphText = size_t{1} << 20;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Every number in an output is finite; nlohmann writes NaN and inf as null, so they are
// looked for in the document, not in the text.
void require_finite(const Json& j, const std::string& where) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) finding("non-finite number in " + where);
  if (j.is_structured()) {
    for (const auto& item : j) require_finite(item, where);
  }
}

// "--set KEY=VALUE" lines at the start, then the scenario text.
void split_input(std::string_view text, std::vector<std::string>* sets, std::string_view* json) {
  constexpr std::string_view kSet = "--set ";
  while (text.substr(0, kSet.size()) == kSet) {
    const size_t end = text.find('\n');
    sets->emplace_back(text.substr(kSet.size(), end == std::string_view::npos ? text.npos : end - kSet.size()));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  *json = text;
}

void check_strategy(const Scenario& sc, const Strategy& strategy) {
  Expected<Plan> plan = lower(sc.model, strategy, sc.hardware);
  if (!plan) {
    if (plan.error().detail.empty()) finding("an Infeasible without a reason");
    return;
  }
  const Prediction p = predict_analytical(*plan);
  if (!(p.iteration_s > 0) || !std::isfinite(p.iteration_s)) finding("iteration time not positive and finite");
  require_finite(to_json(p), "the prediction");
  (void)explain(*plan);
  const double steps = double(plan->strategy.pp) * plan->strategy.interleave * plan->micro_batches;
  if (steps <= kMaxGraphSteps) {
    const std::string text = iteration_graph_json(*plan);
    if (text.size() <= kMaxGraphText) {
      require_finite(parse_json_text(text, "the iteration graph"), "the iteration graph");
    }
  }
}

void check_search(const Scenario& sc) {
  if (sc.search.size() == 0 || sc.search.size() > kMaxSearchPoints) return;
  SearchOptions o;
  o.threads = 1;
  o.top_k = 4;
  const SearchResult r = run_search(sc.model, sc.strategy, sc.hardware, sc.search, o);
  require_finite(search_result_json(r, sc.search, o, sc.hardware), "the search result");
}

// A published validation case (validate --published --data FILE): translated as validate does;
// its published figures are positive and finite, and an expressible case's scenario runs as
// any scenario does.
void run_case(const Json& doc) {
  static const CaseRules rules = builtin_case_rules();
  const TranslatedCase t = translate_case(JsonNode(doc, "fuzz.json", ""), rules);
  for (const CaseMetric& m : t.metrics) {
    if (!(std::isfinite(m.published) && m.published > 0)) finding("a published figure not positive and finite");
  }
  if (!t.unsupported.empty() && !t.speedup_reference) {
    if (t.unsupported.find_first_not_of(' ') == std::string::npos) finding("a case not expressible without a reason");
    return;
  }
  const Scenario sc = read_scenario(t.scenario, "fuzz.json");
  check_strategy(sc, sc.strategy);
  check_search(sc);
}

void run(std::string_view text) {
  std::vector<std::string> sets;
  std::string_view json;
  split_input(text, &sets, &json);
  Json doc = parse_json_text(json, "fuzz.json");
  for (const std::string& s : sets) apply_override(doc, s);
  if (doc.is_object() && doc.contains("measured")) {
    run_case(doc);
    return;
  }
  const Scenario sc = read_scenario(doc, "fuzz.json");
  require_finite(to_json(sc), "the scenario");
  int n = 0;
  for (const auto& [name, strategy] : sc.variants) {
    if (n++ == kMaxVariants) break;
    check_strategy(sc, strategy);
  }
  check_search(sc);
}

}  // namespace

void run_scenario_input(const uint8_t* data, size_t size) {
  try {
    run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const InputError& e) {
    if (std::string(e.what()).empty()) finding("an InputError without a message");
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not an InputError: ") + e.what());
  }
}

}  // namespace stratasim::fuzz
