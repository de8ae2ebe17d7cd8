#include "strategies/lowering/autocast_casts.h"

namespace stratasim {

void append_autocast_casts(LayerGraph& g, double elements, int weights, double e) {
  if (elements <= 0 || weights <= 0) return;
  g.tensors.push_back(TensorInfo{0, elements * e});  // the 16-bit copies, moved in eager_bytes
  LayerOp cast;
  cast.name = "autocast_weight_cast";
  cast.cls = OpClass::kMemoryBound;
  cast.output = static_cast<int16_t>(g.tensors.size() - 1);
  cast.saves = kSaveOutput;
  cast.eager_bytes = elements * (4 + e);
  cast.eager_launches = static_cast<int16_t>(weights - 1);  // the kernels beyond one
  cast.backward_bytes_factor = (e + 4 + 12) / (4 + e);
  g.ops.push_back(cast);
}

}  // namespace stratasim
