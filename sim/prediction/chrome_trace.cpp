#include "sim/prediction/chrome_trace.h"

#include <set>

#include "sim/core/json_reader.h"
#include "sim/core/units.h"

namespace stratasim {

std::string chrome_trace(const Prediction& p, const std::string& title) {
  constexpr int kComputeTrack = 0, kCommTrack = 1;
  constexpr double kMicrosecond = 1e-6;  // trace timestamps are in microseconds
  Json events = Json::array();
  std::set<int> ranks;
  for (const TimelineEvent& e : p.timeline) {
    ranks.insert(e.device);
    const bool comm = e.kind == EventKind::kComm;
    Json ev{{"name", e.name},
            {"cat", std::string(event_kind_name(e.kind))},
            {"ph", "X"},
            {"ts", e.start_s / kMicrosecond},
            {"dur", (e.end_s - e.start_s) / kMicrosecond},
            {"pid", e.device},
            {"tid", comm ? kCommTrack : kComputeTrack}};
    if (e.micro_batch >= 0) ev["args"] = Json{{"micro_batch", e.micro_batch}, {"chunk", e.chunk}};
    events.push_back(std::move(ev));
  }
  for (int r : ranks) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", "pipeline rank " + std::to_string(r)}}}});
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"tid", kComputeTrack},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"tid", kCommTrack},
                      {"args", {{"name", "communication"}}}});
  }
  return json_text(Json{{"traceEvents", events},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"title", title}, {"engine", p.engine}, {"iteration_s", p.iteration_s}}}}) +
         "\n";
}

}  // namespace stratasim
