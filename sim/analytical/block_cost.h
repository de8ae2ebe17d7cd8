// Cost of one block (layer, embedding, head) for one micro-batch on one device: the sum of
// its kernels, with tensor-parallel communication exposed or hidden behind the adjacent
// GEMMs when the strategy overlaps it.
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

struct BlockCost {
  double forward_s = 0;
  double backward_s = 0;    // incl. recomputation
  double recompute_s = 0;
  double comm_total_s = 0;  // tp collectives, forward + recompute + backward
  double comm_exposed_s = 0;
  double comm_bytes = 0;
  double model_flops = 0;     // forward + backward
  double hardware_flops = 0;  // forward + recompute + backward
};

BlockCost block_cost(const Block& b, const Plan& plan);

}  // namespace stratasim
