// Prediction intervals from the development cases' errors and the leave-one-source-out check,
// worked out by hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "validate/intervals.h"

using namespace stratasim;

namespace {

// Errors -0.2, -0.1, 0, 0.1, 0.2 (source "a") and 0.5 (source "b"), measured = predicted / (1+e).
std::vector<CaseError> six() {
  std::vector<CaseError> e;
  for (double x : {-0.2, -0.1, 0.0, 0.1, 0.2}) e.push_back({"a", "A100", "", x, 1 + x, 1.0});
  e.push_back({"b", "H100", "", 0.5, 1.5, 1.0});
  return e;
}

}  // namespace

TEST_CASE("intervals: the 10th and 90th percentiles of the errors bound the measurement") {
  // Source "a" alone (b left out): type-7 quantiles of {-0.2 .. 0.2}: q10 at 0.4 of the way
  // from -0.2 to -0.1 = -0.16, q90 = 0.16. A prediction of 10 s: measured in
  // [10 / 1.16, 10 / 0.84] = [8.6207, 11.9048].
  const PredictionInterval p = prediction_interval(six(), 10, "A100", 0.8, "b");
  CHECK(p.low_s == doctest::Approx(10 / 1.16));
  CHECK(p.high_s == doctest::Approx(10 / 0.84));
  CHECK(p.cases == 5);
  // Fewer than kMinCases on the generation: all generations are used, and it says so.
  CHECK(p.basis == "5 development cases (all device generations)");
  // With b: {-0.2, -0.1, 0, 0.1, 0.2, 0.5}: q10 at 0.5 -> -0.15, q90 at 4.5 -> 0.35.
  const PredictionInterval all = prediction_interval(six(), 10, "", 0.8);
  CHECK(all.low_s == doctest::Approx(10 / 1.35));
  CHECK(all.high_s == doctest::Approx(10 / 0.85));
  CHECK(prediction_interval({}, 3, "A100").basis == "no development cases");
}

TEST_CASE("intervals: the strategy family's cases where there are enough of them") {
  // 12 dense H100 cases erring by -0.05 .. +0.05 (source "d") and 8 long-context ones by
  // -0.3 .. -0.1 (source "c", every 2/70 from -0.3): a context-parallel prediction takes the 8
  // (kMinFamilyCases): type-7 q10 at 0.7 of the way from -0.3 to -0.3 + 2/70 = -0.28, q90 at
  // 6.3: -0.3 + 6.3 * 2/70 = -0.12. A prediction of 10 s: [10 / 0.88, 10 / 0.72].
  std::vector<CaseError> e;
  for (int i = 0; i < 12; ++i) {
    const double x = -0.05 + 0.1 * i / 11;
    e.push_back({"d", "H100", "dense", x, 1 + x, 1.0});
  }
  for (int i = 0; i < 8; ++i) {
    const double x = -0.3 + 2.0 * i / 70;
    e.push_back({"c", "H100", "long context", x, 1 + x, 1.0});
  }
  const PredictionInterval cp = prediction_interval(e, 10, "H100", 0.8, "", "long context");
  CHECK(cp.cases == 8);
  CHECK(cp.basis == "8 H100 development cases (long context)");
  CHECK(cp.low_s == doctest::Approx(10 / 0.88));
  CHECK(cp.high_s == doctest::Approx(10 / 0.72));
  // Too few of a family (none of mixture of experts): the generation's 20 cases, as before.
  const PredictionInterval moe = prediction_interval(e, 10, "H100", 0.8, "", "mixture of experts");
  CHECK(moe.cases == 20);
  CHECK(moe.basis == "20 H100 development cases");
  // Leaving the family's only source out leaves none of it: the other source's 12 cases.
  const PredictionInterval out = prediction_interval(e, 10, "H100", 0.8, "c", "long context");
  CHECK(out.cases == 12);
  CHECK(out.basis == "12 H100 development cases");
}

TEST_CASE("intervals: leave-one-source-out coverage, source by source") {
  // Source a errs by -0.05, 0, 0.05; b and c by -0.1, 0, 0.1 (measured 1, predicted 1 + e).
  // Leaving a out: {-0.1, -0.1, 0, 0, 0.1, 0.1}: q10 = -0.1, q90 = 0.1, so a case of a with
  // T = 1 + e is covered when T/1.1 <= 1 <= T/0.9: all three. Leaving b out:
  // {-0.1, -0.05, 0, 0, 0.05, 0.1}: q10 = -0.075, q90 = 0.075: only b's 0 is covered; c alike.
  std::vector<CaseError> e;
  for (double x : {-0.05, 0.0, 0.05}) e.push_back({"a", "A100", "", x, 1 + x, 1.0});
  for (const char* s : {"b", "c"}) {
    for (double x : {-0.1, 0.0, 0.1}) e.push_back({s, "A100", "", x, 1 + x, 1.0});
  }
  const CrossValidation c = cross_validate(e);
  REQUIRE(c.sources.size() == 3);
  CHECK(c.sources[0].source == "a");
  CHECK(c.sources[0].covered == doctest::Approx(1.0));
  CHECK(c.sources[0].mape == doctest::Approx(0.1 / 3));
  CHECK(c.sources[1].covered == doctest::Approx(1.0 / 3));
  CHECK(c.sources[2].covered == doctest::Approx(1.0 / 3));
  CHECK(c.covered == doctest::Approx(5.0 / 9));
  CHECK(device_generation("H100-SXM5-80GB") == "H100");
  CHECK(device_generation("x86-cpu-socket").empty());
}

TEST_CASE("intervals: evaluate reports one, validate --cross checks them on the development set") {
  const std::string scenario = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/gpt3_175b_1024_a100.json";
  const std::string out = "intervals_cli_test.json";
  const testing::CliRun run = testing::run_cli("evaluate " + scenario + " --json " + out);
  REQUIRE(run.code == 0);
  CHECK(run.output.find("80% interval") != std::string::npos);
  CHECK(run.output.find("A100 development cases") != std::string::npos);
  std::FILE* f = std::fopen(out.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  std::remove(out.c_str());
  const nlohmann::json j = nlohmann::json::parse(text);
  const double t = j.at("prediction").at("iteration_s");
  CHECK(j.at("interval").at("iteration_low_s").get<double>() < j.at("interval").at("iteration_high_s").get<double>());
  CHECK(j.at("interval").at("cases").get<int>() >= 100);
  CHECK(t > 0);
  // The bar: the 80% intervals, built without the left-out source, cover 75-85% of the
  // development cases (measured 77.3% when this test was written; 75.3% once the intervals
  // took the strategy family's cases: MoE and long-context errors no longer widen the dense
  // cases' intervals, and no other source's cases are like nemo_longseq's short rows).
  const testing::CliRun cross = testing::run_cli("validate --published --cross");
  CHECK(cross.code == 0);
  const size_t at = cross.output.find("leave-one-source-out");
  REQUIRE(at != std::string::npos);
  const size_t all = cross.output.find("\nall ", at);
  REQUIRE(all != std::string::npos);
  const double covered = std::stod(cross.output.substr(cross.output.find_last_of(' ', cross.output.find('%', all + 5)) + 1));
  CHECK(covered >= 75.0);
  CHECK(covered <= 85.0);
}

TEST_CASE("intervals: an operator graph gets none, a transformer its generation's cases") {
  // The development cases are transformer training runs: nothing like a CNN or an image
  // pipeline, so no interval rather than one borrowed from them.
  const PredictionInterval graph = model_interval(ModelFamily::kOpGraph, 2.5, "A100-SXM4-80GB");
  CHECK(graph.cases == 0);
  CHECK(graph.low_s == 2.5);
  CHECK(graph.high_s == 2.5);
  CHECK(interval_text(graph) == "none: no development cases of operator-graph models");
  const PredictionInterval decoder = model_interval(ModelFamily::kDecoder, 2.5, "A100-SXM4-80GB");
  CHECK(decoder.cases >= kMinCases);
  CHECK(decoder.basis.find("A100 development cases") != std::string::npos);
  CHECK(decoder.low_s < decoder.high_s);
  CHECK(interval_text(decoder).find(" (errors of " + decoder.basis + ")") != std::string::npos);
}
