// Shared by the GUI tests: bundled scenarios evaluated once per test.
#pragma once

#include <string>

#include "gui/variant_eval.h"

namespace stratasim::testing {

inline std::string scenario_path(const std::string& name) {
  return std::string(STRATASIM_SOURCE_DIR) + "/scenarios/" + name;
}

// llama2-70b on 512 H100: tp8 pp4 dp16, 64 micro-batches, base interleaved v=5, variants
// 1f1b, tp4 pp8 (v=2), ..., context parallel cp=2 (scenarios/llama2_70b_512_h100.json).
inline constexpr const char* kLlama = "llama2_70b_512_h100.json";

}  // namespace stratasim::testing

#include <QtCore/QElapsedTimer>
#include <QtTest/QSignalSpy>
#include <filesystem>

#include "gui/main_window.h"
#include "sim/core/atomic_file.h"

namespace stratasim::testing {

// Starts a job with `start` and runs the event loop until the window reports it (60 s at most).
// Returns the job's success; fails the test when nothing was reported.
template <class Start>
bool run_job(MainWindow& w, Start start) {
  QSignalSpy spy(&w, &MainWindow::evaluation_finished);
  REQUIRE(start());
  REQUIRE((spy.count() > 0 || spy.wait(60000)));
  return spy.takeFirst().at(0).toBool();
}

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("stratasim_gui_test_" + name)).string();
}

// A scenario written to a temporary file (the text as given).
inline std::string write_temp_scenario(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  write_file_atomically(path, text);
  return path;
}

// gpt3-175b's scenario with a search space far too large to finish during a test, on any
// number of cores: 5 tp x 7 pp x 16 mb x 3 schedules x 8 v x 3 recompute x 2 sp x 4 zero
// x 2 x 2 overlap x 3 fusion x 32 device counts x 2 dtypes = 247726080 points (~1 us each).
inline std::string long_search_scenario() {
  Json doc = load_json_file(scenario_path("gpt3_175b_1024_a100.json"));
  doc["search"] = parse_json_text(
      R"({"tp": [1, 2, 4, 8, 16], "pp": [1, 2, 4, 8, 16, 32, 64],
          "micro_batch": {"from": 1, "to": 16, "step": 1},
          "schedule": ["gpipe", "1f1b", "interleaved"], "interleave": {"from": 1, "to": 8, "step": 1},
          "recompute": ["none", "selective", "full"], "sequence_parallel": [false, true],
          "zero_stage": [0, 1, 2, 3], "overlap_dp": [false, true], "overlap_tp": [false, true],
          "fusion": ["none", "megatron", "all"], "devices": {"from": 64, "to": 2048, "step": 64},
          "dtype": ["bf16", "fp16"]})",
      "long search");
  const std::string path = temp_path("long_search.json");
  write_file_atomically(path, doc.dump(1));
  return path;
}

}  // namespace stratasim::testing
