// lower(model, strategy, hardware): the one place that checks a strategy's legality and
// turns it into a Plan. Every engine, the search, the GUI and validate go through it.
#pragma once

#include <string>

#include "sim/core/error.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

Expected<Plan> lower(const ModelSpec& model, const Strategy& strategy,
                     const HardwareModel& hardware);

// The plan per stage as text, like SQL's EXPLAIN: kernels with FLOP and bytes, collectives
// with group and size, the pipeline schedule's shape.
std::string explain(const Plan& plan);

}  // namespace stratasim
