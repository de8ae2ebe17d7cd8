// `stratasim plot` writes each chart kind as a PNG of the requested size, without a display.
#include <doctest/doctest.h>

#include <QtGui/QImage>
#include <filesystem>

#include "tests/gui/gui_test_support.h"
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
