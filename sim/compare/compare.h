// Every strategy variant of a scenario, lowered and predicted by the analytical engine: what
// `stratasim compare`, `stratasim batch`, `stratasim plot` and the GUI all show.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/json_reader.h"
#include "sim/scenario/scenario.h"

namespace stratasim {

struct VariantResult {
  std::string name;
  Strategy strategy;
  std::shared_ptr<const Plan> plan;  // null when the variant cannot run
  Prediction prediction;
  std::string infeasible;            // "reason: detail" when it cannot run
  bool feasible() const { return plan != nullptr; }
};

// Every variant of the scenario, base first, in file order.
std::vector<VariantResult> evaluate_variants(const Scenario& sc, const EngineOptions& options = {});

// [{"variant", "feasible", "strategy", "prediction"} or {"variant", "feasible", "reason"}].
Json variants_json(const std::vector<VariantResult>& rows);

}  // namespace stratasim
