// stratasim search --refine simgrid: the top candidates are re-simulated and re-ranked.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_cli.h"

TEST_CASE("search --refine simgrid re-simulates the top candidates") {
  const auto dir = std::filesystem::temp_directory_path() / "stratasim_refine_test";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "refine.json").string();
  std::ofstream(file) << R"({
    "model": {"family": "decoder", "name": "gpt-4layer", "layers": 4, "hidden": 1024,
              "heads": 16, "seq_len": 1024, "vocab": 32000},
    "cluster": {"preset": "dgx_a100", "devices": 16},
    "strategy": {"tp": 2, "pp": 2, "global_batch": 32},
    "search": {"tp": [1, 2, 4], "pp": [1, 2], "micro_batch": [1, 2]}})";
  const auto run = stratasim::testing::run_cli("search " + file + " --top 3 --refine simgrid");
  CAPTURE(run.output);
  CHECK(run.code == 0);
  CHECK(run.output.find("top 3 re-simulated with SimGrid (contention-aware), re-ranked:") !=
        std::string::npos);
  CHECK(run.output.find("not simulated") == std::string::npos);
  const auto bad = stratasim::testing::run_cli("search " + file + " --refine ns3");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--refine: \"ns3\" is not one of: simgrid") != std::string::npos);
}
