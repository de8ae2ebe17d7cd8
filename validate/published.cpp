#include "validate/published.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace stratasim {

std::string_view published_cases_text();
std::string_view activation_cases_text();

namespace {

std::string group_of(const std::string& id) {
  if (id.rfind("n21_t1", 0) == 0) return "n21_t1";
  if (id.rfind("mlm2020", 0) == 0) return "mlm2020";
  if (id.rfind("k22_act", 0) == 0) return "k22_activation";
  if (id.rfind("k22_", 0) == 0) return "k22_layer";
  if (id.rfind("zero_", 0) == 0) return "zero_fig1";
  return "other";
}

// Tolerances, one per group (Issue: Narayanan rows within 10% MAPE without per-row tuning;
// ZeRO and activation memory to 1%). Groups whose mechanisms are only partly modelled carry
// a looser gate that still fails on a regression.
struct Tolerance {
  double limit;
  bool per_case;  // every case within the limit, rather than the group's MAPE
};

Tolerance tolerance_of(const std::string& group) {
  static const std::map<std::string, Tolerance> table = {
      {"n21_t1", {0.10, false}},       {"zero_fig1", {0.01, true}},
      {"k22_activation", {0.01, true}}, {"k22_layer", {0.15, false}},
      {"mlm2020", {0.20, false}}};
  auto it = table.find(group);
  return it == table.end() ? Tolerance{0.10, false} : it->second;
}

void append_cases(std::vector<PublishedCase>& out, const Json& doc, const std::string& name) {
  if (!doc.is_array()) throw InputError(name + ": validation data must be a JSON array of cases");
  for (const Json& c : doc) {
    if (!c.is_object() || !c.contains("id") || !c.at("id").is_string()) {
      throw InputError(name + ": every validation case must be an object with a string \"id\"");
    }
    PublishedCase pc;
    pc.id = c.at("id").get<std::string>();
    pc.group = group_of(pc.id);
    pc.source = c.value("source", "");
    pc.data = c;
    out.push_back(std::move(pc));
  }
}

}  // namespace

std::string published_data_default_path() { return ""; }

double CaseResult::excess_error() const {
  if (published == 0) return std::fabs(error);
  return std::max(0.0, std::fabs(predicted - published) - rounding) / std::fabs(published);
}

std::vector<PublishedCase> load_published_cases(const std::string& path) {
  std::vector<PublishedCase> cases;
  if (!path.empty()) {
    append_cases(cases, load_json_file(path), path);
    return cases;
  }
  append_cases(cases, parse_json_text(published_cases_text(), "validate/data/published.json"),
               "validate/data/published.json");
  append_cases(cases,
               parse_json_text(activation_cases_text(), "validate/data/korthikanti_activation.json"),
               "validate/data/korthikanti_activation.json");
  return cases;
}

ValidationReport validate_published(const std::vector<PublishedCase>& cases) {
  ValidationReport r;
  std::map<std::string, GroupSummary> groups;
  std::vector<std::string> order;
  for (const PublishedCase& c : cases) {
    r.cases.push_back(evaluate_case(c));
    const CaseResult& res = r.cases.back();
    if (!groups.count(c.group)) order.push_back(c.group);
    GroupSummary& g = groups[c.group];
    g.group = c.group;
    ++g.cases;
    const double e = res.failure.empty() ? res.excess_error() : 1.0;
    g.mape += e;
    g.max_abs_error = std::max(g.max_abs_error, e);
  }
  r.all_within_tolerance = true;
  for (const std::string& name : order) {
    GroupSummary g = groups[name];
    g.mape /= g.cases;
    const Tolerance t = tolerance_of(name);
    char rule[64];
    std::snprintf(rule, sizeof rule, t.per_case ? "every case within %.0f%%" : "MAPE <= %.0f%%",
                  100 * t.limit);
    g.rule = rule;
    g.within_tolerance = (t.per_case ? g.max_abs_error : g.mape) <= t.limit;
    r.all_within_tolerance = r.all_within_tolerance && g.within_tolerance;
    r.groups.push_back(g);
  }
  return r;
}

std::string format_validation(const ValidationReport& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-42s %-22s %12s %12s %8s  %s\n", "case", "metric", "predicted",
                "published", "error", "searched knobs");
  out += buf;
  for (const CaseResult& c : r.cases) {
    if (!c.failure.empty()) {
      std::snprintf(buf, sizeof buf, "%-42s %-22s  no prediction: %s\n", c.id.c_str(),
                    c.metric.c_str(), c.failure.c_str());
    } else {
      std::snprintf(buf, sizeof buf, "%-42s %-22s %12.4g %12.4g %+7.1f%%  %s\n", c.id.c_str(),
                    c.metric.c_str(), c.predicted, c.published, 100 * c.error, c.chosen.c_str());
    }
    out += buf;
  }
  out += "\n";
  std::snprintf(buf, sizeof buf, "%-16s %6s %8s %10s  %-24s %s\n", "group", "cases", "MAPE",
                "max |err|", "tolerance", "result");
  out += buf;
  for (const GroupSummary& g : r.groups) {
    std::snprintf(buf, sizeof buf, "%-16s %6d %7.2f%% %9.2f%%  %-24s %s\n", g.group.c_str(),
                  g.cases, 100 * g.mape, 100 * g.max_abs_error, g.rule.c_str(),
                  g.within_tolerance ? "pass" : "FAIL");
    out += buf;
  }
  out += "(errors within the rounding of the published value count as zero)\n";
  out += r.all_within_tolerance ? "all groups within tolerance\n" : "SOME GROUPS EXCEED TOLERANCE\n";
  return out;
}

Json validation_json(const ValidationReport& r) {
  Json cases = Json::array(), groups = Json::array();
  for (const CaseResult& c : r.cases) {
    cases.push_back({{"id", c.id}, {"group", c.group}, {"metric", c.metric},
                     {"predicted", c.predicted}, {"published", c.published}, {"error", c.error},
                     {"chosen", c.chosen}, {"failure", c.failure}});
  }
  for (const GroupSummary& g : r.groups) {
    groups.push_back({{"group", g.group}, {"cases", g.cases}, {"mape", g.mape},
                      {"max_abs_error", g.max_abs_error}, {"rule", g.rule},
                      {"within_tolerance", g.within_tolerance}});
  }
  return Json{{"cases", cases}, {"groups", groups}, {"all_within_tolerance", r.all_within_tolerance}};
}

}  // namespace stratasim
