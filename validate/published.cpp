#include "validate/published.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "sim/analytical/analytical_engine.h"
#include "sim/cost/block_cost.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search.h"
#include "strategies/lowering/lower.h"
#include "validate/intervals.h"

namespace stratasim {

struct EmbeddedText {
  const char* name;
  std::string_view (*text)();
};
std::vector<EmbeddedText> validation_case_files();  // generated: validate/data/cases/*.json

namespace {

// The device generation a result is summarized under: "H100-SXM5-80GB" -> "H100".
std::string generation_of(const std::string& device) {
  const size_t dash = device.find('-');
  return dash == std::string::npos ? device : device.substr(0, dash);
}

// "micro_batch=2 schedule=interleaved interleave=4": the searched axes' values at `index`
// (recompute_layers only where it applies: with full recomputation, above 0).
std::string chosen_text(const SearchSpace& space, uint64_t index) {
  std::vector<std::string> parts(space.axes.size());
  for (size_t i = space.axes.size(); i-- > 0;) {
    const AxisValues& a = space.axes[i];
    const uint64_t n = a.values.size();
    const int v = static_cast<int>(index % n);
    index /= n;
    if (a.axis == Axis::kRecomputeLayers && a.values[v] == 0) continue;
    parts[i] = std::string(axis_name(a.axis)) + "=" + a.value_text(v);
  }
  std::string out;
  for (const std::string& p : parts) out += p.empty() ? "" : (out.empty() ? "" : " ") + p;
  return out;
}

struct Chosen {
  std::optional<Strategy> strategy;
  std::string knobs;
  std::string why_none;
};

// The fastest feasible strategy that fits, over the scenario's search space (the knobs the
// source did not report), or the scenario's own strategy when nothing is free.
Chosen choose_strategy(const Scenario& s) {
  Chosen c;
  if (s.search.axes.empty() || s.search_derived) {  // no free knobs: the case as stated
    c.strategy = s.strategy;
    return c;
  }
  SearchOptions options;
  options.objective = Objective::kThroughput;
  options.top_k = 1;
  options.threads = 1;
  const SearchResult r = run_search(s.model, s.strategy, s.hardware, s.search, options);
  if (r.top.empty()) {
    for (const auto& [reason, count] : r.pruned) {
      c.why_none += (c.why_none.empty() ? "" : ", ") + reason + " x" + std::to_string(count);
    }
    c.why_none = "no searched strategy is feasible and fits (" + c.why_none + ")";
    return c;
  }
  c.strategy = r.top.front().strategy;
  c.knobs = chosen_text(s.search, r.top.front().index);
  return c;
}

// The forward and backward time of the layer's kernels that belong to its MoE module (router
// to combine, shared experts; LayerOp::module), as exposed in the layer's own timeline. A kernel
// fusing ops from inside and outside the module (the shared experts' add with the residual add
// after the MoELayer) counts by its share of the module's ops.
double moe_module_s(const Block& b, const Plan& plan) {
  const int ops = static_cast<int>(b.graph.ops.size());
  double t = 0;
  for (const std::vector<Kernel>* list : {&b.forward, &b.backward}) {
    const std::vector<KernelTiming> timings = kernel_timings(*list, plan);
    for (size_t i = 0; i < list->size(); ++i) {
      const int first = std::max(0, (*list)[i].first_op), last = std::min(ops - 1, (*list)[i].last_op);
      int inside = 0;
      for (int op = first; op <= last; ++op) inside += (b.graph.ops[op].module & kModuleMoe) != 0;
      if (inside > 0) t += timings[i].exposed_s * inside / (last - first + 1);
    }
  }
  return t;
}

double predicted_value(const CaseMetric& m, const Plan& plan, const Prediction& p) {
  switch (m.kind) {
    case MetricKind::kIterationTime: return p.iteration_s;
    case MetricKind::kLayerTime: {
      const BlockCost cost = block_cost(*plan.layer, plan);
      return cost.forward_s + cost.backward_s;
    }
    case MetricKind::kMoeLayerTime: return moe_module_s(*plan.layer, plan);
    case MetricKind::kMemoryAllocated: return p.peak_allocated_B;
    case MetricKind::kMemoryReserved: return p.peak_reserved_B;
    case MetricKind::kMemoryDevice: return p.peak_memory_B;
    case MetricKind::kSpeedup: return p.samples_per_s;  // divided by the baseline's (validate_published)
  }
  return 0;
}

void add_to(ErrorSummary& s, double error, double abs_error) {
  ++s.cases;
  s.mape += abs_error;
  s.max_abs_error = std::max(s.max_abs_error, abs_error);
  s.mean_signed_error += error;
}

void finish(ErrorSummary& s) {
  if (s.cases == 0) return;
  s.mape /= s.cases;
  s.mean_signed_error /= s.cases;
}

std::vector<ErrorSummary> summaries_by(const std::vector<CaseResult>& cases,
                                       std::string CaseResult::*key) {
  std::map<std::string, ErrorSummary> by;
  for (const CaseResult& c : cases) {
    // Time metrics only: measured memory and speedups (ratios) have their own groups.
    if (!c.failure.empty() || c.group.find(":memory") != std::string::npos || !c.baseline.empty()) continue;
    ErrorSummary& s = by[c.*key];
    s.name = c.*key;
    add_to(s, c.error, c.excess_error());
  }
  std::vector<ErrorSummary> out;
  for (auto& [name, s] : by) {
    finish(s);
    out.push_back(s);
  }
  return out;
}

const GroupRule* rule_named(const CaseRules& rules, const std::string& group) {
  for (const GroupRule& g : rules.groups) {
    if (g.group == group) return &g;
  }
  return nullptr;
}

GroupSummary summarize_group(const std::string& name, const std::vector<CaseResult>& cases,
                             const CaseRules& rules) {
  GroupSummary g;
  g.name = name;
  for (const CaseResult& c : cases) {
    if (c.group != name) continue;
    if (!c.failure.empty()) ++g.failures;
    add_to(g, c.failure.empty() ? c.error : -1.0, c.failure.empty() ? c.excess_error() : 1.0);
  }
  finish(g);
  const size_t colon = name.find(":memory");
  const GroupRule* rule = rule_named(rules, name.substr(0, colon));
  const bool memory = colon != std::string::npos;
  const std::optional<Tolerance>& tol = !rule ? std::nullopt
                                        : memory ? rule->memory_tolerance : rule->tolerance;
  if (tol) {
    g.gated = true;
    g.tolerance = *tol;
    g.why = memory ? rule->memory_why : rule->why;
    g.within_tolerance = g.mape <= g.tolerance.mape &&
                         (g.tolerance.max_error <= 0 || g.max_abs_error <= g.tolerance.max_error);
  }
  return g;
}

// A speedup case's prediction over its baseline case's predicted samples/s.
void divide_by_baselines(std::vector<CaseResult>& cases, const ValidationSet& set) {
  std::map<std::string, double> baseline;  // id -> predicted samples/s
  for (CaseResult& r : cases) {
    if (r.baseline.empty() || !r.failure.empty()) continue;
    if (!baseline.contains(r.baseline)) {
      auto it = std::find_if(set.cases.begin(), set.cases.end(),
                             [&](const TranslatedCase& c) { return c.id == r.baseline; });
      double rate = 0;
      if (it != set.cases.end() && it->speedup_reference) {
        TranslatedCase reference = *it;
        reference.unsupported.clear();
        reference.metrics = {CaseMetric{MetricKind::kSpeedup, "samples/s", 1, 0, it->id}};
        const std::vector<CaseResult> own = evaluate_case(reference);
        if (!own.empty() && own.front().failure.empty()) rate = own.front().predicted;
      }
      baseline[r.baseline] = rate;
    }
    const double rate = baseline[r.baseline];
    if (rate <= 0) {
      r.failure = "its baseline case " + r.baseline + " has no prediction";
      continue;
    }
    r.predicted /= rate;
    r.error = (r.predicted - r.published) / r.published;
  }
}

}  // namespace

double CaseResult::excess_error() const {
  return std::max(0.0, std::fabs(error) - rel_rounding);
}

void add_case_text(ValidationSet& set, const std::string& name, std::string_view text) {
  const Json doc = parse_json_text(text, name);
  const JsonNode root(doc, name, "");
  std::optional<JsonNode> cases;
  if (root.is_array()) {
    cases = root;
  } else if (root.is_object()) {
    root.allow_keys({"description", "rules", "cases"});
    if (auto r = root.find("rules")) merge_case_rules(set.rules, read_case_rules(*r));
    cases = root.at("cases");
  }
  if (!cases || !cases->is_array()) {
    root.fail("must be an array of cases or an object {\"rules\": {...}, \"cases\": [...]}");
  }
  set.files.push_back(name);
  for (size_t i = 0; i < cases->size(); ++i) {
    set.cases.push_back(translate_case(cases->element(i), set.rules));
  }
}

namespace {

// The case files `paths` name: a file itself, a directory every *.json directly inside it
// (sorted, as validate/data/cases/ is read).
std::vector<std::string> case_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> inside;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      if (e.is_regular_file(ec) && e.path().extension() == ".json") inside.push_back(e.path().string());
    }
    std::sort(inside.begin(), inside.end());
    out.insert(out.end(), inside.begin(), inside.end());
  }
  return out;
}

}  // namespace

ValidationSet load_validation_set(const std::vector<std::string>& files, bool builtin) {
  ValidationSet set;
  set.rules = builtin_case_rules();
  if (builtin) {
    for (const EmbeddedText& f : validation_case_files()) add_case_text(set, f.name, f.text());
  }
  for (const std::string& path : case_files(files)) {
    const Json doc = load_json_file(path);
    add_case_text(set, path, json_text(doc));
  }
  return set;
}

std::vector<CaseResult> evaluate_case(const TranslatedCase& c) {
  if (!c.unsupported.empty()) return {};
  std::vector<CaseResult> out;
  CaseResult base;
  base.id = c.id;
  base.group = c.group;
  base.stack = c.stack;
  try {
    const Scenario s = read_scenario(c.scenario, "validation case " + c.id);
    base.hardware = generation_of(s.hardware.device.name);
    const Chosen chosen = choose_strategy(s);
    base.chosen = chosen.knobs;
    if (!c.batch_note.empty()) base.chosen += (base.chosen.empty() ? "" : " ") + c.batch_note;
    std::optional<Plan> plan;
    if (chosen.strategy) {
      Expected<Plan> lowered = lower(s.model, *chosen.strategy, s.hardware);
      if (lowered) {
        plan = std::move(*lowered);
        base.family = strategy_family(*plan);
      } else {
        base.failure = lowered.error().detail;
      }
    } else {
      base.failure = chosen.why_none;
    }
    const Prediction p = plan ? predict_analytical(*plan) : Prediction{};
    if (plan && !p.fits) base.chosen += (base.chosen.empty() ? "" : " ") + std::string("[predicted not to fit]");
    for (const CaseMetric& m : c.metrics) {
      CaseResult r = base;
      if (is_memory(m.kind)) r.group += ":memory";
      r.metric = m.label;
      r.baseline = m.baseline;
      r.published = m.published;
      r.rel_rounding = m.rel_rounding;
      if (plan && m.kind == MetricKind::kMoeLayerTime && !plan->model.transformer.moe.enabled()) {
        r.failure = "an MoE layer's time measured, but the model has no experts";
      } else if (plan) {
        r.predicted = predicted_value(m, *plan, p);
        if (m.kind == MetricKind::kIterationTime) r.predicted *= c.batch_scale;
        r.error = (r.predicted - r.published) / r.published;
      }
      out.push_back(r);
    }
  } catch (const InputError& e) {  // a case the rules turn into a bad scenario is reported
    base.failure = std::string("scenario rejected: ") + e.what();
    base.metric = c.metrics.empty() ? "?" : c.metrics.front().label;
    out.push_back(base);
  }
  return out;
}

ValidationReport validate_published(const ValidationSet& set) {
  ValidationReport r;
  std::vector<std::string> order;
  for (const TranslatedCase& c : set.cases) {
    if (!c.unsupported.empty()) {
      r.unsupported.push_back({c.id, c.group, c.unsupported});
      continue;
    }
    for (CaseResult& res : evaluate_case(c)) {
      if (std::find(order.begin(), order.end(), res.group) == order.end()) {
        order.push_back(res.group);
      }
      r.cases.push_back(std::move(res));
    }
  }
  divide_by_baselines(r.cases, set);
  r.all_within_tolerance = true;
  for (const std::string& name : order) {
    r.groups.push_back(summarize_group(name, r.cases, set.rules));
    r.all_within_tolerance = r.all_within_tolerance && r.groups.back().within_tolerance;
  }
  r.by_hardware = summaries_by(r.cases, &CaseResult::hardware);
  r.by_stack = summaries_by(r.cases, &CaseResult::stack);
  r.overall.name = "all";
  for (const ErrorSummary& s : r.by_hardware) {
    r.overall.cases += s.cases;
    r.overall.mape += s.mape * s.cases;
    r.overall.mean_signed_error += s.mean_signed_error * s.cases;
    r.overall.max_abs_error = std::max(r.overall.max_abs_error, s.max_abs_error);
  }
  finish(r.overall);
  return r;
}

}  // namespace stratasim
