// Scenario files for the batch tests, written into a fresh temporary folder per test.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace stratasim::testing {

// A fresh folder under the system's temporary directory, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stratasim-batch-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The tiny 1-layer, 2-GPU scenario under another name; with `search`, a 48-point space.
inline std::string tiny_scenario(const std::string& name, bool search = false) {
  std::string s = R"({"name": ")" + name + R"(",
  "model": {"family": "decoder", "name": "gpt-1layer", "layers": 1, "hidden": 1024, "heads": 16,
            "seq_len": 1024, "vocab": 32000},
  "cluster": {"preset": "dgx_a100", "devices": 2},
  "strategy": {"tp": 2, "global_batch": 8, "micro_batch": 4, "fusion": "megatron"},
  "variants": {"data parallel": {"tp": 1}, "tp + sp": {"sequence_parallel": true}})";
  if (search) {
    s += R"(,
  "search": {"tp": [1, 2], "micro_batch": [1, 2, 4, 8], "recompute": ["none", "selective", "full"],
             "sequence_parallel": [false, true]})";
  }
  return s + "}\n";
}

// Writes n tiny scenarios s00.json ... into dir and returns their paths in order.
inline std::vector<std::string> write_tiny_scenarios(const std::string& dir, int n,
                                                     bool search = false) {
  std::vector<std::string> paths;
  for (int i = 0; i < n; ++i) {
    const std::string name = (i < 10 ? "s0" : "s") + std::to_string(i);
    paths.push_back(dir + "/" + name + ".json");
    write_text(paths.back(), tiny_scenario("tiny " + name, search));
  }
  return paths;
}

}  // namespace stratasim::testing
