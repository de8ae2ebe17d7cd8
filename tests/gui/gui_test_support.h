// Shared by the GUI tests: bundled scenarios evaluated once per test.
#pragma once

#include <string>

#include "gui/variant_eval.h"

namespace stratasim::testing {

inline std::string scenario_path(const std::string& name) {
  return std::string(STRATASIM_SOURCE_DIR) + "/scenarios/" + name;
}

// llama2-70b on 512 H100: tp8 pp4 dp16, 64 micro-batches, base interleaved v=5, variants
// 1f1b, tp4 pp8 (v=2), ... (scenarios/llama2_70b_512_h100.json).
inline constexpr const char* kLlama = "llama2_70b_512_h100.json";

}  // namespace stratasim::testing
