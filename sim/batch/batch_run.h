// One scenario of a batch, evaluated (every variant lowered and predicted analytically, as
// `stratasim compare` does) or searched (run_search over the scenario's space), as the one JSON
// object that becomes its line in the results file. A scenario that fails to load gives an
// error object with the message instead of throwing, so the batch goes on.
#pragma once

#include <string>

#include "sim/core/json_reader.h"
#include "sim/search/search.h"

namespace stratasim {

enum class BatchMode { kEvaluate, kSearch };

std::string_view batch_mode_name(BatchMode m);  // "evaluate", "search"

struct BatchOptions {
  BatchMode mode = BatchMode::kEvaluate;
  SearchOptions search;  // for kSearch
};

// {"file", "hash", "mode", "status": "ok", "scenario", "variants": [...]} (evaluate),
// {..., "status": "ok", "scenario", "search": {...}} (search), or
// {"file", "hash", "mode", "status": "error", "error": "<message>"}.
// Holds nothing that depends on time, threads or ranks: the same inputs give the same bytes.
Json run_batch_scenario(const std::string& file, const BatchOptions& options);

}  // namespace stratasim
