// Design-space search: evaluates every point of a SearchSpace with the analytical engine on
// all cores, counts why points were pruned, keeps the top-k by an objective and the Pareto
// front (throughput vs memory per device vs devices). Deterministic: the result does not
// depend on the number of threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "strategies/model/model_spec.h"
#include "strategies/search/search_space.h"

namespace stratasim {

// kThroughputPerDevice ranks by tokens/s per device: with a devices or cluster axis, plain
// throughput favours the largest cluster; per device it asks which size uses its devices best.
enum class Objective { kThroughput, kTimeToTrain, kCostPerToken, kMemoryHeadroom, kThroughputPerDevice };
std::string_view objective_name(Objective o);
// The objective of that name, or nullopt ("throughput", "time_to_train", "cost_per_token",
// "memory_headroom", "throughput_per_device").
std::optional<Objective> objective_from_name(std::string_view name);
inline constexpr const char* kObjectiveNames =
    "throughput, time_to_train, cost_per_token, memory_headroom, throughput_per_device";

struct SearchOptions {
  Objective objective = Objective::kThroughput;
  int top_k = 10;
  int threads = 0;                 // 0 = all hardware threads
  double train_tokens = 0;         // for time-to-train
  double price_per_device_hour = 0;  // for cost per token (0 = the device's catalog price)
  // Called now and then from one worker thread with (points done, total points).
  std::function<void(uint64_t, uint64_t)> progress;
  // Set from any thread to stop the search early: workers check it before every point and
  // return what they have (SearchResult::cancelled). Null: the search runs to the end.
  const std::atomic<bool>* cancel = nullptr;
};

// What a search cannot run without, for the front ends to word in their own terms (a
// command-line option, a Python argument, a scenario key).
enum class MissingSearchInput {
  kAxes,         // the space has no axis: there is nothing to search
  kPrice,        // cost_per_token with neither a price option nor a catalog price
  kTrainTokens,  // time_to_train without a token budget
};
// The first input the search lacks, or nullopt when it can run.
std::optional<MissingSearchInput> missing_search_input(const SearchSpace& space,
                                                       const SearchOptions& options,
                                                       const HardwareModel& hw);

struct Candidate {
  uint64_t index = 0;  // position in the space's enumeration
  Strategy strategy;
  int devices = 0;
  std::string hardware;  // cluster name (differs between points of a hardware sweep)
  int dp = 0;
  int micro_batches = 0;
  double iteration_s = 0, tokens_per_s = 0, mfu = 0, bubble_fraction = 0;
  double comm_exposed_s = 0, peak_memory_B = 0, capacity_B = 0;
  double score = 0;  // larger is better, per the objective
};

struct SearchResult {
  uint64_t points = 0;     // visited
  uint64_t feasible = 0;   // lowered and fit in memory
  // Points whose normalized strategy another point of the space gives (normalize_knobs):
  // visited, not evaluated.
  uint64_t duplicates = 0;
  std::map<std::string, uint64_t> pruned;  // reason -> count ("tensor-parallel", "out-of-memory")
  std::vector<Candidate> top;     // best first
  std::vector<Candidate> pareto;  // by devices, then throughput
  double seconds = 0;
  bool cancelled = false;  // stopped by SearchOptions::cancel: counts and lists are partial
};

SearchResult run_search(const ModelSpec& model, const Strategy& base, const HardwareModel& hw,
                        const SearchSpace& space, const SearchOptions& options);

// A share of the space for one of n processes (MPI ranks): the enumeration is cut into chunks
// of kSearchChunk consecutive indices, dealt round-robin, so shard k takes chunks k, k+n,
// k+2n, ... (cheap, mostly pruned regions of the space are spread evenly). {0, 1} is all of it.
constexpr uint64_t kSearchChunk = 2048;
struct Shard {
  int k = 0, n = 1;
};
uint64_t shard_points(uint64_t size, Shard shard);  // how many indices the shard holds

// run_search over one shard. Candidates keep their global index, so merging the results of
// all n shards gives exactly run_search's result.
SearchResult run_search_shard(const ModelSpec& model, const Strategy& base,
                              const HardwareModel& hw, const SearchSpace& space,
                              const SearchOptions& options, Shard shard);

// Merges the results of disjoint shards: counts summed, top-k re-selected with the same
// tie-break (score, then lower index), Pareto front recomputed; seconds is the maximum.
SearchResult merge_search_results(std::vector<SearchResult> parts, int top_k);

// Re-evaluates the point at `index` (the candidate run_search would report for it), or nothing
// when the point is infeasible. Lets a shard send indices instead of whole candidates.
std::optional<Candidate> evaluate_index(const ModelSpec& model, const Strategy& base,
                                        const HardwareModel& hw, const SearchSpace& space,
                                        const SearchOptions& options, uint64_t index);

// The objective's value in its natural unit for reports: tokens/s, seconds, $/token, bytes.
double objective_value(const Candidate& c, const SearchOptions& o, const HardwareModel& hw);

// Whether a is at least as good as b on throughput, memory per device and devices, and
// strictly better on one.
bool dominates(const Candidate& a, const Candidate& b);
// The non-dominated subset, sorted by devices, then by throughput (descending), then index.
std::vector<Candidate> pareto_front(std::vector<Candidate> candidates);

}  // namespace stratasim
