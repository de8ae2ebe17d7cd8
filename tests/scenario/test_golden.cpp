// The bundled scenarios double as golden tests: every variant's headline numbers must match
// scenarios/expected/<name>.json (regenerate with scripts/regenerate_golden.sh after a
// deliberate model change, and read the diff).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "sim/analytical/analytical_engine.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/lower.h"

using namespace stratasim;

namespace {

void check_close(double actual, double expected, const char* what) {
  CAPTURE(what);
  CHECK(actual == doctest::Approx(expected).epsilon(1e-6));
}

void check_scenario(const std::filesystem::path& file, const std::filesystem::path& golden_file) {
  const Scenario sc = load_scenario(file.string());
  const Json golden = load_json_file(golden_file.string()).at("variants");
  CHECK(golden.size() == sc.variants.size());
  for (const auto& [name, strategy] : sc.variants) {
    CAPTURE(name);
    REQUIRE(golden.contains(name));
    const Json& g = golden.at(name);
    Expected<Plan> plan = lower(sc.model, strategy, sc.hardware);
    if (g.contains("infeasible")) {
      REQUIRE_FALSE(plan.has_value());
      continue;
    }
    REQUIRE(plan.has_value());
    const Prediction p = predict_analytical(*plan);
    check_close(p.iteration_s, g.at("iteration_s").get<double>(), "iteration_s");
    check_close(p.tokens_per_s, g.at("tokens_per_s").get<double>(), "tokens_per_s");
    check_close(p.mfu, g.at("mfu").get<double>(), "mfu");
    check_close(p.bubble_fraction, g.at("bubble_fraction").get<double>(), "bubble_fraction");
    check_close(p.comm_exposed_s, g.at("comm_exposed_s").get<double>(), "comm_exposed_s");
    check_close(p.peak_memory_B, g.at("peak_memory_B").get<double>(), "peak_memory_B");
    CHECK(p.fits == g.at("fits").get<bool>());
  }
}

}  // namespace

TEST_CASE("scenarios: every bundled scenario matches its golden numbers") {
  const std::filesystem::path dir = std::filesystem::path(STRATASIM_SOURCE_DIR) / "scenarios";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    CAPTURE(entry.path().string());
    const auto golden = dir / "expected" / entry.path().filename();
    REQUIRE_MESSAGE(std::filesystem::exists(golden),
                    "no golden file; run scripts/regenerate_golden.sh");
    check_scenario(entry.path(), golden);
    ++checked;
  }
  CHECK(checked >= 7);
}
