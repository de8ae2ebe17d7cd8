// Validation against published results, as data: every case file (validate/data/cases/*.json,
// compiled in, plus any --data file) goes through one generic path (case_translation.h), is
// predicted with the analytical engine (the knobs its source left unreported searched, fastest
// feasible strategy that fits), and is compared with what was measured. Groups, tolerances and
// their reasons live in the data (validate/data/rules.json, or a case file's own "rules").
#pragma once

#include <string>
#include <vector>

#include "validate/case_translation.h"

namespace stratasim {

struct ValidationSet {
  CaseRules rules;
  std::vector<TranslatedCase> cases;
  std::vector<std::string> files;  // where they came from, in order
};

// The built-in case files (when `builtin`) and then `files`. A case file is a JSON array of
// cases, or an object {"rules": {...}, "cases": [...]} whose rules (groups, hardware, stacks)
// are added to the built-in ones. Bad files and cases throw InputError naming file and path.
ValidationSet load_validation_set(const std::vector<std::string>& files, bool builtin = true);
// The same from texts already in memory (name, JSON text) — the built-in files use this.
void add_case_text(ValidationSet& set, const std::string& name, std::string_view text);

struct CaseResult {
  std::string id;
  std::string group;       // measured memory goes to "<group>:memory"
  std::string stack;
  std::string hardware;    // device generation: "A100", "H100", ...
  std::string family;      // strategy family of the chosen plan (intervals.h strategy_family)
  std::string metric;      // "iteration s (from tokens/s/GPU)"
  double predicted = 0;    // SI (s or B)
  double published = 0;
  double error = 0;        // (predicted - published) / published
  double rel_rounding = 0;  // half a unit of the published value's last digit, relative
  double excess_error() const;  // |error| beyond the rounding; the tolerance applies to this
  std::string chosen;      // the searched knobs' chosen values
  std::string failure;     // non-empty: no prediction (no feasible strategy fits, ...)
  std::string baseline;    // a speedup: the case it is relative to
};

struct UnsupportedCase {
  std::string id, group, reason;
};

struct ErrorSummary {
  std::string name;  // group, hardware generation, stack or "all"
  int cases = 0;
  double mape = 0;
  double max_abs_error = 0;
  double mean_signed_error = 0;
};

struct GroupSummary : ErrorSummary {
  int failures = 0;  // cases with no prediction (counted at 100% error)
  bool gated = false;
  Tolerance tolerance;
  std::string why;   // the tolerance's reason
  bool within_tolerance = true;
};

struct ValidationReport {
  std::vector<CaseResult> cases;
  std::vector<UnsupportedCase> unsupported;
  std::vector<GroupSummary> groups;
  std::vector<ErrorSummary> by_hardware;  // time metrics only (no memory, no speedups)
  std::vector<ErrorSummary> by_stack;     // time metrics only
  ErrorSummary overall;                   // time metrics only
  bool all_within_tolerance = false;
};

ValidationReport validate_published(const ValidationSet& set);
// The results of one case (one per measured metric); empty when it is not expressible.
std::vector<CaseResult> evaluate_case(const TranslatedCase& c);

std::string format_validation(const ValidationReport& r);
Json validation_json(const ValidationReport& r);
std::string validation_csv(const ValidationReport& r);

}  // namespace stratasim
