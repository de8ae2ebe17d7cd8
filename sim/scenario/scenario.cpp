#include "sim/scenario/scenario.h"

#include "hardware_models/src/hardware_json.h"
#include "strategies/model/model_json.h"
#include "strategies/search/derived_space.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    parts.push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

// A preset given by name ("model": "gpt3-175b") becomes {"preset": name} so a field of it can
// be overridden.
void expand_preset(Json& node) {
  if (node.is_string()) node = Json{{"preset", node.get<std::string>()}};
}

}  // namespace

void apply_override(Json& doc, const std::string& assignment) {
  if (!valid_utf8(assignment)) {  // it becomes JSON text, which must be UTF-8
    throw InputError("--set", "(path)", "\"" + assignment + "\"", "is not valid UTF-8 text");
  }
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set", assignment, "\"" + assignment + "\"",
                     "must have the form key.path=value (e.g. strategy.tp=4)");
  }
  const std::vector<std::string> parts = split_path(assignment.substr(0, eq));
  if (!doc.is_object()) {
    throw InputError("--set", assignment.substr(0, eq), "\"" + assignment + "\"",
                     "cannot apply: the scenario is not a JSON object");
  }
  Json* node = &doc;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) {
      throw InputError("--set", assignment.substr(0, eq), "\"" + assignment + "\"",
                       "has an empty path component");
    }
    Json& child = (*node)[parts[i]];
    if (child.is_null()) child = Json::object();
    expand_preset(child);
    if (!child.is_object()) {
      throw InputError("--set", assignment.substr(0, eq), json_text(child),
                       "is not an object, so '" + parts[i + 1] + "' cannot be set inside it");
    }
    node = &child;
  }
  (*node)[parts.back()] = json_value_from_text(assignment.substr(eq + 1));
}

Scenario read_scenario(const Json& j, const std::string& file) {
  JsonNode root(j, file, "");
  root.allow_keys({"name", "description", "model", "cluster", "strategy", "variants", "search"});
  Scenario s;
  s.file = file;
  s.name = root.string_or("name", file);
  s.description = root.string_or("description", "");
  s.model = read_model(root.at("model"));
  s.hardware = read_cluster(root.at("cluster"));
  s.strategy = read_strategy(root.at("strategy"));
  s.variants.emplace_back("base", s.strategy);
  std::set<std::string> base_keys;
  if (j.at("strategy").is_object()) {
    for (auto it = j.at("strategy").begin(); it != j.at("strategy").end(); ++it) base_keys.insert(it.key());
  }
  s.strategy_keys.push_back(base_keys);
  const Json& cluster = j.at("cluster");
  s.devices_defaulted = !cluster.is_object() || (!cluster.contains("devices") && !cluster.contains("groups"));
  if (auto variants = root.find("variants")) {
    variants->require_object();
    for (auto it = variants->raw().begin(); it != variants->raw().end(); ++it) {
      Json merged = j.at("strategy");
      merged.merge_patch(it.value());
      JsonNode node(merged, file, "variants." + it.key());
      if (!it.value().is_object()) variants->at(it.key()).fail("must be an object of strategy fields");
      s.variants.emplace_back(it.key(), read_strategy(node));
      std::set<std::string> keys = base_keys;
      for (auto k = it.value().begin(); k != it.value().end(); ++k) keys.insert(k.key());
      s.strategy_keys.push_back(std::move(keys));
    }
  }
  if (auto search = root.find("search")) {
    s.search = read_search_space(*search);
  } else {
    s.search = derive_search_space(s.model, s.hardware, s.strategy);
    s.search_derived = true;
  }
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  Json doc = load_json_file(path);
  for (const std::string& o : overrides) apply_override(doc, o);
  return read_scenario(doc, path);
}

Json to_json(const Scenario& s) {
  Json j{{"name", s.name}, {"description", s.description}, {"model", to_json(s.model)},
         {"cluster", to_json(s.hardware)}, {"strategy", to_json(s.strategy)}};
  return j;
}

InputError nothing_to_search(const Scenario& sc) {
  return InputError(sc.file, "search", "(empty)",
                    "leaves nothing to search: list axes, e.g. \"search\": {\"tp\": [1, 2, 4, 8]}");
}

}  // namespace stratasim
