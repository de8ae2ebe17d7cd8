#include "gui/result_file.h"

#include <algorithm>

#include "sim/core/error.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {
namespace {

constexpr std::array<EnumName<CommCategory>, 9> kCommNames{{
    {"tp", CommCategory::kTensorParallel}, {"cp", CommCategory::kContextParallel},
    {"ep", CommCategory::kExpertParallel}, {"dp", CommCategory::kDataParallel},
    {"zero", CommCategory::kZero}, {"pp", CommCategory::kPipelineP2P},
    {"embedding", CommCategory::kEmbeddingSync}, {"mp", CommCategory::kPlacement},
    {"fp8_amax", CommCategory::kFp8Amax}}};
constexpr std::array<EnumName<EventKind>, 7> kEventNames{{
    {"forward", EventKind::kForward}, {"backward", EventKind::kBackward},
    {"recompute", EventKind::kRecompute}, {"comm", EventKind::kComm},
    {"idle", EventKind::kIdle}, {"optimizer", EventKind::kOptimizer},
    {"weight_grad", EventKind::kWeightGrad}}};

MemoryBreakdown read_memory(const JsonNode& n) {
  MemoryBreakdown m;
  for (const MemoryComponent& c : kMemoryComponents) {
    // Results written before the CUDA context or the allocator's fragmentation were their
    // own components have none.
    const std::string key = std::string(c.name) + "_B";
    const bool newer = c.bytes == &MemoryBreakdown::context_B || c.bytes == &MemoryBreakdown::fragmentation_B;
    m.*c.bytes = newer ? n.number_or(key, 0) : n.number(key);
  }
  m.host_B = n.number_or("host_B", 0);
  return m;
}

TimelineEvent read_event(const JsonNode& n) {
  TimelineEvent e;
  e.device = static_cast<int>(n.integer("device", 0, 1 << 20));
  e.kind = n.at("kind").as_enum(kEventNames);
  e.micro_batch = static_cast<int>(n.integer_or("micro_batch", -1, -1, INT32_MAX));
  e.chunk = static_cast<int>(n.integer_or("chunk", 0));
  e.start_s = n.number("start_s");
  e.end_s = n.number("end_s");
  e.name = n.string_or("name", "");
  e.bytes = n.number_or("bytes", 0);
  return e;
}

ResultEntry read_entry(const JsonNode& n, const std::string& name) {
  ResultEntry e;
  e.name = name;
  e.strategy = read_strategy(n.at("strategy"));
  e.prediction = read_prediction(n.at("prediction"));
  return e;
}

// A search candidate as an entry and a chart point (every listed candidate fits: the search
// drops the others before timing them).
ResultEntry read_candidate(const JsonNode& n) {
  ResultEntry e;
  e.strategy = read_strategy(n.at("strategy"));
  e.name = strategy_label(e.strategy, static_cast<int>(n.integer("dp", 1)));
  Prediction& p = e.prediction;
  p.iteration_s = n.number("iteration_s");
  p.tokens_per_s = n.number("tokens_per_s");
  p.mfu = n.number("mfu");
  p.bubble_fraction = n.number("bubble_fraction");
  p.comm_exposed_s = n.number("comm_exposed_s");
  p.peak_memory_B = n.number("peak_memory_B");
  return e;
}

ResultFile read_search(const JsonNode& n, ResultFile r) {
  r.kind = ResultKind::kSearch;
  std::vector<uint64_t> seen;
  for (const char* list : {"top", "pareto"}) {
    const JsonNode arr = n.at(list);
    if (!arr.is_array()) arr.fail("must be an array of candidates");
    for (size_t i = 0; i < arr.size(); ++i) {
      const JsonNode c = arr.element(i);
      const uint64_t index = static_cast<uint64_t>(c.integer("index", 0, INT64_MAX));
      if (std::find(seen.begin(), seen.end(), index) != seen.end()) continue;
      seen.push_back(index);
      ResultEntry e = read_candidate(c);
      r.points.push_back({e.name, e.prediction.peak_memory_B, e.prediction.tokens_per_s, true, false});
      if (std::string(list) == "top") r.entries.push_back(std::move(e));
    }
  }
  mark_front(r.points);
  return r;
}

ResultFile read_variants(const JsonNode& n, ResultFile r) {
  r.kind = ResultKind::kVariants;
  for (size_t s = 0; s < n.size(); ++s) {
    const JsonNode scenario = n.element(s);
    if (s == 0) r.scenario = scenario.string("scenario");
    const JsonNode variants = scenario.at("variants");
    if (!variants.is_array()) variants.fail("must be an array of variants");
    for (size_t i = 0; i < variants.size(); ++i) {
      const JsonNode v = variants.element(i);
      std::string name = v.string("variant");
      if (n.size() > 1) name = scenario.string("scenario") + ": " + name;
      if (v.at("feasible").as_bool()) {
        r.entries.push_back(read_entry(v, name));
      } else {
        ResultEntry e;
        e.name = name;
        e.feasible = false;
        e.reason = v.string_or("reason", "infeasible");
        r.entries.push_back(std::move(e));
      }
      r.entries.back().scenario = scenario.string("scenario");
    }
  }
  if (r.entries.empty()) n.fail("lists no variants");
  return r;
}

}  // namespace

std::string_view result_kind_name(ResultKind k) {
  switch (k) {
    case ResultKind::kPrediction: return "evaluate/simulate";
    case ResultKind::kVariants: return "compare";
    case ResultKind::kSearch: return "search";
  }
  return "?";
}

Prediction read_prediction(const JsonNode& n) {
  Prediction p;
  p.engine = n.string_or("engine", "");
  p.iteration_s = n.number("iteration_s");
  p.tokens_per_s = n.number("tokens_per_s");
  p.samples_per_s = n.number_or("samples_per_s", 0);
  p.model_flops = n.number_or("model_flops", 0);
  p.hardware_flops = n.number_or("hardware_flops", 0);
  p.model_flops_per_device_s = n.number_or("model_flops_per_device_s", 0);
  p.hardware_flops_per_device_s = n.number_or("hardware_flops_per_device_s", 0);
  p.mfu = n.number("mfu");
  p.hfu = n.number_or("hfu", 0);
  p.compute_s = n.number("compute_s");
  p.recompute_s = n.number("recompute_s");
  p.bubble_s = n.number("bubble_s");
  p.bubble_fraction = n.number("bubble_fraction");
  p.uniform_bubble_fraction = n.number_or("uniform_bubble_fraction", 0);
  p.pipeline_s = n.number_or("pipeline_s", 0);
  p.optimizer_s = n.number("optimizer_s");
  p.forward_s = n.number_or("forward_s", 0);
  p.backward_s = n.number_or("backward_s", 0);
  const JsonNode comms = n.at("comms");
  for (size_t i = 0; i < comms.size(); ++i) {
    const JsonNode c = comms.element(i);
    CommStat s;
    s.category = c.at("category").as_enum(kCommNames);
    s.bytes = c.number_or("bytes", 0);
    s.total_s = c.number("total_s");
    s.exposed_s = c.number("exposed_s");
    p.comms.push_back(s);
  }
  p.comm_total_s = n.number_or("comm_total_s", 0);
  p.comm_exposed_s = n.number_or("comm_exposed_s", 0);
  const JsonNode memory = n.at("rank_memory");
  for (size_t i = 0; i < memory.size(); ++i) p.rank_memory.push_back(read_memory(memory.element(i)));
  p.peak_rank = static_cast<int>(n.integer_or("peak_rank", 0));
  p.peak_memory_B = n.number("peak_memory_B");
  p.capacity_B = n.number("capacity_B");
  p.fits = n.at("fits").as_bool();
  if (auto timeline = n.find("timeline")) {
    for (size_t i = 0; i < timeline->size(); ++i) p.timeline.push_back(read_event(timeline->element(i)));
  }
  return p;
}

ResultFile read_result_json(const Json& j, const std::string& file) {
  const JsonNode n(j, file, "");
  ResultFile r;
  r.file = file;
  if (n.is_array()) {
    if (n.size() > 0 && n.element(0).is_object() && n.element(0).has("variants")) {
      return read_variants(n, std::move(r));
    }
  } else if (n.is_object()) {
    if (n.has("kind") || n.has("model")) {
      n.fail("is not a result file (it looks like a scenario or another report); expected the "
             "JSON of stratasim evaluate, simulate, compare or search");
    }
    r.scenario = n.string_or("scenario", "");
    if (n.has("top") && n.has("pareto")) return read_search(n, std::move(r));
    if (n.has("prediction") && n.has("strategy")) {
      r.kind = ResultKind::kPrediction;
      r.entries.push_back(read_entry(n, r.scenario));
      return r;
    }
  }
  n.fail("is not a result file: expected the JSON of stratasim evaluate, simulate, compare or "
         "search (an object with \"prediction\", an array of scenarios with \"variants\", or an "
         "object with \"top\" and \"pareto\")");
}

bool is_result_json(const Json& j) {
  if (j.is_array()) return true;
  return j.is_object() && !j.contains("model") && (j.contains("prediction") || j.contains("top"));
}

ResultFile read_result_file(const std::string& path) {
  return read_result_json(load_json_file(path), path);
}

}  // namespace stratasim
