// The `stratasim` Python module's native part (_stratasim): evaluate, simulate, search and
// compare on a scenario file or on a scenario given as JSON text (the Python side turns a dict
// into it), each returning the JSON the CLI's --json writes, as text. stratasim/__init__.py
// parses it into plain dicts and adds column views for pandas. Bad input raises ValueError with
// the CLI's message (file, JSON path, value, rule); nothing here prints or exits.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/compare/compare.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/prediction/prediction_json.h"
#include "sim/scenario/scenario.h"
#include "sim/search/search.h"
#include "sim/search/search_json.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#ifdef STRATASIM_WITH_SIMGRID
#include "sim/simgrid/simgrid_engine.h"
#endif

namespace py = pybind11;

namespace stratasim {
namespace {

// `path` names a scenario file; `text` (when not empty) is the scenario itself, named `path`
// in messages. `sets` are the CLI's --set overrides.
Scenario load(const std::string& path, const std::string& text, const std::vector<std::string>& sets) {
  if (text.empty()) return load_scenario(path, sets);
  Json doc = parse_json_text(text, path);
  for (const std::string& s : sets) apply_override(doc, s);
  return read_scenario(doc, path);
}

Strategy pick_variant(const Scenario& sc, const std::string& variant) {
  if (variant.empty()) return sc.strategy;
  for (const auto& [name, s] : sc.variants) {
    if (name == variant) return s;
  }
  throw InputError(sc.file, "variants", "\"" + variant + "\"", "is not a variant of this scenario");
}

Plan lowered(const Scenario& sc, const Strategy& s, const std::string& variant) {
  Expected<Plan> plan = lower(sc.model, s, sc.hardware);
  if (!plan) {
    const Infeasible& why = plan.error();
    const std::string where = variant.empty() ? "strategy" : "variants." + variant;
    throw InputError(sc.file, why.field.empty() ? where : where + "." + why.field, "infeasible",
                     "(" + std::string(reason_name(why.reason)) + "): " + why.detail);
  }
  return std::move(*plan);
}

std::string prediction_text(const Scenario& sc, const Strategy& s, const Prediction& p) {
  const Json out{{"scenario", sc.name}, {"file", sc.file}, {"model", sc.model.name},
                 {"cluster", sc.hardware.name}, {"devices", sc.hardware.num_devices},
                 {"strategy", to_json(s)}, {"prediction", to_json(p)}};
  return json_text(out);
}

std::string evaluate(const std::string& path, const std::string& text, const std::vector<std::string>& sets,
                     const std::string& variant, bool timeline) {
  const Scenario sc = load(path, text, sets);
  const Strategy s = pick_variant(sc, variant);
  EngineOptions options;
  options.timeline = timeline;
  return prediction_text(sc, s, predict_analytical(lowered(sc, s, variant), options));
}

std::string simulate(const std::string& path, const std::string& text, const std::vector<std::string>& sets,
                     const std::string& variant) {
#ifdef STRATASIM_WITH_SIMGRID
  const Scenario sc = load(path, text, sets);
  const Strategy s = pick_variant(sc, variant);
  SimgridOptions options;
  options.timeline = false;
  return prediction_text(sc, s, predict_simgrid(lowered(sc, s, variant), options));
#else
  (void)path, (void)text, (void)sets, (void)variant;
  throw InputError("simulate", "engine", "simgrid", "this stratasim was built without SimGrid");
#endif
}

Objective objective_of(const std::string& name) {
  if (auto o = objective_from_name(name)) return *o;
  throw InputError("search", "objective", "\"" + name + "\"", std::string("is not one of: ") + kObjectiveNames);
}

std::string search(const std::string& path, const std::string& text, const std::vector<std::string>& sets,
                   int top, const std::string& objective, int threads, double train_tokens, double price) {
  const Scenario sc = load(path, text, sets);
  SearchOptions o;
  o.objective = objective_of(objective);
  if (top < 1) throw InputError("search", "top", std::to_string(top), "must be at least 1");
  if (threads < 0) throw InputError("search", "threads", std::to_string(threads), "must not be negative");
  o.top_k = top;
  o.threads = threads;
  o.train_tokens = train_tokens;
  o.price_per_device_hour = price;
  if (const auto missing = missing_search_input(sc.search, o, sc.hardware)) {
    switch (*missing) {
      case MissingSearchInput::kAxes: throw nothing_to_search(sc);
      case MissingSearchInput::kPrice:
        throw InputError("search", "objective", "\"cost_per_token\"",
                         "needs a price per device-hour: price=2.5 (USD), or cluster.device.price_per_hour in the scenario");
      case MissingSearchInput::kTrainTokens:
        throw InputError("search", "train_tokens", "(missing)", "is needed for objective time_to_train");
    }
  }
  const SearchResult r = run_search(sc.model, sc.strategy, sc.hardware, sc.search, o);
  Json out{{"scenario", sc.name}, {"file", sc.file}, {"model", sc.model.name},
           {"cluster", sc.hardware.name}, {"devices", sc.hardware.num_devices},
           {"derived_space", sc.search_derived}, {"seconds", r.seconds}};
  out.update(search_result_json(r, sc.search, o, sc.hardware));
  return json_text(out);
}

std::string compare(const std::string& path, const std::string& text, const std::vector<std::string>& sets) {
  const Scenario sc = load(path, text, sets);
  const Json out{{"scenario", sc.name}, {"file", sc.file}, {"model", sc.model.name},
                 {"cluster", sc.hardware.name}, {"devices", sc.hardware.num_devices},
                 {"variants", variants_json(evaluate_variants(sc))}};
  return json_text(out);
}

}  // namespace
}  // namespace stratasim

PYBIND11_MODULE(_stratasim, m) {
  m.doc() = "stratasim's native engine (use the stratasim package, which returns dicts)";
  // The CLI's input errors become ValueError with the same message.
  py::register_exception<stratasim::InputError>(m, "InputError", PyExc_ValueError);
  m.def("evaluate", &stratasim::evaluate, py::arg("path"), py::arg("text"), py::arg("sets"),
        py::arg("variant"), py::arg("timeline"));
  m.def("simulate", &stratasim::simulate, py::arg("path"), py::arg("text"), py::arg("sets"),
        py::arg("variant"));
  m.def("search", &stratasim::search, py::arg("path"), py::arg("text"), py::arg("sets"), py::arg("top"),
        py::arg("objective"), py::arg("threads"), py::arg("train_tokens"), py::arg("price"),
        py::call_guard<py::gil_scoped_release>());
  m.def("compare", &stratasim::compare, py::arg("path"), py::arg("text"), py::arg("sets"));
#ifdef STRATASIM_WITH_SIMGRID
  m.attr("has_simgrid") = true;
#else
  m.attr("has_simgrid") = false;
#endif
}
