// How sure a prediction is: an interval from the errors the model makes on the development
// cases most like it (validate/data), and the leave-one-source-out check that the interval
// means what it says (`stratasim validate --published --cross`).
//
// A case's error is e = (predicted - measured) / measured, so measured = predicted / (1 + e).
// For a new prediction T the 80% interval is [T / (1 + e_90), T / (1 + e_10)], e_q the q-th
// percentile of the errors a new source could make on the development cases most like it:
// the same device generation and strategy family (mixture of experts, long context, dense)
// where at least kMinFamilyCases are, else the same generation (at least kMinCases), else all
// cases. Each source (a paper, a vendor's table) errs by a bias of its own plus a spread
// around it, and a user's run is a source the development set has not seen, so the errors
// sampled are every like case's deviation from its own source's mean, around the like
// sources' mean, plus each source's bias as a deviation from the mean of all sources' biases
// (a random-effects view: source_bias_deviations). Pooling the like cases alone made the
// interval of a source whose bias none of its like sources shared miss nearly all its cases
// (left out, 33% of Megatron-Bridge's dense rows were covered). Nothing is fitted to the
// cases; leaving a source out changes only which errors form the interval.
#pragma once

#include <string>
#include <vector>

#include "strategies/lowering/plan.h"
#include "strategies/model/model_spec.h"
#include "validate/published.h"

namespace stratasim {

struct CaseError {
  std::string source;    // the case's group (one published source)
  std::string hardware;  // device generation: "A100", "H100", ...
  std::string family;    // strategy_family(): "mixture of experts", "long context", "dense"
  double error = 0;      // (predicted - measured) / measured, iteration time
  double predicted = 0, measured = 0;
};

// The iteration-time errors of a validation report (cases with a prediction).
std::vector<CaseError> case_errors(const ValidationReport& report);

// The built-in development cases' errors, evaluated once per process (about 0.2 s).
const std::vector<CaseError>& development_errors();

// The device generation a device name belongs to ("NVIDIA H100 SXM5 80GB" -> "H100"), or "".
std::string device_generation(const std::string& device_name);

// The strategy family a plan belongs to, for the interval's choice of like cases: "mixture of
// experts" (a model with experts), else "long context" (context parallelism, or sequences of
// kLongContextTokens and more, where attention outweighs the linear layers), else "dense".
// Their errors differ in kind: the development set's MoE cases run 28% fast on average, its
// long-context ones 13% (H100), its dense ones 2%; one interval for all of them was too wide
// for the dense cases and too narrow, in the wrong place, for the others.
inline constexpr int kLongContextTokens = 16384;
std::string strategy_family(const Plan& plan);

// The sources' biases as deviations from their mean, each shrunk to its part beyond the
// noise of a mean of few cases: a source's bias is the mean of its errors m_s (n_s cases),
// the within-source variance s_w^2 is pooled over the sources, the between-source variance
// tau^2 = max(0, var(m_s) - mean(s_w^2 / n_s)) by the method of moments (DerSimonian and
// Laird 1986, unweighted), and source s contributes (m_s - mean m) sqrt(tau^2 / (tau^2 +
// s_w^2 / n_s)) (the empirical-Bayes estimate of its true bias). {0} when fewer than two
// sources remain once `exclude_source` is left out.
std::vector<double> source_bias_deviations(const std::vector<CaseError>& errors,
                                           const std::string& exclude_source = "");

struct PredictionInterval {
  double coverage = 0.8;
  double low_s = 0, high_s = 0;
  int cases = 0;      // development cases whose errors formed it
  std::string basis;  // "20 H100 development cases (long context) and the spread of 12
                      // sources' biases", "251 development cases (all device generations)"
};

inline constexpr int kMinCases = 12;
inline constexpr int kMinFamilyCases = 8;

// The interval for a prediction of `predicted_s` on `hardware` (a generation) in strategy
// `family` ("" for any), from `errors` less those of `exclude_source` (leave-one-source-out).
PredictionInterval prediction_interval(const std::vector<CaseError>& errors, double predicted_s,
                                       const std::string& hardware, double coverage = 0.8,
                                       const std::string& exclude_source = "",
                                       const std::string& family = "");

// The interval for a prediction of `predicted_s` for a model of `family` on `device_name`, from
// the built-in development cases. They are all transformer training runs, so an operator
// graph (a CNN, a recommender, an image pipeline) gets none: cases 0, low = high = the
// prediction, and a basis that says so.
PredictionInterval model_interval(ModelFamily family, double predicted_s,
                                  const std::string& device_name, double coverage = 0.8,
                                  const std::string& strategy = "");
// The same for a lowered plan: its model family, device and strategy family.
PredictionInterval plan_interval(const Plan& plan, double predicted_s, double coverage = 0.8);

// "27.1 s - 31.0 s (errors of 66 H100 development cases)", or "none: no development cases of
// operator-graph models" when no case formed it.
std::string interval_text(const PredictionInterval& p);

struct SourceCrossResult {
  std::string source;
  int cases = 0;
  double mape = 0, mean_signed_error = 0;
  double covered = 0;  // fraction of its cases whose measurement lies in their interval
};

struct CrossValidation {
  double coverage = 0.8;
  std::vector<SourceCrossResult> sources;
  int cases = 0;
  double covered = 0;  // over all cases
  double source_covered = 0;  // the sources' coverages' mean: each source counted once
};

// Every source left out in turn: its cases' intervals come from the other sources' errors.
CrossValidation cross_validate(const std::vector<CaseError>& errors, double coverage = 0.8);

std::string format_cross_validation(const CrossValidation& c);
Json cross_validation_json(const CrossValidation& c);

}  // namespace stratasim
