// The kernel families `stratasim calibrate` times (kernels/kernel_cases.h, the same names). A
// plan's kernel that belongs to one (an operator-graph op's GraphOp::family) runs its family's
// measured factor times the roofline on a calibrated device (DeviceSpec::family_factors).
// Shared by the model (which names a family per op) and the hardware (which holds the factors).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace stratasim {

inline constexpr std::array<std::string_view, 8> kKernelFamilyNames = {
    "gemm_bias_gelu", "bias_dropout_residual", "layernorm", "softmax",
    "attention",      "conv_bn_relu",          "image_pipeline", "lstm_cell"};
inline constexpr int kNumKernelFamilies = static_cast<int>(kKernelFamilyNames.size());

// -1 when `name` is no family.
inline int kernel_family_index(std::string_view name) {
  for (int i = 0; i < kNumKernelFamilies; ++i) {
    if (kKernelFamilyNames[i] == name) return i;
  }
  return -1;
}

// "gemm_bias_gelu, bias_dropout_residual, ...", for error messages.
inline std::string kernel_family_list() {
  std::string names;
  for (std::string_view k : kKernelFamilyNames) names += (names.empty() ? "" : ", ") + std::string(k);
  return names;
}

}  // namespace stratasim
