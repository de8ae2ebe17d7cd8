// Per-rank model state and optimizer step, shared by both engines.
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

// Parameters held by one device of pipeline rank `rank` (all its chunks).
double rank_params(const Plan& plan, int rank);

// The optimizer step of one device: memory-bound, it reads and writes every optimizer state
// once and reads the gradient and writes the weights (ZeRO >= 1 shards it over dp).
double optimizer_step_s(const Plan& plan, int rank);

}  // namespace stratasim
