#include "gui/variant_eval.h"

#include "sim/analytical/analytical_engine.h"
#include "gui/chart_data.h"
#include "hardware_models/src/hardware_json.h"
#include "sim/core/error.h"
#include "strategies/lowering/lower.h"

namespace stratasim {

std::vector<VariantResult> evaluate_variants_with_timelines(const Scenario& sc) {
  return evaluate_variants(sc, EngineOptions{.timeline = true});
}

const VariantResult& find_variant(const std::vector<VariantResult>& rows, const std::string& name,
                                  const std::string& file) {
  SS_ASSERT(!rows.empty(), "a scenario has at least its base strategy");
  if (name.empty()) return rows.front();
  for (const VariantResult& r : rows) {
    if (r.name == name) return r;
  }
  throw InputError(file, "variants", "\"" + name + "\"", "is not a variant of this scenario");
}

SearchResult search_scenario(const Scenario& sc, int top_k) {
  SearchOptions o;
  o.top_k = top_k;
  return search_scenario(sc, o);
}

SearchResult search_scenario(const Scenario& sc, const SearchOptions& options) {
  if (const auto missing = missing_search_input(sc.search, options, sc.hardware)) {
    switch (*missing) {
      case MissingSearchInput::kAxes: throw nothing_to_search(sc);
      case MissingSearchInput::kPrice:
        throw InputError(sc.file, "cluster.device.price_per_hour", "(missing)",
                         "is needed to rank by cost per token (US dollars per device-hour)");
      case MissingSearchInput::kTrainTokens:
        throw InputError(sc.file, "objective", "\"time_to_train\"",
                         "needs a token budget: use stratasim search --train-tokens");
    }
  }
  return run_search(sc.model, sc.strategy, sc.hardware, sc.search, options);
}

std::vector<VariantResult> evaluate_candidates(const Scenario& sc,
                                               const std::vector<Candidate>& candidates) {
  std::vector<VariantResult> rows;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    // The candidate's cluster: the scenario's, or the preset a hardware sweep named.
    HardwareModel hw = c.hardware == sc.hardware.name ? sc.hardware : catalog_cluster(c.hardware);
    hw.num_devices = c.devices;
    VariantResult row{"#" + std::to_string(i + 1) + " " + strategy_label(c.strategy, c.dp),
                      c.strategy, nullptr, {}, ""};
    Expected<Plan> plan = lower(sc.model, c.strategy, hw);
    SS_ASSERT(bool(plan), "a search candidate lowers again");
    row.plan = std::make_shared<const Plan>(std::move(*plan));
    row.prediction = predict_analytical(*row.plan, EngineOptions{.timeline = true});
    rows.push_back(std::move(row));
  }
  return rows;
}

EvaluatedStrategy evaluated_strategy(const VariantResult& row) {
  SS_ASSERT(row.feasible(), "only feasible rows are compared");
  return {row.name, row.strategy, row.plan->data_parallel(), row.plan->micro_batches, row.prediction};
}

}  // namespace stratasim
