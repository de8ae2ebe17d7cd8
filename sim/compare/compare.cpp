#include "sim/compare/compare.h"

#include "sim/prediction/prediction_json.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {

std::vector<VariantResult> evaluate_variants(const Scenario& sc, const EngineOptions& options) {
  std::vector<VariantResult> rows;
  for (const auto& [name, strategy] : sc.variants) {
    VariantResult row{name, strategy, nullptr, {}, ""};
    Expected<Plan> plan = lower(sc.model, strategy, sc.hardware);
    if (plan) {
      row.plan = std::make_shared<const Plan>(std::move(*plan));
      row.prediction = predict_analytical(*row.plan, options);
    } else {
      row.infeasible = std::string(reason_name(plan.error().reason)) + ": " + plan.error().detail;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Json variants_json(const std::vector<VariantResult>& rows) {
  Json variants = Json::array();
  for (const VariantResult& row : rows) {
    Json v{{"variant", row.name}, {"feasible", row.feasible()}};
    if (row.feasible()) {
      v["strategy"] = to_json(row.plan->strategy);
      v["prediction"] = to_json(row.prediction);
    } else {
      v["reason"] = row.infeasible;
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

}  // namespace stratasim
