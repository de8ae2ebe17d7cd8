// The analytical engine: microseconds per strategy. Consumes the lowered Plan, returns the
// same Prediction as the SimGrid engine.
#pragma once

#include "sim/prediction/prediction.h"

namespace stratasim {

struct EngineOptions {
  bool timeline = false;  // fill Prediction::timeline (one event per op per pipeline rank)
};

Prediction predict_analytical(const Plan& plan, const EngineOptions& options = {});

// Only the memory part of a prediction (rank_memory, peak, capacity, fits): no timing, so a
// search can discard strategies that do not fit before timing them.
Prediction predict_memory(const Plan& plan);

}  // namespace stratasim
