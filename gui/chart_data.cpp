#include "gui/chart_data.h"

#include <algorithm>
#include <set>

#include "sim/core/text.h"
#include "strategies/pipeline/pipeline_schedule.h"

namespace stratasim {

int GanttRow::count(EventKind k) const {
  return static_cast<int>(
      std::count_if(bars.begin(), bars.end(), [k](const GanttBar& b) { return b.kind == k; }));
}

std::vector<GanttRow> gantt_rows(const Prediction& p) {
  int ranks = 0;
  for (const TimelineEvent& e : p.timeline) ranks = std::max(ranks, e.device + 1);
  std::vector<GanttRow> rows(ranks);
  for (int r = 0; r < ranks; ++r) rows[r].rank = r;
  for (const TimelineEvent& e : p.timeline) {
    rows[e.device].bars.push_back({e.kind, e.start_s, e.end_s, e.micro_batch, e.chunk});
  }
  for (GanttRow& row : rows) {
    std::stable_sort(row.bars.begin(), row.bars.end(),
                     [](const GanttBar& a, const GanttBar& b) { return a.start_s < b.start_s; });
  }
  return rows;
}

namespace {

constexpr std::array<CommCategory, 9> kCommOrder{
    CommCategory::kTensorParallel, CommCategory::kContextParallel, CommCategory::kExpertParallel,
    CommCategory::kPlacement, CommCategory::kPipelineP2P,
    CommCategory::kDataParallel, CommCategory::kZero, CommCategory::kEmbeddingSync,
    CommCategory::kFp8Amax};

}  // namespace

std::vector<std::string> time_segment_names() {
  std::vector<std::string> names{"compute", "recompute"};
  for (CommCategory c : kCommOrder) names.push_back(std::string(comm_category_name(c)) + " comm");
  names.insert(names.end(), {"bubble", "optimizer", "other"});
  return names;
}

TimeBreakdown time_breakdown(const std::string& label, const Prediction& p) {
  TimeBreakdown b{label, p.iteration_s, {}};
  b.segments.push_back({"compute", p.compute_s - p.recompute_s});
  b.segments.push_back({"recompute", p.recompute_s});
  for (CommCategory c : kCommOrder) {
    double exposed = 0;
    for (const CommStat& s : p.comms) {
      if (s.category == c) exposed += s.exposed_s;
    }
    b.segments.push_back({std::string(comm_category_name(c)) + " comm", exposed});
  }
  b.segments.push_back({"bubble", p.bubble_s});
  b.segments.push_back({"optimizer", p.optimizer_s});
  double parts = 0;
  for (const TimeSegment& s : b.segments) parts += s.seconds;
  b.segments.push_back({"other", std::max(0.0, p.iteration_s - parts)});
  return b;
}

void mark_front(std::vector<ParetoPoint>& points) {
  for (ParetoPoint& a : points) {
    a.on_front = a.fits;
    for (const ParetoPoint& b : points) {
      if (!a.on_front) break;
      const bool no_worse = b.fits && b.tokens_per_s >= a.tokens_per_s && b.memory_B <= a.memory_B;
      const bool better = b.tokens_per_s > a.tokens_per_s || b.memory_B < a.memory_B;
      if (no_worse && better) a.on_front = false;
    }
  }
}

std::vector<ParetoPoint> pareto_points(const SearchResult& r) {
  std::vector<ParetoPoint> points;
  std::set<uint64_t> seen;
  for (const auto* list : {&r.top, &r.pareto}) {
    for (const Candidate& c : *list) {
      if (!seen.insert(c.index).second) continue;
      points.push_back({strategy_label(c.strategy, c.dp), c.peak_memory_B, c.tokens_per_s,
                        c.peak_memory_B <= c.capacity_B, false});
    }
  }
  mark_front(points);
  return points;
}

std::vector<ParetoPoint> pareto_points(const std::vector<VariantResult>& rows) {
  std::vector<ParetoPoint> points;
  for (const VariantResult& v : rows) {
    if (!v.feasible()) continue;
    points.push_back(
        {v.name, v.prediction.peak_memory_B, v.prediction.tokens_per_s, v.prediction.fits, false});
  }
  mark_front(points);
  return points;
}

std::string strategy_label(const Strategy& s, int dp) {
  std::string label = format_text("tp%d pp%d dp%d", s.tp, s.pp, dp);
  if (s.cp > 1) label += format_text(" cp%d", s.cp);
  if (s.ep > 1) label += format_text(" ep%d", s.ep);
  label += " " + std::string(schedule_name(s.schedule));
  if (s.interleave > 1) label += format_text(" v%d", s.interleave);
  if (s.zero_stage > 0) label += format_text(" zero%d", s.zero_stage);
  return label + format_text(" mb%d", s.micro_batch);
}

}  // namespace stratasim
