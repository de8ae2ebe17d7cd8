#include "gui/variant_eval.h"

#include "sim/analytical/analytical_engine.h"
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
  if (sc.search.axes.empty()) {
    throw InputError(sc.file, "search", "(missing)",
                     "must list the axes to search, e.g. \"search\": {\"tp\": [1, 2, 4, 8]}");
  }
  SearchOptions o;
  o.top_k = top_k;
  return run_search(sc.model, sc.strategy, sc.hardware, sc.search, o);
}

}  // namespace stratasim
