#include "sim/search/search_json.h"

#include "sim/core/error.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {

Json candidate_json(const Candidate& c, const SearchOptions& o, const HardwareModel& hw) {
  return Json{{"index", c.index},
              {"strategy", to_json(c.strategy)},
              {"cluster", c.hardware},
              {"devices", c.devices},
              {"dp", c.dp},
              {"iteration_s", c.iteration_s},
              {"tokens_per_s", c.tokens_per_s},
              {"mfu", c.mfu},
              {"bubble_fraction", c.bubble_fraction},
              {"comm_exposed_s", c.comm_exposed_s},
              {"peak_memory_B", c.peak_memory_B},
              {"objective", objective_value(c, o, hw)}};
}

Json search_result_json(const SearchResult& r, const SearchSpace& space, const SearchOptions& o,
                        const HardwareModel& hw) {
  Json top = Json::array(), pareto = Json::array();
  for (const Candidate& c : r.top) top.push_back(candidate_json(c, o, hw));
  for (const Candidate& c : r.pareto) pareto.push_back(candidate_json(c, o, hw));
  return Json{{"space", to_json(space)},
              {"points", r.points},
              {"feasible", r.feasible},
              {"duplicates", r.duplicates},
              {"pruned", r.pruned},
              {"objective", std::string(objective_name(o.objective))},
              {"top", top},
              {"pareto", pareto}};
}

Json search_shard_json(const SearchResult& r) {
  Json top = Json::array(), pareto = Json::array();
  for (const Candidate& c : r.top) top.push_back(c.index);
  for (const Candidate& c : r.pareto) pareto.push_back(c.index);
  return Json{{"points", r.points}, {"feasible", r.feasible}, {"duplicates", r.duplicates},
              {"pruned", r.pruned},
              {"top", top},         {"pareto", pareto},       {"seconds", r.seconds}};
}

SearchResult search_shard_from_json(const Json& j, const ModelSpec& model, const Strategy& base,
                                    const HardwareModel& hw, const SearchSpace& space,
                                    const SearchOptions& options) {
  SearchResult r;
  r.points = j.at("points").get<uint64_t>();
  r.feasible = j.at("feasible").get<uint64_t>();
  r.duplicates = j.at("duplicates").get<uint64_t>();
  for (const auto& [reason, n] : j.at("pruned").items()) r.pruned[reason] = n.get<uint64_t>();
  r.seconds = j.at("seconds").get<double>();
  auto rebuild = [&](const Json& indices, std::vector<Candidate>& out) {
    for (const Json& i : indices) {
      std::optional<Candidate> c =
          evaluate_index(model, base, hw, space, options, i.get<uint64_t>());
      SS_ASSERT(c.has_value(), "a shard reports only feasible candidates");
      out.push_back(std::move(*c));
    }
  };
  rebuild(j.at("top"), r.top);
  rebuild(j.at("pareto"), r.pareto);
  return r;
}

}  // namespace stratasim
