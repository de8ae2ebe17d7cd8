// Replays every file of the given directories (or files) through the fuzz target, for builds
// without libFuzzer: the committed seed corpus and every crash ever found stay regression
// tests under any compiler. Exit 0 when all ran; a finding aborts.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/scenario_fuzz.h"

namespace fs = std::filesystem;

namespace {

void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  stratasim::fuzz::run_scenario_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::directory_iterator(argv[i])) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: fuzz_corpus_replay DIR|FILE ...  (no inputs found)\n");
    return 2;
  }
  for (const fs::path& f : files) replay(f);
  std::printf("replayed %zu inputs without a finding\n", files.size());
  return 0;
}
