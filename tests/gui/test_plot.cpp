// `stratasim plot` writes each chart kind as a PNG of the requested size, without a display.
#include <doctest/doctest.h>

#include <QtGui/QImage>
#include <filesystem>

#include "gui/chart_png.h"
#include "tests/gui/gui_test_support.h"
#include "sim/core/atomic_file.h"
#include "sim/core/json_reader.h"
#include "tests/support/run_cli.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::run_cli;
using testing::scenario_path;

std::string temp_png(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("stratasim_plot_" + name + ".png")).string();
}

QSize png_size(const std::string& path) {
  const QImage image(QString::fromStdString(path));
  return image.isNull() ? QSize() : image.size();
}

void check_plot(const std::string& kind, const std::string& scenario, const std::string& extra) {
  // One file per (kind, scenario): ctest runs test cases in parallel.
  const std::string out = temp_png(kind + "_" + std::filesystem::path(scenario).stem().string());
  std::filesystem::remove(out);
  const auto run =
      run_cli("plot " + scenario_path(scenario) + " --kind " + kind + " -o " + out + " " + extra);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(png_size(out) == QSize(1200, 700));
}

TEST_CASE("plot: timeline PNG, 1200x700") { check_plot("timeline", kLlama, "--variant 1f1b"); }
TEST_CASE("plot: memory PNG, 1200x700") { check_plot("memory", kLlama, ""); }
TEST_CASE("plot: breakdown PNG, 1200x700") { check_plot("breakdown", kLlama, ""); }
TEST_CASE("plot: pareto PNG of the variants, 1200x700") { check_plot("pareto", kLlama, ""); }

TEST_CASE("plot: pareto PNG of the scenario's search, 1200x700") {
  check_plot("pareto", "gpt3_175b_1024_a100.json", "");  // lists search axes: ~0.2 s
}

TEST_CASE("plot: --size sets the pixel size") {
  const std::string out = temp_png("size");
  const auto run = run_cli("plot " + scenario_path("tiny_2gpu_1layer.json") +
                           " --kind memory --size 640x480 -o " + out);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(png_size(out) == QSize(640, 480));
}

TEST_CASE("plot: bad kind and unknown variant are input errors naming the option") {
  auto run = run_cli("plot " + scenario_path(kLlama) + " --kind gantt -o " + temp_png("bad_kind"));
  CHECK(run.code == 2);
  CHECK(run.output.find("--kind: \"gantt\" must be timeline, memory, breakdown or pareto") !=
        std::string::npos);
  run = run_cli("plot " + scenario_path(kLlama) + " --kind timeline --variant nope -o " +
                temp_png("bad_variant"));
  CHECK(run.code == 2);
  CHECK(run.output.find("variants: \"nope\" is not a variant of this scenario") !=
        std::string::npos);
}

}  // namespace
}  // namespace stratasim

namespace stratasim {
namespace {

using testing::kLlama;
using testing::run_cli;
using testing::scenario_path;

// Result files written once per test by the command itself.
std::string result_file(const std::string& name, const std::string& command) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("stratasim_plot_result_" + name + ".json")).string();
  const auto run = run_cli(command + " --json " + path);
  INFO(run.output);
  REQUIRE(run.code == 0);
  return path;
}

void check_result_plot(const std::string& result, const std::string& kind, const std::string& tag) {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("stratasim_plot_r_" + tag + "_" + kind + ".png")).string();
  std::filesystem::remove(out);
  const auto run = run_cli("plot " + result + " --kind " + kind + " -o " + out);
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK(png_size(out) == QSize(1200, 700));
  CHECK(std::filesystem::file_size(out) > 10000);  // a drawn chart, not an empty picture
}

TEST_CASE("plot RESULT.json: evaluate --timeline --json gives every kind") {
  const std::string r = result_file(
      "evaluate", "evaluate " + scenario_path("tiny_2gpu_1layer.json") + " --timeline");
  for (const char* kind : {"timeline", "memory", "breakdown", "pareto"}) check_result_plot(r, kind, "evaluate");
}

TEST_CASE("plot RESULT.json: compare --json gives memory, breakdown and pareto, and names a missing timeline") {
  const std::string r = result_file("compare", "compare " + scenario_path(kLlama));
  for (const char* kind : {"memory", "breakdown", "pareto"}) check_result_plot(r, kind, "compare");
  const auto run = run_cli("plot " + r + " --kind timeline -o " + temp_png("r_compare_timeline"));
  CHECK(run.code == 2);
  CHECK(run.output.find(r + ": prediction.timeline: [] is empty: write it with `stratasim "
                            "evaluate --timeline --json`") != std::string::npos);
  const auto bad = run_cli("plot " + r + " --kind memory --variant nope -o " + temp_png("r_bad"));
  CHECK(bad.code == 2);
  CHECK(bad.output.find("variants: \"nope\" is not a variant of this result") != std::string::npos);
}

TEST_CASE("plot RESULT.json: a compare of several scenarios gives one Pareto chart per scenario") {
  // The tiny 1-layer GPT runs ~700k tokens/s in ~3 GiB: merged with Llama-2 70B (< 600k tokens/s
  // in 13+ GiB) it would dominate every Llama variant and leave Llama no front at all. Each
  // scenario's own chart keeps a front of its own variants.
  const std::string r = result_file(
      "compare2", "compare " + scenario_path(kLlama) + " " + scenario_path("tiny_2gpu_1layer.json"));
  const ResultFile file = read_result_file(r);
  const std::vector<std::string> panels = pareto_panels(file);
  REQUIRE(panels.size() == 2);
  CHECK(panels[0] == "llama2-70b on 512 H100");
  CHECK(panels[1] == "tiny: 1-layer GPT on 2 GPUs");
  const std::vector<ParetoPoint> merged = variants_pareto_points(file, "");
  int llama_on_merged_front = 0;
  for (const ParetoPoint& p : merged) llama_on_merged_front += p.on_front && p.label.rfind("llama2", 0) == 0;
  CHECK(llama_on_merged_front == 0);
  for (const std::string& scenario : panels) {
    CAPTURE(scenario);
    const std::vector<ParetoPoint> own = variants_pareto_points(file, scenario);
    CHECK(std::count_if(own.begin(), own.end(), [](const ParetoPoint& p) { return p.on_front; }) >= 1);
    for (const ParetoPoint& p : own) CHECK(p.label.find(": ") == std::string::npos);  // variant names
  }
  check_result_plot(r, "pareto", "compare2");
  // More scenarios than a picture can show is refused with the count and the limit (exit 2).
  Json many = Json::array();
  const Json one = load_json_file(r)[0];
  for (size_t i = 0; i <= kMaxParetoPanels; ++i) {
    Json copy = one;
    copy["scenario"] = "s" + std::to_string(i);
    many.push_back(copy);
  }
  const std::string big = temp_png("many_scenarios") + ".json";
  write_file_atomically(big, many.dump());
  const auto run = run_cli("plot " + big + " --kind pareto -o " + temp_png("many"));
  CHECK(run.code == 2);
  CHECK(run.output.find(big + ": []: 17 scenarios is more than one picture can show as Pareto charts (at most 16)") !=
        std::string::npos);
}

TEST_CASE("plot RESULT.json: search --json gives pareto, the other kinds say why not") {
  const std::string r = result_file("search", "search " + scenario_path("gpt3_175b_1024_a100.json"));
  check_result_plot(r, "pareto", "search");
  const auto run = run_cli("plot " + r + " --kind memory -o " + temp_png("r_search_memory"));
  CHECK(run.code == 2);
  CHECK(run.output.find("top: (search result) has no memory per candidate") != std::string::npos);
}

TEST_CASE("plot RESULT.json: a JSON file of another kind is named as such") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "stratasim_plot_not_a_result.json").string();
  write_file_atomically(path, "[1, 2]");
  const auto run = run_cli("plot " + path + " --kind memory -o " + temp_png("r_other"));
  CHECK(run.code == 2);
  CHECK(run.output.find(path + ": (top level): [1,2] is not a result file") != std::string::npos);
}

}  // namespace
}  // namespace stratasim
