#include "sim/batch/batch_run.h"

#include "sim/analytical/analytical_engine.h"
#include "sim/batch/batch_file.h"
#include "sim/compare/compare.h"
#include "sim/prediction/prediction_json.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search_json.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {
namespace {

Json search_json(const Scenario& sc, const SearchOptions& o) {
  // Batch searches rank by throughput, which needs nothing beyond the axes.
  if (missing_search_input(sc.search, o, sc.hardware)) throw nothing_to_search(sc);
  const SearchResult r = run_search(sc.model, sc.strategy, sc.hardware, sc.search, o);
  return search_result_json(r, sc.search, o, sc.hardware);
}

}  // namespace

std::string_view batch_mode_name(BatchMode m) {
  return m == BatchMode::kSearch ? "search" : "evaluate";
}

Json run_batch_scenario(const std::string& file, const BatchOptions& options) {
  Json line{{"file", batch_key(file)},
            {"hash", content_hash_of_file(file)},
            {"mode", std::string(batch_mode_name(options.mode))}};
  try {
    const Scenario sc = load_scenario(file);
    Json result =
        options.mode == BatchMode::kSearch ? search_json(sc, options.search)
                                           : variants_json(evaluate_variants(sc));
    line["status"] = "ok";
    line["scenario"] = sc.name;
    line[options.mode == BatchMode::kSearch ? "search" : "variants"] = std::move(result);
  } catch (const InputError& e) {
    line["status"] = "error";
    line["error"] = e.what();
  }
  return line;
}

}  // namespace stratasim
