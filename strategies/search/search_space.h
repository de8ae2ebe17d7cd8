// The strategy search space as data: named axes, each with a list of values, whose product
// is enumerated lazily (a mixed-radix counter, no nested loops). Adding an axis is one enum
// value, one line in kAxisNames and one case in apply_axis().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

enum class Axis {
  kTp, kPp, kDp, kMicroBatch, kSchedule, kInterleave, kRecompute, kZeroStage,
  kSequenceParallel, kFusion, kOverlapDp, kOverlapTp, kDtype, kDevices, kCluster, kCp, kEp, kOverlapEp, kShardGroup, kStreams,
  kOffload, kStageLayers, kRecomputeModules, kEpDispatch, kCpComm, kRecomputeLayers,
};
std::string_view axis_name(Axis a);

struct AxisValues {
  Axis axis;
  std::vector<int> values;  // numbers, or indices into the axis's enum table (or `names`)
  std::vector<std::string> names;  // kCluster: catalog cluster names (a hardware sweep)
  std::string value_text(int index) const;  // "interleaved", "8", "true"
};

struct SearchSpace {
  std::vector<AxisValues> axes;
  uint64_t size() const;  // product of the axes' lengths
};

// One point: a strategy (and device count, for hardware sweeps) built from the base.
struct SearchPoint {
  Strategy strategy;
  int devices = 0;
  int cluster = -1;  // index into the kCluster axis' names, -1 = the scenario's cluster
  // Normalized to a strategy another index of the space also gives (e.g. sequence parallelism
  // on and off at tp = 1): the search skips it, the other index stands for both.
  bool duplicate = false;
};

// Knobs that do not apply take their neutral value, so that a point is not pruned for them:
// sequence parallelism and TP overlap at tp = 1, interleaving outside the interleaved
// schedule, the interleaved schedule at pp = 1 (plain 1F1B), EP overlap at ep = 1, a count of
// recomputed layers without full recomputation.
void normalize_knobs(Strategy& s);

// Writes the index-th point of the product into `point` (starting from the base strategy and
// device count), normalized (normalize_knobs). Axis 0 varies slowest.
void point_at(const SearchSpace& space, uint64_t index, const Strategy& base, int base_devices,
              SearchPoint& point);

// Reads {"tp": [1, 2, 4, 8], "schedule": ["1f1b", "interleaved"], "micro_batch": [1, 2],
// "pp": {"from": 1, "to": 64, "step": "x2"}, ...}. Unknown axes and bad values are InputErrors.
SearchSpace read_search_space(const JsonNode& node);
Json to_json(const SearchSpace& space);

}  // namespace stratasim
