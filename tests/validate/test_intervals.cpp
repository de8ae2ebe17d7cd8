// Prediction intervals from the development cases' errors and the leave-one-source-out check,
// worked out by hand.
#include <doctest/doctest.h>

#include <cmath>

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
  CHECK(source_bias_deviations(six(), "b") == std::vector<double>{0.0});  // one source: no spread
  // With b, two sources: a's bias (mean error) 0 over 5 cases, b's 0.5 over 1; their mean 0.25.
  // Within a source the variance is (0.04 + 0.01 + 0 + 0.01 + 0.04) / 4 = 0.025 (b adds no
  // degree of freedom); the biases' variance 2 x 0.25^2 / 1 = 0.125, of which the noise of a
  // mean of n cases accounts for (0.025 / 5 + 0.025 / 1) / 2 = 0.015: tau^2 = 0.11. Each bias
  // deviation shrunk: a -0.25 sqrt(0.11 / (0.11 + 0.005)), b +0.25 sqrt(0.11 / (0.11 + 0.025)).
  const double da = -0.25 * std::sqrt(0.11 / 0.115), db = 0.25 * std::sqrt(0.11 / 0.135);
  const std::vector<double> dev = source_bias_deviations(six());
  REQUIRE(dev.size() == 2);
  CHECK(dev[0] == doctest::Approx(da));
  CHECK(dev[1] == doctest::Approx(db));
  // The sample: 0.25 + deviation + each case's error less its source's bias (a: -0.2 .. 0.2,
  // b: 0), twelve values; those with a's deviation all lie below those with b's. Type-7 q10 at
  // 1.1: 0.25 + da - 0.1 + 0.1 x 0.1; q90 at 9.9: 0.25 + db + 0 + 0.9 x 0.1.
  const PredictionInterval all = prediction_interval(six(), 10, "", 0.8);
  CHECK(all.low_s == doctest::Approx(10 / (1 + 0.25 + db + 0.09)));
  CHECK(all.high_s == doctest::Approx(10 / (1 + 0.25 + da - 0.09)));
  CHECK(all.basis == "6 development cases (all device generations) and the spread of 2 sources' biases");
  CHECK(prediction_interval({}, 3, "A100").basis == "no development cases");
}

TEST_CASE("intervals: the strategy family's cases where there are enough of them") {
  // 12 dense H100 cases erring by -0.05 .. +0.05 (source "d", bias 0) and 8 long-context ones
  // by -0.3 .. -0.1 (source "c", every 2/70 from -0.3, bias -0.2): a context-parallel
  // prediction takes the 8 (kMinFamilyCases), each less c's bias (r_i = -0.1 + 2i/70), around
  // c's bias, plus the two sources' shrunk bias deviations. Within-source variance: d's squares
  // (0.1/11)^2 x 143 + c's (2/70)^2 x 42 over 11 + 7 degrees of freedom; the biases' variance
  // 2 x 0.1^2 = 0.02 less the noise (w/12 + w/8) / 2.
  const double w = ((0.1 / 11) * (0.1 / 11) * 143 + (2.0 / 70) * (2.0 / 70) * 42) / 18;
  const double tau2 = 0.02 - (w / 12 + w / 8) / 2;
  const double dd = 0.1 * std::sqrt(tau2 / (tau2 + w / 12)), dc = -0.1 * std::sqrt(tau2 / (tau2 + w / 8));
  // The 16 values -0.2 + dc + r_i and -0.2 + dd + r_i sorted: c's first seven, d's r_0, c's
  // r_7, d's r_1 .. r_7. Type-7 q10 at 1.5 lies between c's r_1 and r_2; q90 at 13.5 between
  // d's r_5 and r_6. A prediction of 10 s: [10 / (1 + q90), 10 / (1 + q10)].
  const double q10 = -0.2 + dc - 0.1 + 1.5 * 2 / 70, q90 = -0.2 + dd - 0.1 + 5.5 * 2 / 70;
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
  CHECK(cp.basis == "8 H100 development cases (long context) and the spread of 2 sources' biases");
  CHECK(cp.low_s == doctest::Approx(10 / (1 + q90)));
  CHECK(cp.high_s == doctest::Approx(10 / (1 + q10)));
  // Too few of a family (none of mixture of experts): the generation's 20 cases, as before.
  const PredictionInterval moe = prediction_interval(e, 10, "H100", 0.8, "", "mixture of experts");
  CHECK(moe.cases == 20);
  CHECK(moe.basis == "20 H100 development cases and the spread of 2 sources' biases");
  // Leaving the family's only source out leaves none of it: the other source's 12 cases.
  const PredictionInterval out = prediction_interval(e, 10, "H100", 0.8, "c", "long context");
  CHECK(out.cases == 12);
  CHECK(out.basis == "12 H100 development cases");  // one source left: no spread of biases
}

TEST_CASE("intervals: leave-one-source-out coverage, source by source") {
  // Source a errs by -0.05, 0, 0.05; b and c by -0.1, 0, 0.1 (measured 1, predicted 1 + e).
  // Every bias is 0, so the spread of biases is {0, 0}: the sample is the remaining cases'
  // errors twice. Leaving a out: {-0.1, -0.1, 0, 0, 0.1, 0.1} x 2: q10 = -0.1, q90 = 0.1, so a
  // case of a with T = 1 + e is covered when T/1.1 <= 1 <= T/0.9: all three. Leaving b out:
  // {-0.1, -0.05, 0, 0, 0.05, 0.1} x 2: q10 at 1.1 = -0.095, q90 = 0.095: only b's 0 is
  // covered; c alike.
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
  CHECK(c.source_covered == doctest::Approx((1 + 1.0 / 3 + 1.0 / 3) / 3));
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
  // took the strategy family's cases; 82.9% of the cases and 80.2% of each source's on
  // average once a new source's bias is drawn from the spread of the others', where pooling
  // the like cases gave 75.4% and 76.8%; 82.0% and 77.4% with NeMo AutoModel's three rows;
  // 78.8% and 76.6% before the DeepSpeed ZeRO-3 (ZeRO++ blog, V100) and PyTorch FSDP (IBM,
  // A100/H100) sources came in). With them 74.7% and 68.0%: no other source is like either
  // (the only V100 rows err by 2%, no other case runs the pytorch-fsdp stack), so their
  // intervals are too narrow for them (16.7% and 50% covered): the bar is not met
  // and is reported so. Once the FSDP rows stopped being read as compiled ("no torch.compile"),
  // 75.1% and 71.6% (the FSDP source 100% covered; the ZeRO-3 one still 16.7%); 76.2% and 73.4%
  // with eager SwiGLU and FMS's model code; 80.1% and 77.3% once three more MoE sources came in
  // (Megatron-MoE-ModelZoo, xtuner/Pai-Megatron-Patch on H800, Megatron-LM's MoE recipes):
  // the Megatron-Bridge MoE rows, the only MoE source of their kind before, are now 92.9%
  // covered by the others' errors (14.3% before). Both views are inside the 75-85%.
  // With the H100's measured exchange rate beside compute (ep_overlap_rate) the MoE rows err
  // less and the intervals narrow: 76.0% and 75.3%. The floors sit just under what is
  // measured (75.5% and 75.0%): a change that narrows the intervals further fails here.
  const testing::CliRun cross = testing::run_cli("validate --published --cross");
  CHECK(cross.code == 0);
  const size_t at = cross.output.find("leave-one-source-out");
  REQUIRE(at != std::string::npos);
  const size_t all = cross.output.find("\nall ", at);
  REQUIRE(all != std::string::npos);
  const double covered = std::stod(cross.output.substr(cross.output.find_last_of(' ', cross.output.find('%', all + 5)) + 1));
  CHECK(covered >= 75.5);
  CHECK(covered <= 85.0);
  // Each source counted once: a new source is what a user's run is.
  const size_t once = cross.output.find("\neach source once ", at);
  REQUIRE(once != std::string::npos);
  const double per_source = std::stod(cross.output.substr(cross.output.find_last_of(' ', cross.output.find('%', once + 5)) + 1));
  CHECK(per_source >= 75.0);
  CHECK(per_source <= 85.0);
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
