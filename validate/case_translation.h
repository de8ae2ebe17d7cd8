// One generic path from a published case to something stratasim can predict: a scenario
// (model from the hyperparameters, cluster from the GPU and interconnect fields, strategy from
// `parallel` and the software stack named by `framework`), the knobs the source left unreported
// as a search space, and each measured value converted to what the engine predicts (iteration
// time in the source's own FLOP convention, a layer's time, memory). Cases stratasim cannot
// express yet get a reason instead of a scenario.
#pragma once

#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "validate/case_rules.h"

namespace stratasim {

// kSpeedup: samples/s over the samples/s of the group's baseline case (CaseMetric::baseline).
// Memory, as the source measured it (`measured.memory_kind`): what the framework's tensors held
// (kMemoryAllocated), what its caching allocator reserved (kMemoryReserved), or the process's
// use as nvidia-smi shows it, with the CUDA context (kMemoryDevice). kLayerTime: one
// transformer layer's forward and backward; kMoeLayerTime: only its MoE module's (Megatron-Core's
// MoELayer: router to combine and the shared experts, as its layer benchmark times it).
enum class MetricKind {
  kIterationTime, kLayerTime, kMoeLayerTime, kMemoryAllocated, kMemoryReserved, kMemoryDevice, kSpeedup
};
bool is_memory(MetricKind k);

struct CaseMetric {
  MetricKind kind = MetricKind::kIterationTime;
  std::string label;       // "iteration s (from tokens/s/GPU)"
  double published = 0;    // in SI: s, or bytes
  double rel_rounding = 0;  // half a unit of the printed value's last digit, relative
  std::string baseline;     // kSpeedup: the id of the case it is relative to
};

struct TranslatedCase {
  std::string id;
  std::string group;
  std::string source;  // title (or the text of `source`)
  std::string stack;   // the software stack rule that matched
  Json scenario;       // a scenario document (read_scenario), with a "search" block if any
  std::vector<CaseMetric> metrics;
  std::string unsupported;  // non-empty: not expressible yet, and why
  bool measured = true;     // false: the group is a formula, not a measurement
  // The baseline of its group's speedups: predicted as their denominator (`scenario` is set
  // although `unsupported` says why it is not compared itself).
  bool speedup_reference = false;
  // A global batch the data replicas do not divide (a source rounding "2M tokens" to sequences):
  // the scenario runs the nearest multiple and its iteration time is scaled back by
  // stated / run (the throughput is what the source measured); 1 otherwise.
  double batch_scale = 1;
  std::string batch_note;  // "global batch 1024 -> 992 (124 data replicas)", when scaled
};

// `file` names the case file in messages. Malformed fields throw InputError naming the file,
// the case's JSON path, the value and the rule.
TranslatedCase translate_case(const JsonNode& c, const CaseRules& rules);

}  // namespace stratasim
