// The validation report as text (per case, per group, per hardware generation and stack,
// overall, and the cases not expressible yet), JSON and CSV.
#include <cstdio>

#include "sim/core/units.h"
#include "validate/published.h"

namespace stratasim {
namespace {

// Values in the unit a reader expects: seconds, or GiB for memory.
double shown(const CaseResult& c, double v) {
  return c.group.find(":memory") != std::string::npos ? v / kGiB : v;
}

std::string case_line(const CaseResult& c) {
  char buf[640];
  if (!c.failure.empty()) {
    std::snprintf(buf, sizeof buf, "%-52s %-34s  no prediction: %s\n", c.id.c_str(),
                  c.metric.c_str(), c.failure.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%-52s %-34s %11.4g %11.4g %+7.1f%%  %s\n", c.id.c_str(),
                  c.metric.c_str(), shown(c, c.predicted), shown(c, c.published), 100 * c.error,
                  c.chosen.c_str());
  }
  return buf;
}

std::string summary_line(const ErrorSummary& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-22s %6d %7.2f%% %9.2f%% %+9.2f%%", s.name.c_str(), s.cases,
                100 * s.mape, 100 * s.max_abs_error, 100 * s.mean_signed_error);
  return buf;
}

std::string rule_text(const GroupSummary& g) {
  if (!g.gated) return "reported, not gated";
  char buf[96];
  if (g.tolerance.max_error > 0) {
    std::snprintf(buf, sizeof buf, "MAPE <= %.1f%%, max <= %.1f%%", 100 * g.tolerance.mape,
                  100 * g.tolerance.max_error);
  } else {
    std::snprintf(buf, sizeof buf, "MAPE <= %.1f%%", 100 * g.tolerance.mape);
  }
  return buf;
}

Json summary_json(const ErrorSummary& s) {
  return {{"name", s.name}, {"cases", s.cases}, {"mape", s.mape},
          {"max_abs_error", s.max_abs_error}, {"mean_signed_error", s.mean_signed_error}};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace

std::string format_validation(const ValidationReport& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-52s %-34s %11s %11s %8s  %s\n", "case", "metric (s; GiB)",
                "predicted", "published", "error", "searched knobs");
  std::string out = buf;
  for (const CaseResult& c : r.cases) out += case_line(c);
  std::snprintf(buf, sizeof buf, "\n%-22s %6s %8s %10s %10s  %-30s %s\n", "group", "cases",
                "MAPE", "max |err|", "mean err", "tolerance", "result");
  out += buf;
  for (const GroupSummary& g : r.groups) {
    out += summary_line(g);
    std::snprintf(buf, sizeof buf, "  %-30s %s%s\n", rule_text(g).c_str(),
                  !g.gated ? "-" : g.within_tolerance ? "pass" : "FAIL",
                  g.failures ? (" (" + std::to_string(g.failures) + " without prediction)").c_str()
                             : "");
    out += buf;
  }
  out += "\niteration time by hardware generation, software stack, and overall:\n";
  for (const ErrorSummary& s : r.by_hardware) out += summary_line(s) + "\n";
  for (const ErrorSummary& s : r.by_stack) out += summary_line(s) + "\n";
  out += summary_line(r.overall) + "\n";
  if (!r.unsupported.empty()) {
    out += "\nnot expressible yet (" + std::to_string(r.unsupported.size()) + " cases):\n";
    for (const UnsupportedCase& u : r.unsupported) {
      out += "  " + u.id + ": " + u.reason + "\n";
    }
  }
  out += "(errors within the rounding of the published value count as zero; error = "
         "(predicted - published) / published, so negative is too fast / too small)\n";
  out += r.all_within_tolerance ? "all gated groups within tolerance\n"
                                : "SOME GROUPS EXCEED TOLERANCE\n";
  return out;
}

Json validation_json(const ValidationReport& r) {
  Json cases = Json::array(), groups = Json::array(), unsupported = Json::array();
  for (const CaseResult& c : r.cases) {
    cases.push_back({{"id", c.id}, {"group", c.group}, {"stack", c.stack},
                     {"hardware", c.hardware}, {"family", c.family}, {"metric", c.metric},
                     {"baseline", c.baseline}, {"predicted", c.predicted},
                     {"published", c.published}, {"error", c.error}, {"chosen", c.chosen},
                     {"failure", c.failure}});
  }
  for (const GroupSummary& g : r.groups) {
    Json j = summary_json(g);
    j["failures"] = g.failures;
    j["gated"] = g.gated;
    j["rule"] = rule_text(g);
    j["why"] = g.why;
    j["within_tolerance"] = g.within_tolerance;
    groups.push_back(j);
  }
  for (const UnsupportedCase& u : r.unsupported) {
    unsupported.push_back({{"id", u.id}, {"group", u.group}, {"reason", u.reason}});
  }
  Json by_hw = Json::array(), by_stack = Json::array();
  for (const ErrorSummary& s : r.by_hardware) by_hw.push_back(summary_json(s));
  for (const ErrorSummary& s : r.by_stack) by_stack.push_back(summary_json(s));
  return Json{{"cases", cases},
              {"groups", groups},
              {"by_hardware", by_hw},
              {"by_stack", by_stack},
              {"overall", summary_json(r.overall)},
              {"not_expressible", unsupported},
              {"all_within_tolerance", r.all_within_tolerance}};
}

std::string validation_csv(const ValidationReport& r) {
  std::string out = "id,group,stack,hardware,metric,predicted,published,error,chosen,failure\n";
  char num[96];
  for (const CaseResult& c : r.cases) {
    std::snprintf(num, sizeof num, "%.6g,%.6g,%.6g", c.predicted, c.published, c.error);
    out += csv_field(c.id) + "," + csv_field(c.group) + "," + csv_field(c.stack) + "," +
           csv_field(c.hardware) + "," + csv_field(c.metric) + "," + num + "," +
           csv_field(c.chosen) + "," + csv_field(c.failure) + "\n";
  }
  return out;
}

}  // namespace stratasim
