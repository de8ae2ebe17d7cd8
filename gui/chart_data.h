// What each chart shows, computed from Predictions and search candidates without Qt: the Qt
// code in charts.cpp only draws these, and tests compare them with the engine's numbers.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "gui/variant_eval.h"
#include "sim/prediction/prediction.h"
#include "sim/search/search.h"

namespace stratasim {

// Pipeline timeline: one row per pipeline rank, its events in time order (idle included).
struct GanttBar {
  EventKind kind = EventKind::kForward;
  double start_s = 0, end_s = 0;
  int micro_batch = -1, chunk = 0;
};
struct GanttRow {
  int rank = 0;
  std::vector<GanttBar> bars;
  int count(EventKind k) const;
};
std::vector<GanttRow> gantt_rows(const Prediction& p);  // empty when p has no timeline

// Memory per pipeline rank, one stacked component per MemoryBreakdown field.
struct MemoryComponent {
  const char* name;
  double MemoryBreakdown::*bytes;
};
inline constexpr std::array<MemoryComponent, 9> kMemoryComponents{{
    {"weights", &MemoryBreakdown::weights_B},
    {"gradients", &MemoryBreakdown::gradients_B},
    {"optimizer", &MemoryBreakdown::optimizer_B},
    {"activations", &MemoryBreakdown::activations_B},
    {"transient", &MemoryBreakdown::transient_B},
    {"buffers", &MemoryBreakdown::buffers_B},
    {"workspace", &MemoryBreakdown::workspace_B},
    {"fragmentation", &MemoryBreakdown::fragmentation_B},
    {"context", &MemoryBreakdown::context_B},
}};

// Where one iteration's time goes on the busiest device: compute (without recomputation),
// recomputation, exposed communication per category, pipeline bubble, optimizer step, and what
// the parts leave unexplained of the iteration time (overlaps make the sum approximate).
struct TimeSegment {
  std::string name;
  double seconds = 0;
};
struct TimeBreakdown {
  std::string label;
  double iteration_s = 0;
  std::vector<TimeSegment> segments;  // always the same names in the same order
};
TimeBreakdown time_breakdown(const std::string& label, const Prediction& p);
std::vector<std::string> time_segment_names();

// One strategy as a point of the throughput vs memory-per-device plane.
struct ParetoPoint {
  std::string label;
  double memory_B = 0;
  double tokens_per_s = 0;
  bool fits = true;
  bool on_front = false;  // no other point has more throughput with no more memory
};
std::vector<ParetoPoint> pareto_points(const SearchResult& r);  // top-k and the front
std::vector<ParetoPoint> pareto_points(const std::vector<VariantResult>& rows);  // feasible ones
// Marks on_front over the points that fit (2-D: throughput up, memory down).
void mark_front(std::vector<ParetoPoint>& points);

std::string strategy_label(const Strategy& s, int dp);  // "tp8 pp4 dp16 interleaved v5 mb1"

}  // namespace stratasim
