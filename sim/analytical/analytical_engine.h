// The analytical engine: microseconds per strategy. Consumes the lowered Plan, returns the
// same Prediction as the SimGrid engine.
#pragma once

#include "sim/prediction/prediction.h"

namespace stratasim {

struct EngineOptions {
  bool timeline = false;  // fill Prediction::timeline (one event per op per pipeline rank)
};

Prediction predict_analytical(const Plan& plan, const EngineOptions& options = {});

}  // namespace stratasim
