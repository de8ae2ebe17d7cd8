#include "strategies/lowering/autocast_casts.h"

#include <algorithm>
#include <string_view>

namespace stratasim {
namespace {

constexpr double kFp32Bytes = 4;
// The backward's bytes an element beyond the 16-bit gradient's read: the cast's fp32 write,
// and the accumulation (read the .grad and the cast gradient, write the .grad).
constexpr double kCastBackWrite = kFp32Bytes;
constexpr double kAccumulate = 3 * kFp32Bytes;

}  // namespace

bool autocast_casts_parameters(const LayerOp& op) {
  if (op.weight_bytes <= 0) return false;
  if (op.cls == OpClass::kMatmul) return true;
  return op.name == "bias" || op.name.ends_with("_bias");
}

void prepend_autocast_casts(LayerGraph& g, double elements, int tensors, double element_bytes) {
  if (elements <= 0 || tensors <= 0) return;
  g.tensors.push_back(TensorInfo{0, elements * element_bytes});  // the copies, moved in eager_bytes
  LayerOp cast;
  cast.name = "autocast_weight_cast";
  cast.cls = OpClass::kMemoryBound;
  cast.output = static_cast<int16_t>(g.tensors.size() - 1);
  cast.saves = kSaveOutput;
  const double forward = kFp32Bytes + element_bytes;
  cast.eager_bytes = elements * forward;
  cast.eager_launches = static_cast<int16_t>(tensors - 1);  // the kernels beyond one
  cast.backward_bytes_factor = (element_bytes + kCastBackWrite + kAccumulate) / forward;
  cast.backward_launch_factor = 2;  // the cast back and the accumulation
  g.ops.insert(g.ops.begin(), cast);
}

void append_hp_grad_accumulation(LayerGraph& g, double elements, int tensors) {
  if (elements <= 0 || tensors <= 0) return;
  constexpr double kCast = 2 + kFp32Bytes, kAdd = 3 * kFp32Bytes;
  LayerOp pass;
  pass.name = "hp_grad_accumulate";
  pass.cls = OpClass::kMemoryBound;
  pass.comm_phases = CommPhases::kBackwardOnly;  // no forward kernel; never recomputed
  pass.parameter_traffic = true;
  pass.eager_bytes = elements * (kCast + kAdd);
  pass.eager_launches = static_cast<int16_t>(std::min(2 * tensors - 1, 32767));
  pass.backward_bytes_factor = 1;
  g.ops.insert(g.ops.begin(), pass);  // first in the forward list: last in the backward
}

int parameter_tensors(const LayerGraph& g) {
  int tensors = 0;
  for (const LayerOp& o : g.ops) tensors += o.weight_bytes > 0;
  return tensors;
}

}  // namespace stratasim
