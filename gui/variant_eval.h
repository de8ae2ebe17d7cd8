// Evaluating a scenario for the GUI and `stratasim plot`: every variant lowered and predicted
// by the analytical engine (with its timeline), and the scenario's search. No Qt here, so the
// window's worker thread and the command line run exactly the same code.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/compare/compare.h"
#include "sim/compare/why.h"
#include "sim/prediction/prediction.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search.h"

namespace stratasim {

// Every variant of the scenario with its timeline (sim/compare: evaluate_variants).
std::vector<VariantResult> evaluate_variants_with_timelines(const Scenario& sc);

// The variant named `name` ("" is the base); throws InputError naming the scenario file.
const VariantResult& find_variant(const std::vector<VariantResult>& rows, const std::string& name,
                                  const std::string& file);

// The scenario's search (throughput objective); throws InputError when it lists no axes.
SearchResult search_scenario(const Scenario& sc, int top_k = 50);
SearchResult search_scenario(const Scenario& sc, const SearchOptions& options);

// Search candidates lowered and predicted again with their timelines, named "#1 tp8 pp4 ...",
// so the window shows them like variants (same table, same charts, same comparison).
std::vector<VariantResult> evaluate_candidates(const Scenario& sc,
                                               const std::vector<Candidate>& candidates);

// A feasible row as the input of why_best() (sim/compare/why.h).
EvaluatedStrategy evaluated_strategy(const VariantResult& row);

}  // namespace stratasim
