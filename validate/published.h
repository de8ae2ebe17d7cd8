// Validation against published results: each case names its source and its tolerance, and
// the report says per case and per group whether the tolerance holds (ctest gates on it).
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_reader.h"

namespace stratasim {

struct PublishedCase {
  std::string id;
  std::string group;   // "n21_t1", "mlm2020", "k22_layer", "zero_fig1", "k22_activation"
  std::string source;
  Json data;           // the case as published (model, parallel, hardware, measured)
};

struct CaseResult {
  std::string id;
  std::string group;
  std::string metric;     // "TFLOP/s per GPU", "iteration s", ...
  double predicted = 0;
  double published = 0;
  double error = 0;       // (predicted - published) / published
  double rounding = 0;    // half a unit of the published value's last digit (1.9 -> 0.05)
  // Relative error beyond the published value's rounding; the tolerance applies to this.
  double excess_error() const;
  std::string chosen;     // knobs the paper did not report and the tool searched
  std::string failure;    // non-empty when no prediction could be made
};

struct GroupSummary {
  std::string group;
  std::string rule;       // "MAPE <= 10%" or "every case within 1%"
  int cases = 0;
  double mape = 0;
  double max_abs_error = 0;
  bool within_tolerance = false;
};

struct ValidationReport {
  std::vector<CaseResult> cases;
  std::vector<GroupSummary> groups;
  bool all_within_tolerance = false;
};

// Empty path: the cases compiled into the binary (validate/data/*.json).
std::vector<PublishedCase> load_published_cases(const std::string& path = "");
std::string published_data_default_path();  // "" (built-in data)

CaseResult evaluate_case(const PublishedCase& c);
ValidationReport validate_published(const std::vector<PublishedCase>& cases);

std::string format_validation(const ValidationReport& r);
Json validation_json(const ValidationReport& r);

}  // namespace stratasim
