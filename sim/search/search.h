// Design-space search: evaluates every point of a SearchSpace with the analytical engine on
// all cores, counts why points were pruned, keeps the top-k by an objective and the Pareto
// front (throughput vs memory per device vs devices). Deterministic: the result does not
// depend on the number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "strategies/model/model_spec.h"
#include "strategies/search/search_space.h"

namespace stratasim {

enum class Objective { kThroughput, kTimeToTrain, kCostPerToken, kMemoryHeadroom };
std::string_view objective_name(Objective o);

struct SearchOptions {
  Objective objective = Objective::kThroughput;
  int top_k = 10;
  int threads = 0;                 // 0 = all hardware threads
  double train_tokens = 0;         // for time-to-train
  double price_per_device_hour = 0;  // for cost per token (0 = the device's catalog price)
  // Called now and then from one worker thread with (points done, total points).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct Candidate {
  uint64_t index = 0;  // position in the space's enumeration
  Strategy strategy;
  int devices = 0;
  int dp = 0;
  int micro_batches = 0;
  double iteration_s = 0, tokens_per_s = 0, mfu = 0, bubble_fraction = 0;
  double comm_exposed_s = 0, peak_memory_B = 0, capacity_B = 0;
  double score = 0;  // larger is better, per the objective
};

struct SearchResult {
  uint64_t points = 0;     // visited
  uint64_t feasible = 0;   // lowered and fit in memory
  std::map<std::string, uint64_t> pruned;  // reason -> count ("tensor-parallel", "out-of-memory")
  std::vector<Candidate> top;     // best first
  std::vector<Candidate> pareto;  // by devices, then throughput
  double seconds = 0;
};

SearchResult run_search(const ModelSpec& model, const Strategy& base, const HardwareModel& hw,
                        const SearchSpace& space, const SearchOptions& options);

// The objective's value in its natural unit for reports: tokens/s, seconds, $/token, bytes.
double objective_value(const Candidate& c, const SearchOptions& o, const HardwareModel& hw);

// Whether a is at least as good as b on throughput, memory per device and devices, and
// strictly better on one.
bool dominates(const Candidate& a, const Candidate& b);
// The non-dominated subset, sorted by devices, then by throughput (descending), then index.
std::vector<Candidate> pareto_front(std::vector<Candidate> candidates);

}  // namespace stratasim
