// A scenario file: model (what) + cluster (where) + strategy (how), optionally with named
// strategy variants to compare. Units are parsed here, at the boundary, and nowhere else.
//
//   {"name": "...", "description": "...", "model": "gpt3-175b",
//    "cluster": {"preset": "dgx_a100", "devices": 1024},
//    "strategy": {"tp": 8, "pp": 8, "global_batch": 1536, ...},
//    "variants": {"interleaved v=2": {"schedule": "interleaved", "interleave": 2}},
//    "search": {"tp": [1, 2, 4, 8], "pp": {"from": 1, "to": 64, "step": "x2"}}}
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "strategies/model/model_spec.h"
#include "strategies/search/search_space.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  ModelSpec model;
  HardwareModel hardware;
  Strategy strategy;
  std::vector<std::pair<std::string, Strategy>> variants;  // base strategy first ("base")
  // Per variant (same order): the strategy keys the file sets (the base's, plus the variant's
  // own), so a report can say which knobs took their defaults.
  std::vector<std::set<std::string>> strategy_keys;
  bool devices_defaulted = false;  // the cluster gave no "devices": one node
  // Axes left free for `stratasim search`; without a "search" block, the space
  // derive_search_space() gives for the model and the cluster (search_derived).
  SearchSpace search;
  bool search_derived = false;
};

// Loads a scenario file; `overrides` are "dotted.path=value" texts (from --set) applied to
// the JSON before it is read, so they are validated like the file itself.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
Scenario read_scenario(const Json& j, const std::string& file);

// Applies one "a.b.c=value" override to a JSON document; throws InputError naming --set.
void apply_override(Json& doc, const std::string& assignment);

Json to_json(const Scenario& s);

// The error every front end gives for a scenario whose search space has no axis
// (MissingSearchInput::kAxes): names the file and says how to list axes.
InputError nothing_to_search(const Scenario& sc);

}  // namespace stratasim
