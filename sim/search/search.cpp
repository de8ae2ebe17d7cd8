#include "sim/search/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "strategies/lowering/lower.h"

namespace stratasim {
namespace {

constexpr uint64_t kChunk = kSearchChunk;

double price_of(const SearchOptions& o, const HardwareModel& hw) {
  return o.price_per_device_hour > 0 ? o.price_per_device_hour : hw.device.price_per_hour;
}

double score_of(const Candidate& c, const SearchOptions& o, const HardwareModel& hw) {
  switch (o.objective) {
    case Objective::kThroughput: return c.tokens_per_s;
    case Objective::kTimeToTrain: return c.tokens_per_s;  // shorter time = more tokens/s
    case Objective::kCostPerToken: return -c.devices / c.tokens_per_s * price_of(o, hw);
    case Objective::kMemoryHeadroom: return c.capacity_B - c.peak_memory_B;
    case Objective::kThroughputPerDevice: return c.tokens_per_s / std::max(1, c.devices);
  }
  return 0;
}

bool better(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.index < b.index);
}

struct Partial {
  uint64_t points = 0, feasible = 0, duplicates = 0;
  std::map<std::string, uint64_t> pruned;
  std::vector<Candidate> top;  // heap ordered by `better` (worst at front)
  std::vector<Candidate> front;
};

void keep_top(Partial& p, Candidate c, int k) {
  auto worse_first = [](const Candidate& a, const Candidate& b) { return better(a, b); };
  if (static_cast<int>(p.top.size()) < k) {
    p.top.push_back(std::move(c));
    std::push_heap(p.top.begin(), p.top.end(), worse_first);
  } else if (k > 0 && better(c, p.top.front())) {
    std::pop_heap(p.top.begin(), p.top.end(), worse_first);
    p.top.back() = std::move(c);
    std::push_heap(p.top.begin(), p.top.end(), worse_first);
  }
}

void keep_front(std::vector<Candidate>& front, const Candidate& c) {
  for (const Candidate& f : front) {
    if (dominates(f, c)) return;
  }
  std::erase_if(front, [&](const Candidate& f) { return dominates(c, f); });
  front.push_back(c);
}

Candidate candidate_of(uint64_t index, const SearchPoint& pt, const Plan& plan,
                       const Prediction& p) {
  Candidate c;
  c.index = index;
  c.strategy = pt.strategy;
  c.devices = pt.devices;
  c.dp = plan.data_parallel();
  c.micro_batches = plan.micro_batches;
  c.iteration_s = p.iteration_s;
  c.tokens_per_s = p.tokens_per_s;
  c.mfu = p.mfu;
  c.bubble_fraction = p.bubble_fraction;
  c.comm_exposed_s = p.comm_exposed_s;
  c.peak_memory_B = p.peak_memory_B;
  c.capacity_B = p.capacity_B;
  return c;
}

// The hardware of a point: the scenario's cluster, or a preset of the space's cluster axis
// (resolved once), with the point's device count.
class HardwareCursor {
 public:
  HardwareCursor(const HardwareModel& base, const SearchSpace& space) : hw_(base) {
    clusters_.push_back(base);
    for (const AxisValues& a : space.axes) {
      if (a.axis != Axis::kCluster) continue;
      for (const std::string& name : a.names) clusters_.push_back(catalog_cluster(name));
    }
  }
  const HardwareModel& at(const SearchPoint& pt) {
    if (pt.cluster != current_) {
      hw_ = clusters_[pt.cluster + 1];
      current_ = pt.cluster;
    }
    hw_.num_devices = pt.devices;
    return hw_;
  }

 private:
  std::vector<HardwareModel> clusters_;  // [0] the scenario's, then the axis' presets
  HardwareModel hw_;
  int current_ = -1;
};

void evaluate_point(uint64_t index, const SearchPoint& pt, const ModelSpec& model,
                    const HardwareModel& hw, const SearchOptions& o, Partial& out) {
  ++out.points;
  Expected<Plan> plan = lower(model, pt.strategy, hw, LowerDepth::kMemory);
  if (!plan) {
    ++out.pruned[std::string(reason_name(plan.error().reason))];
    return;
  }
  if (!predict_memory(*plan).fits) {  // before the iteration program and the timing
    ++out.pruned[std::string(reason_name(InfeasibleReason::kOutOfMemory))];
    return;
  }
  lower_iteration(*plan);
  const Prediction p = predict_analytical(*plan);
  ++out.feasible;
  Candidate c = candidate_of(index, pt, *plan, p);
  c.hardware = hw.name;
  c.score = score_of(c, o, hw);
  keep_front(out.front, c);
  keep_top(out, std::move(c), o.top_k);
}

bool cancelled(const SearchOptions& o) {
  return o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed);
}

void worker(const ModelSpec& model, const Strategy& base, const HardwareModel& base_hw,
            const SearchSpace& space, const SearchOptions& o, Shard shard,
            std::atomic<uint64_t>& next, std::atomic<uint64_t>& done, bool reports, Partial& out) {
  HardwareCursor cursor(base_hw, space);
  SearchPoint pt;
  const uint64_t size = space.size(), total = shard_points(size, shard);
  for (;;) {
    const uint64_t chunk = shard.k + next.fetch_add(1) * shard.n;  // the shard's next chunk
    if (chunk >= (size + kChunk - 1) / kChunk) break;
    const uint64_t begin = chunk * kChunk;
    uint64_t end = std::min(size, begin + kChunk);
    for (uint64_t i = begin; i < end; ++i) {
      if (cancelled(o)) {
        end = i;  // the chunk counts only what was evaluated
        break;
      }
      point_at(space, i, base, base_hw.num_devices, pt);
      if (pt.duplicate) {  // another index gives the same normalized strategy
        ++out.points;
        ++out.duplicates;
        continue;
      }
      evaluate_point(i, pt, model, cursor.at(pt), o, out);
    }
    const uint64_t finished = done.fetch_add(end - begin) + (end - begin);
    if (reports && o.progress) o.progress(finished, total);
    if (cancelled(o)) break;
  }
}

SearchResult merge(std::vector<Partial>& parts, int top_k) {
  SearchResult r;
  Partial all;
  for (Partial& p : parts) {
    r.points += p.points;
    r.feasible += p.feasible;
    r.duplicates += p.duplicates;
    for (const auto& [reason, n] : p.pruned) r.pruned[reason] += n;
    for (Candidate& c : p.top) keep_top(all, std::move(c), top_k);
    for (const Candidate& c : p.front) all.front.push_back(c);
  }
  r.top = std::move(all.top);
  std::sort(r.top.begin(), r.top.end(), better);
  r.pareto = pareto_front(std::move(all.front));
  return r;
}

}  // namespace

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::kThroughput: return "throughput";
    case Objective::kTimeToTrain: return "time_to_train";
    case Objective::kCostPerToken: return "cost_per_token";
    case Objective::kMemoryHeadroom: return "memory_headroom";
    case Objective::kThroughputPerDevice: return "throughput_per_device";
  }
  return "?";
}

std::optional<Objective> objective_from_name(std::string_view name) {
  for (Objective o : {Objective::kThroughput, Objective::kTimeToTrain, Objective::kCostPerToken,
                      Objective::kMemoryHeadroom, Objective::kThroughputPerDevice}) {
    if (objective_name(o) == name) return o;
  }
  return std::nullopt;
}

double objective_value(const Candidate& c, const SearchOptions& o, const HardwareModel& hw) {
  switch (o.objective) {
    case Objective::kThroughput: return c.tokens_per_s;
    case Objective::kTimeToTrain: return o.train_tokens / c.tokens_per_s;
    case Objective::kCostPerToken: return c.devices * price_of(o, hw) / kSecondsPerHour / c.tokens_per_s;
    case Objective::kMemoryHeadroom: return c.capacity_B - c.peak_memory_B;
    case Objective::kThroughputPerDevice: return c.tokens_per_s / std::max(1, c.devices);
  }
  return 0;
}

bool dominates(const Candidate& a, const Candidate& b) {
  const bool no_worse = a.tokens_per_s >= b.tokens_per_s && a.peak_memory_B <= b.peak_memory_B &&
                        a.devices <= b.devices;
  const bool better_somewhere = a.tokens_per_s > b.tokens_per_s ||
                                a.peak_memory_B < b.peak_memory_B || a.devices < b.devices;
  return no_worse && better_somewhere;
}

std::vector<Candidate> pareto_front(std::vector<Candidate> candidates) {
  std::vector<Candidate> front;
  for (const Candidate& c : candidates) keep_front(front, c);
  std::sort(front.begin(), front.end(), [](const Candidate& a, const Candidate& b) {
    if (a.devices != b.devices) return a.devices < b.devices;
    if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
    return a.index < b.index;
  });
  return front;
}

std::optional<MissingSearchInput> missing_search_input(const SearchSpace& space,
                                                       const SearchOptions& options,
                                                       const HardwareModel& hw) {
  if (space.axes.empty()) return MissingSearchInput::kAxes;
  // Without a price every point would cost 0 and the ranking would say nothing.
  if (options.objective == Objective::kCostPerToken && options.price_per_device_hour <= 0 &&
      hw.device.price_per_hour <= 0) {
    return MissingSearchInput::kPrice;
  }
  if (options.objective == Objective::kTimeToTrain && options.train_tokens <= 0) {
    return MissingSearchInput::kTrainTokens;
  }
  return std::nullopt;
}

SearchResult run_search(const ModelSpec& model, const Strategy& base, const HardwareModel& hw,
                        const SearchSpace& space, const SearchOptions& options) {
  return run_search_shard(model, base, hw, space, options, Shard{0, 1});
}

uint64_t shard_points(uint64_t size, Shard shard) {
  SS_ASSERT(shard.n > 0 && shard.k >= 0 && shard.k < shard.n, "shard k must lie in [0, n)");
  const uint64_t full = size / kChunk, rest = size % kChunk;  // full chunks, then a partial one
  const uint64_t n = shard.n, k = shard.k;
  uint64_t points = (full / n + (k < full % n ? 1 : 0)) * kChunk;
  if (rest > 0 && full % n == k) points += rest;  // the partial chunk is chunk number `full`
  return points;
}

SearchResult run_search_shard(const ModelSpec& model, const Strategy& base,
                              const HardwareModel& hw, const SearchSpace& space,
                              const SearchOptions& options, Shard shard) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t chunks = (shard_points(space.size(), shard) + kChunk - 1) / kChunk;
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, static_cast<int>(std::min<uint64_t>(threads, chunks)));
  std::vector<Partial> parts(threads);
  std::atomic<uint64_t> next{0}, done{0};
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back(worker, std::cref(model), std::cref(base), std::cref(hw), std::cref(space),
                      std::cref(options), shard, std::ref(next), std::ref(done), false,
                      std::ref(parts[t]));
  }
  worker(model, base, hw, space, options, shard, next, done, true, parts[0]);
  for (std::thread& t : pool) t.join();
  SearchResult r = merge(parts, options.top_k);
  r.cancelled = cancelled(options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

SearchResult merge_search_results(std::vector<SearchResult> parts, int top_k) {
  std::vector<Partial> partials(parts.size());
  double seconds = 0;
  bool cancelled = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    partials[i].points = parts[i].points;
    partials[i].feasible = parts[i].feasible;
    partials[i].duplicates = parts[i].duplicates;
    partials[i].pruned = std::move(parts[i].pruned);
    partials[i].top = std::move(parts[i].top);
    partials[i].front = std::move(parts[i].pareto);
    cancelled = cancelled || parts[i].cancelled;
    seconds = std::max(seconds, parts[i].seconds);
  }
  SearchResult r = merge(partials, top_k);
  r.seconds = seconds;
  r.cancelled = cancelled;
  return r;
}

std::optional<Candidate> evaluate_index(const ModelSpec& model, const Strategy& base,
                                        const HardwareModel& hw, const SearchSpace& space,
                                        const SearchOptions& options, uint64_t index) {
  SS_ASSERT(index < space.size(), "a search index lies inside the space");
  SearchPoint pt;
  point_at(space, index, base, hw.num_devices, pt);
  HardwareCursor cursor(hw, space);
  Partial out;
  SearchOptions one = options;
  one.top_k = 1;
  evaluate_point(index, pt, model, cursor.at(pt), one, out);
  if (out.top.empty()) return std::nullopt;
  return out.top.front();
}

}  // namespace stratasim
