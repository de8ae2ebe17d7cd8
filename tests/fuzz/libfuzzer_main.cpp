// libFuzzer entry point (clang -fsanitize=fuzzer): scripts/fuzz.sh builds and runs it.
#include "tests/fuzz/scenario_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stratasim::fuzz::run_scenario_input(data, size);
  return 0;
}
