// Result files read back for charts: the JSON of `stratasim evaluate --json`, `simulate
// --json` (one strategy and its prediction), `compare --json` (every variant of one or more
// scenarios) and `search --json` (top-k and Pareto front), told apart by their content. Used by
// `stratasim plot RESULT.json` and by the GUI, which reads `stratasim simulate`'s output. No Qt.
#pragma once

#include <string>
#include <vector>

#include "gui/chart_data.h"
#include "sim/core/json_reader.h"
#include "sim/prediction/prediction.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

enum class ResultKind {
  kPrediction,  // evaluate / simulate: {"scenario", "strategy", "prediction", ...}
  kVariants,    // compare: [{"scenario", "file", "variants": [...]}, ...]
  kSearch,      // search: {"scenario", "space", "points", "top", "pareto", ...}
};
std::string_view result_kind_name(ResultKind k);  // "evaluate/simulate", "compare", "search"

struct ResultEntry {
  std::string name;       // variant name, or the strategy's label for search candidates
  std::string scenario;   // the scenario it belongs to (compare files hold several)
  bool feasible = true;
  std::string reason;     // why not, when infeasible
  Strategy strategy;
  Prediction prediction;  // search candidates: only the headline numbers and peak memory
};

struct ResultFile {
  std::string file;
  ResultKind kind = ResultKind::kPrediction;
  std::string scenario;              // the (first) scenario's name
  std::vector<ResultEntry> entries;  // kPrediction: one; kVariants: all variants; kSearch: top-k
  std::vector<ParetoPoint> points;   // kSearch: top-k and front as chart points
};

// Whether a parsed JSON document is a result file (rather than a scenario): an array, or an
// object with "prediction" or "top" and no "model".
bool is_result_json(const Json& j);

// Throws InputError naming the file and JSON path for anything that is not one of the kinds
// above or lacks a field the charts need.
ResultFile read_result_file(const std::string& path);
ResultFile read_result_json(const Json& j, const std::string& file);

// The inverse of to_json(Prediction) (sim/prediction/prediction_json.h).
Prediction read_prediction(const JsonNode& n);

}  // namespace stratasim
