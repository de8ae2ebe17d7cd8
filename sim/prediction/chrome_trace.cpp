#include "sim/prediction/chrome_trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/core/json_reader.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

constexpr int kComputeTrack = 0, kCommTrack = 1;
constexpr double kMicrosecond = 1e-6;  // trace timestamps are in microseconds
constexpr double kMegabyte = 1e6;

double us(double s) { return s / kMicrosecond; }

std::string process_name(int rank, const TraceLayout& layout) {
  std::string name = "pipeline rank " + std::to_string(rank);
  if (layout.devices_per_rank > 0) {
    const long long first = rank * layout.devices_per_rank;
    name += ": devices " + std::to_string(first) + "-" +
            std::to_string(first + layout.devices_per_rank - 1);
    if (!layout.peers.empty()) name += " (" + layout.peers + " alike)";
  }
  if (size_t(rank) < layout.rank_device.size() && !layout.rank_device[rank].empty()) {
    name += ", " + layout.rank_device[rank];
  }
  return name;
}

void add_metadata(Json& events, const std::set<int>& ranks, const TraceLayout& layout) {
  for (int r : ranks) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", process_name(r, layout)}}}});
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kComputeTrack},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kCommTrack},
                      {"args", {{"name", "communication"}}}});
  }
}

// Where a pipeline send goes: the consuming operation on a neighbouring rank. Key: (rank,
// micro-batch, chunk) -> the consuming operations' start times, by the kind they must be.
using OpKey = std::tuple<int, int, int>;
struct Consumers {
  std::map<OpKey, std::vector<double>> forwards, backwards;  // backwards: recompute or backward
};

Consumers index_consumers(const Prediction& p) {
  Consumers c;
  for (const TimelineEvent& e : p.timeline) {
    if (e.micro_batch < 0) continue;
    const OpKey key{e.device, e.micro_batch, e.chunk};
    if (e.kind == EventKind::kForward) c.forwards[key].push_back(e.start_s);
    if (e.kind == EventKind::kBackward || e.kind == EventKind::kRecompute) {
      c.backwards[key].push_back(e.start_s);
    }
  }
  for (auto* m : {&c.forwards, &c.backwards}) {
    for (auto& [key, starts] : *m) std::sort(starts.begin(), starts.end());
  }
  return c;
}

// The earliest consumer that starts once the send has started, among the ranks a send can
// reach: the next stage of the same chunk on either side (a V schedule's second chunk runs
// back up the ranks) or, at the end of the ranks, the first stage of the next chunk.
struct FlowEnd {
  int rank = -1;
  double start_s = 0;
};
FlowEnd consumer_of(const TimelineEvent& send, bool activation, int ranks, const Consumers& c) {
  const int r = send.device, k = send.micro_batch, chunk = send.chunk;
  std::vector<OpKey> candidates{{r + 1, k, chunk}, {r - 1, k, chunk}};
  if (activation && r == ranks - 1) candidates.push_back({0, k, chunk + 1});
  if (!activation && r == 0) candidates.push_back({ranks - 1, k, chunk - 1});
  const auto& ops = activation ? c.forwards : c.backwards;
  FlowEnd best;
  for (const OpKey& key : candidates) {
    if (std::get<0>(key) == r) continue;
    const auto it = ops.find(key);
    if (it == ops.end()) continue;
    const auto first = std::lower_bound(it->second.begin(), it->second.end(), send.start_s);
    if (first == it->second.end()) continue;
    if (best.rank < 0 || *first < best.start_s) best = {std::get<0>(key), *first};
  }
  return best;
}

void add_flows(Json& events, const Prediction& p, int ranks) {
  const Consumers consumers = index_consumers(p);
  int id = 0;
  for (const TimelineEvent& e : p.timeline) {
    if (e.kind != EventKind::kComm || e.micro_batch < 0) continue;
    const bool activation = e.name.rfind("send act", 0) == 0;
    if (!activation && e.name.rfind("send grad", 0) != 0) continue;
    const FlowEnd end = consumer_of(e, activation, ranks, consumers);
    if (end.rank < 0) continue;
    const char* name = activation ? "activation" : "gradient";
    events.push_back({{"name", name}, {"cat", "p2p"}, {"ph", "s"}, {"id", id},
                      {"pid", e.device}, {"tid", kCommTrack}, {"ts", us(e.start_s)}});
    events.push_back({{"name", name}, {"cat", "p2p"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                      {"pid", end.rank}, {"tid", kComputeTrack}, {"ts", us(end.start_s)}});
    ++id;
  }
}

// A step function as counter events: (time, change) pairs summed in time order, the sum times
// `scale` as `series`, beside a constant `base` as `base_series` when one is named.
void add_counter(Json& events, int rank, const std::string& name, const std::string& series,
                 std::vector<std::pair<double, double>> changes, double scale,
                 const std::string& base_series = "", double base = 0) {
  std::sort(changes.begin(), changes.end());
  double level = 0;
  auto emit = [&](double t) {
    Json args{{series, level * scale}};
    if (!base_series.empty()) args[base_series] = base;
    events.push_back({{"name", name}, {"ph", "C"}, {"pid", rank}, {"ts", us(t)}, {"args", args}});
  };
  if (changes.empty() || changes.front().first > 0) emit(0);
  for (size_t i = 0; i < changes.size(); ++i) {
    level += changes[i].second;
    if (i + 1 < changes.size() && changes[i + 1].first == changes[i].first) continue;
    emit(changes[i].first);
  }
}

// Activations held from a micro-batch's first forward to its last backward on the rank.
void add_memory_counters(Json& events, const Prediction& p, const std::set<int>& ranks) {
  std::map<OpKey, std::pair<double, double>> held;  // (rank, mb, chunk) -> [first F, last B]
  for (const TimelineEvent& e : p.timeline) {
    if (e.micro_batch < 0) continue;
    const OpKey key{e.device, e.micro_batch, e.chunk};
    if (e.kind == EventKind::kForward) {
      auto [it, fresh] = held.try_emplace(key, e.start_s, -1);
      if (!fresh) it->second.first = std::min(it->second.first, e.start_s);
    }
    if (e.kind == EventKind::kBackward) {
      auto it = held.find(key);
      if (it != held.end()) it->second.second = std::max(it->second.second, e.end_s);
    }
  }
  for (int r : ranks) {
    if (size_t(r) >= p.rank_memory.size()) continue;
    std::vector<std::pair<double, double>> changes;
    for (const auto& [key, span] : held) {
      if (std::get<0>(key) != r || span.second < span.first) continue;
      changes.push_back({span.first, 1});
      changes.push_back({span.second, -1});
    }
    std::sort(changes.begin(), changes.end());  // at a tie the release (-1) comes first
    double level = 0, most = 0;
    for (const auto& c : changes) most = std::max(most, level += c.second);
    if (most <= 0) continue;
    const MemoryBreakdown& m = p.rank_memory[r];
    const double states =
        m.weights_B + m.gradients_B + m.optimizer_B + m.buffers_B + m.workspace_B + m.fragmentation_B;
    // In GiB; the activations of one micro-batch in flight: the rank's stored activations
    // divided by the most micro-batches it holds at once.
    add_counter(events, r, "memory (GiB)", "activations", changes, m.activations_B / most / kGiB,
                "states", states / kGiB);
  }
}

void add_bytes_counters(Json& events, const Prediction& p, const std::set<int>& ranks) {
  for (int r : ranks) {
    std::vector<std::pair<double, double>> changes;
    for (const TimelineEvent& e : p.timeline) {
      if (e.device != r || e.kind != EventKind::kComm || e.bytes <= 0) continue;
      changes.push_back({e.start_s, e.bytes});
      changes.push_back({e.end_s, -e.bytes});
    }
    if (!changes.empty()) {
      add_counter(events, r, "comm in flight (MB)", "bytes", changes, 1 / kMegabyte);
    }
  }
}

}  // namespace

std::string chrome_trace(const Prediction& p, const std::string& title, const TraceLayout& layout) {
  Json events = Json::array();
  std::set<int> ranks;
  for (const TimelineEvent& e : p.timeline) {
    ranks.insert(e.device);
    const bool comm = e.kind == EventKind::kComm;
    Json ev{{"name", e.name},
            {"cat", std::string(event_kind_name(e.kind))},
            {"ph", "X"},
            {"ts", us(e.start_s)},
            {"dur", us(e.end_s - e.start_s)},
            {"pid", e.device},
            {"tid", comm ? kCommTrack : kComputeTrack}};
    Json args = Json::object();
    if (e.micro_batch >= 0) args["micro_batch"] = e.micro_batch, args["chunk"] = e.chunk;
    if (e.bytes > 0) args["bytes"] = e.bytes;
    if (!args.empty()) ev["args"] = std::move(args);
    events.push_back(std::move(ev));
  }
  add_metadata(events, ranks, layout);
  add_flows(events, p, ranks.empty() ? 0 : *ranks.rbegin() + 1);
  add_memory_counters(events, p, ranks);
  add_bytes_counters(events, p, ranks);
  return json_text(Json{{"traceEvents", events},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"title", title}, {"engine", p.engine}, {"iteration_s", p.iteration_s}}}}) +
         "\n";
}

}  // namespace stratasim
