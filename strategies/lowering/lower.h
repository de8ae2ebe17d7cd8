// lower(model, strategy, hardware): the one place that checks a strategy's legality and
// turns it into a Plan. Every engine, the search, the GUI and validate go through it.
#pragma once

#include <string>

#include "sim/core/error.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

// How far lower() goes: the whole plan, or what the memory model reads (blocks, stages,
// groups, state bytes) without the iteration program, which lower_iteration(plan) adds
// (iteration.h): a search prunes the points that do not fit before paying for it.
enum class LowerDepth { kFull, kMemory };

Expected<Plan> lower(const ModelSpec& model, const Strategy& strategy,
                     const HardwareModel& hardware, LowerDepth depth = LowerDepth::kFull);

// The plan per stage as text, like SQL's EXPLAIN: kernels with FLOP and bytes, collectives
// with group and size, the pipeline schedule's shape.
std::string explain(const Plan& plan);

}  // namespace stratasim
