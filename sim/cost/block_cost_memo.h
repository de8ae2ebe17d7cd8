// block_cost() memoized per thread. A sweep evaluates the same shared, immutable Block on
// the same hardware thousands of times; the cost depends only on the block, the device and
// link numbers, the dtype, the TP group and the collective/overlap knobs, which form the key.
#pragma once

#include <memory>

#include "sim/cost/block_cost.h"

namespace stratasim {

BlockCost memoized_block_cost(const std::shared_ptr<const Block>& block, const Plan& plan);

}  // namespace stratasim
