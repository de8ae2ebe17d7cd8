// Test helper: the collective kernels of a lowered block's step, in order.
#pragma once

#include <vector>

#include "strategies/lowering/plan.h"

namespace stratasim::testing {

inline std::vector<const Kernel*> collectives(const std::vector<Kernel>& ks) {
  std::vector<const Kernel*> out;
  for (const Kernel& k : ks) {
    if (k.cls == OpClass::kCollective) out.push_back(&k);
  }
  return out;
}

}  // namespace stratasim::testing
