// The fuzz target over hostile scenarios (issue 14): one input is optional "--set KEY=VALUE"
// lines followed by scenario JSON. It is loaded, lowered, predicted by the analytical engine,
// explained, drawn as the iteration graph both engines replay, searched over a small space and
// written as JSON. Bad input must end as an InputError or an Infeasible value; anything else
// (another exception, a crash, a sanitizer report, inf/NaN in any output) is a finding and
// aborts. Shared by the libFuzzer binary (clang) and the corpus replayer (any compiler).
#pragma once

#include <cstddef>
#include <cstdint>

namespace stratasim::fuzz {

// Runs one input; returns normally for accepted and for rejected input, aborts on a finding.
void run_scenario_input(const uint8_t* data, size_t size);

}  // namespace stratasim::fuzz
