// stratasim runtime: the CPU pipeline runtime and the DAG executor from the command line, their
// timelines in the simulator's trace format, and bad flags named with their rule (exit 2).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "sim/core/json_reader.h"
#include "tests/support/run_cli.h"

namespace {

using stratasim::Json;
using stratasim::testing::run_cli;

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "stratasim_runtime_cli_tests";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());  // throws (and fails the test) when malformed
}

TEST_CASE("cli: runtime runs dp pipelines and writes one trace process per worker") {
  // 1F1B with p = 2, m = 3, dp = 2 and 2 buckets: 4 workers, each 3 forwards + 3 backwards and
  // 2 all-reduces.
  const std::string trace = temp_path("dp.trace.json"), json = temp_path("dp.json");
  const auto r = run_cli("runtime --schedule 1f1b -p 2 -m 3 --dp 2 --flop 1e5 --grad-elems 64 "
                         "--buckets 2 --trace " + trace + " --json " + json);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("bubble") != std::string::npos);
  CHECK(r.output.find("closed form") != std::string::npos);
  CHECK(r.output.find("ring over 2 replicas") != std::string::npos);
  const Json t = read_json(trace);
  CHECK(t["otherData"]["engine"] == "cpu-runtime");
  std::map<int, int> compute, comm;
  std::set<int> named;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") named.insert(e["pid"].get<int>());
      continue;
    }
    const std::string cat = e["cat"];
    if (cat == "forward" || cat == "backward") ++compute[e["pid"].get<int>()];
    if (cat == "comm") ++comm[e["pid"].get<int>()];
    CHECK(e["dur"].get<double>() >= 0.0);
  }
  CHECK(named == std::set<int>{0, 1, 2, 3});
  for (int w = 0; w < 4; ++w) {
    CAPTURE(w);
    CHECK(compute[w] == 6);
    CHECK(comm[w] == 2);
  }
  const Json j = read_json(json);
  CHECK(j["prediction"]["engine"] == "cpu-runtime");
  // (p-1)/(m+p-1) = 1/4 for equal stages.
  CHECK(j["prediction"]["uniform_bubble_fraction"].get<double>() == doctest::Approx(0.25));
}

TEST_CASE("cli: runtime --dag runs an operator graph and traces one process per thread") {
  const std::string trace = temp_path("dag.trace.json");
  const auto r = run_cli("runtime --dag attention --threads 2 --flop 1e5 --trace " + trace);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("11 nodes, 2 threads") != std::string::npos);  // qkv, 8 heads, concat, proj
  const Json t = read_json(trace);
  int nodes = 0;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++nodes;
    CHECK(e["pid"].get<int>() >= 0);
    CHECK(e["pid"].get<int>() < 2);
  }
  CHECK(nodes == 11);
}

TEST_CASE("cli: runtime rejects bad flags with exit 2, naming the flag and the rule") {
  auto r = run_cli("runtime --dp 0");
  CHECK(r.code == 2);
  CHECK(r.output.find("--dp: \"0\" must be a whole number in [1, 64]") != std::string::npos);
  r = run_cli("runtime -p two");
  CHECK(r.code == 2);
  CHECK(r.output.find("--pp: \"two\" must be a whole number in [1, 64]") != std::string::npos);
  r = run_cli("runtime --schedule zigzag");
  CHECK(r.code == 2);
  CHECK(r.output.find("--schedule: \"zigzag\" must be gpipe, 1f1b, interleaved or pipedream") !=
        std::string::npos);
  r = run_cli("runtime --schedule interleaved -p 4 -m 6 -v 2");
  CHECK(r.code == 2);
  CHECK(r.output.find("interleaved 1F1B needs micro-batches (6) to be a multiple of pp (4)") !=
        std::string::npos);
  r = run_cli("runtime --flop -3");
  CHECK(r.code == 2);
  CHECK(r.output.find("--flop: \"-3\" must be a number of FLOP in [0, 1e13]") != std::string::npos);
  r = run_cli("runtime --dag mesh");
  CHECK(r.code == 2);
  CHECK(r.output.find("--dag: \"mesh\" must be resnet, lstm, lstm_sequence or attention") != std::string::npos);
  r = run_cli("runtime --speed 3");
  CHECK(r.code == 2);
  CHECK(r.output.find("--speed") != std::string::npos);
  CHECK(r.output.find("is not an option of this command") != std::string::npos);
}

}  // namespace
