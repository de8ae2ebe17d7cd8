// Memory per device, broken down, for each pipeline rank. Model states follow ZeRO
// (Rajbhandari et al. SC20, Sec. 3.1 and 5): with K bytes of optimizer state per parameter,
// stage 0 keeps (2 + 2 + K) * psi, stage 1 shards the optimizer, stage 2 also the gradients,
// stage 3 also the weights, each over the data-parallel degree. Activations come from the
// lowered graphs' saved tensors times the schedule's in-flight micro-batches.
#pragma once

#include <vector>

#include "sim/prediction/prediction.h"

namespace stratasim {

// Model-state bytes (weights, gradients, optimizer) for `params` parameters on one device,
// with the given bytes per parameter for each state, sharded by ZeRO over `dp` ranks.
struct StateBytes {
  double weights = 2, gradients = 2, optimizer = 12;  // mixed-precision Adam (ZeRO, Sec. 3.1)
};
MemoryBreakdown model_state_memory(double params, int dp, int zero_stage, StateBytes bytes);

// Full breakdown per pipeline rank; `in_flight[r]` = chunk-micro-batches rank r holds at once.
std::vector<MemoryBreakdown> rank_memory(const Plan& plan, const std::vector<int>& in_flight);

}  // namespace stratasim
