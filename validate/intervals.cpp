#include "validate/intervals.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/core/units.h"

namespace stratasim {
namespace {

// Linear interpolation between order statistics (the "type 7" sample quantile).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

std::vector<double> errors_of(const std::vector<CaseError>& errors, const std::string& hardware,
                              const std::string& exclude_source, const std::string& family = "") {
  std::vector<double> e;
  for (const CaseError& c : errors) {
    if (c.source != exclude_source && (hardware.empty() || c.hardware == hardware) &&
        (family.empty() || c.family == family)) {
      e.push_back(c.error);
    }
  }
  return e;
}

// The like cases' errors, each less the mean of its source's like cases: the spread within a
// source, its own bias removed. `mean_of_means` receives the like sources' biases' mean.
std::vector<double> within_source_residuals(const std::vector<CaseError>& errors,
                                            const std::string& hardware,
                                            const std::string& exclude_source,
                                            const std::string& family, double& mean_of_means) {
  std::map<std::string, std::pair<double, int>> sums;
  for (const CaseError& c : errors) {
    if (c.source == exclude_source || (!hardware.empty() && c.hardware != hardware) ||
        (!family.empty() && c.family != family)) {
      continue;
    }
    sums[c.source].first += c.error;
    ++sums[c.source].second;
  }
  std::vector<double> residuals;
  mean_of_means = 0;
  for (const auto& [source, s] : sums) mean_of_means += s.first / s.second / sums.size();
  for (const CaseError& c : errors) {
    const auto it = sums.find(c.source);
    if (it == sums.end() || (!hardware.empty() && c.hardware != hardware) ||
        (!family.empty() && c.family != family)) {
      continue;
    }
    residuals.push_back(c.error - it->second.first / it->second.second);
  }
  return residuals;
}

}  // namespace

std::vector<double> source_bias_deviations(const std::vector<CaseError>& errors,
                                           const std::string& exclude_source) {
  std::map<std::string, std::vector<double>> by_source;
  for (const CaseError& c : errors) {
    if (c.source != exclude_source) by_source[c.source].push_back(c.error);
  }
  const double sources = static_cast<double>(by_source.size());
  if (by_source.size() < 2) return {0.0};
  std::map<std::string, double> mean;
  double grand = 0, within_ss = 0, within_df = 0;
  for (const auto& [source, e] : by_source) {
    double m = 0;
    for (double x : e) m += x / e.size();
    mean[source] = m;
    grand += m / sources;
    for (double x : e) within_ss += (x - m) * (x - m);
    within_df += e.size() - 1;
  }
  const double within_var = within_df > 0 ? within_ss / within_df : 0;
  double between = 0, noise = 0;
  for (const auto& [source, e] : by_source) {
    between += (mean[source] - grand) * (mean[source] - grand) / (sources - 1);
    noise += within_var / e.size() / sources;
  }
  const double tau2 = std::max(0.0, between - noise);
  std::vector<double> deviations;
  for (const auto& [source, e] : by_source) {
    const double spread = tau2 + within_var / e.size();
    deviations.push_back(spread > 0 ? (mean[source] - grand) * std::sqrt(tau2 / spread) : 0.0);
  }
  return deviations;
}

std::vector<CaseError> case_errors(const ValidationReport& report) {
  std::vector<CaseError> out;
  for (const CaseResult& c : report.cases) {
    // Intervals are for iteration times: measured memory, speedups (ratios) and one layer's
    // own time (a mechanism check: "layer fwd+bwd s", "MoE layer fwd+bwd s") stay out.
    if (!c.failure.empty() || c.group.find(":memory") != std::string::npos || !c.baseline.empty() ||
        c.metric.find("layer fwd+bwd") != std::string::npos) {
      continue;
    }
    out.push_back({c.group, c.hardware, c.family, c.error, c.predicted, c.published});
  }
  return out;
}

const std::vector<CaseError>& development_errors() {
  static const std::vector<CaseError> errors =
      case_errors(validate_published(load_validation_set({}, true)));
  return errors;
}

std::string device_generation(const std::string& device_name) {
  for (const char* g : {"A100", "H100", "H200", "H800", "B200", "GB200", "V100", "MI300X", "MI250"}) {
    if (device_name.find(g) != std::string::npos) return g;
  }
  return "";
}

std::string strategy_family(const Plan& plan) {
  if (plan.model.transformer.moe.experts > 1) return "mixture of experts";
  if (plan.cp > 1 || plan.model.transformer.seq_len >= kLongContextTokens) return "long context";
  return "dense";
}

PredictionInterval prediction_interval(const std::vector<CaseError>& errors, double predicted_s,
                                       const std::string& hardware, double coverage,
                                       const std::string& exclude_source,
                                       const std::string& family) {
  PredictionInterval p;
  p.coverage = coverage;
  // The most alike cases there are enough of: generation and family, generation, all.
  std::vector<double> e;
  std::string level_hardware = hardware, level_family = family;
  if (!hardware.empty() && !family.empty()) {
    e = errors_of(errors, hardware, exclude_source, family);
    p.basis = std::to_string(e.size()) + " " + hardware + " development cases (" + family + ")";
  }
  if (static_cast<int>(e.size()) < kMinFamilyCases && !hardware.empty()) {
    level_family.clear();
    e = errors_of(errors, hardware, exclude_source);
    p.basis = std::to_string(e.size()) + " " + hardware + " development cases";
    if (static_cast<int>(e.size()) < kMinCases) e.clear();
  }
  if (e.empty()) {
    level_hardware.clear(), level_family.clear();
    e = errors_of(errors, "", exclude_source);
    p.basis = std::to_string(e.size()) + " development cases (all device generations)";
  }
  p.cases = static_cast<int>(e.size());
  if (e.empty()) {
    p.low_s = p.high_s = predicted_s;
    p.basis = "no development cases";
    return p;
  }
  // The chosen cases' errors less their own source's bias (the spread within a source), around
  // the chosen sources' mean bias, plus any bias a source has had (source_bias_deviations): a
  // new prediction is a new source's, whose bias is one more draw from theirs.
  double centre = 0;
  const std::vector<double> residuals =
      within_source_residuals(errors, level_hardware, exclude_source, level_family, centre);
  const std::vector<double> biases = source_bias_deviations(errors, exclude_source);
  std::vector<double> sample;
  sample.reserve(residuals.size() * biases.size());
  for (double b : biases) {
    for (double r : residuals) sample.push_back(centre + b + r);
  }
  if (biases.size() > 1) p.basis += " and the spread of " + std::to_string(biases.size()) + " sources' biases";
  const double tail = (1 - coverage) / 2;
  p.low_s = predicted_s / (1 + quantile(sample, 1 - tail));   // the model was too slow there
  p.high_s = predicted_s / (1 + quantile(sample, tail));      // the model was too fast there
  return p;
}

PredictionInterval model_interval(ModelFamily family, double predicted_s,
                                  const std::string& device_name, double coverage,
                                  const std::string& strategy) {
  if (family == ModelFamily::kOpGraph) {
    PredictionInterval p;
    p.coverage = coverage;
    p.low_s = p.high_s = predicted_s;
    p.basis = "no development cases of operator-graph models";
    return p;
  }
  return prediction_interval(development_errors(), predicted_s, device_generation(device_name),
                             coverage, "", strategy);
}

PredictionInterval plan_interval(const Plan& plan, double predicted_s, double coverage) {
  return model_interval(plan.model.family, predicted_s, plan.hardware.device.name, coverage,
                        strategy_family(plan));
}

std::string interval_text(const PredictionInterval& p) {
  if (p.cases == 0) return "none: " + p.basis;
  return format_seconds(p.low_s) + " - " + format_seconds(p.high_s) + " (errors of " + p.basis + ")";
}

CrossValidation cross_validate(const std::vector<CaseError>& errors, double coverage) {
  CrossValidation out;
  out.coverage = coverage;
  std::map<std::string, SourceCrossResult> by_source;
  int covered = 0;
  for (const CaseError& c : errors) {
    SourceCrossResult& s = by_source[c.source];
    s.source = c.source;
    const PredictionInterval p =
        prediction_interval(errors, c.predicted, c.hardware, coverage, c.source, c.family);
    const bool in = c.measured >= p.low_s && c.measured <= p.high_s;
    ++s.cases;
    s.mape += std::fabs(c.error);
    s.mean_signed_error += c.error;
    s.covered += in;
    covered += in;
  }
  for (auto& [name, s] : by_source) {
    s.mape /= s.cases;
    s.mean_signed_error /= s.cases;
    s.covered /= s.cases;
    out.sources.push_back(s);
  }
  out.cases = static_cast<int>(errors.size());
  out.covered = out.cases > 0 ? double(covered) / out.cases : 0;
  for (const SourceCrossResult& s : out.sources) out.source_covered += s.covered / out.sources.size();
  return out;
}

std::string format_cross_validation(const CrossValidation& c) {
  std::string s;
  char line[160];
  std::snprintf(line, sizeof line,
                "\nleave-one-source-out (each source's %.0f%% intervals from the other sources' "
                "errors; nothing is fitted):\n",
                100 * c.coverage);
  s += line;
  std::snprintf(line, sizeof line, "%-20s %6s %9s %10s %10s\n", "source left out", "cases", "MAPE",
                "mean err", "covered");
  s += line;
  for (const SourceCrossResult& r : c.sources) {
    std::snprintf(line, sizeof line, "%-20s %6d %8.2f%% %+9.2f%% %9.1f%%\n", r.source.c_str(),
                  r.cases, 100 * r.mape, 100 * r.mean_signed_error, 100 * r.covered);
    s += line;
  }
  std::snprintf(line, sizeof line, "%-20s %6d %9s %10s %9.1f%%\n", "all", c.cases, "", "",
                100 * c.covered);
  s += line;
  std::snprintf(line, sizeof line, "%-20s %6zu %9s %10s %9.1f%%\n", "each source once",
                c.sources.size(), "", "", 100 * c.source_covered);
  s += line;
  return s;
}

Json cross_validation_json(const CrossValidation& c) {
  Json sources = Json::array();
  for (const SourceCrossResult& r : c.sources) {
    sources.push_back({{"source", r.source}, {"cases", r.cases}, {"mape", r.mape},
                       {"mean_signed_error", r.mean_signed_error}, {"covered", r.covered}});
  }
  return Json{{"coverage", c.coverage}, {"cases", c.cases}, {"covered", c.covered},
              {"source_covered", c.source_covered}, {"sources", sources}};
}

}  // namespace stratasim
