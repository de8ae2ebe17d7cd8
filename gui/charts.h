// The four charts of stratasim, as Qt Charts built from chart_data.h. Shared by the window
// (gui/main_window) and `stratasim plot`. Each function returns a new QChart the caller owns
// (usually by handing it to a QChartView).
#pragma once

#include <QtCharts/QChart>
#include <string>
#include <vector>

#include "gui/chart_data.h"

namespace stratasim {

// Gantt chart: one row per pipeline rank (rank 0 on top), each with two lanes: compute
// (forward, backward, weight gradients, recompute, optimizer, idle) and, below it,
// communication (pipeline sends, gradient and embedding syncs), in distinct colours. Each
// (rank, kind) is one QAreaSeries named after the kind whose upper line traces its bars as
// rectangles (4 points per bar) between r + lane.lo and r + lane.hi. The time axis (ms) spans
// the whole timeline (timeline_view.h zooms and pans it).
struct Lane {
  double lo, hi;
};
inline constexpr Lane kComputeLane{-0.42, 0.04};
inline constexpr Lane kCommLane{0.1, 0.42};
Lane lane_of(EventKind k);
// lane_labels: name both lanes of each rank ("rank r", "comm r"); false names the ranks only
// (small charts, where a label per lane would not fit).
QChart* timeline_chart(const std::string& title, const Prediction& p, bool lane_labels = true);

// Stacked bars per pipeline rank (GiB), one QBarSet per memory component in kMemoryComponents
// order, and the device capacity as a line named "capacity".
QChart* memory_chart(const std::string& title, const Prediction& p);

// Several strategies' memory in one chart: the stacks of each strategy's pipeline ranks side by
// side (categories "<label> r<k>", one QBarSet per component as in memory_chart) and the
// capacity line (of the first) across all of them.
struct LabelledPrediction {
  std::string label;
  const Prediction* prediction;
};
QChart* memory_compare_chart(const std::string& title, const std::vector<LabelledPrediction>& rows);

// Horizontal stacked bars, one bar per breakdown (ms), one QBarSet per segment name.
QChart* breakdown_chart(const std::string& title, const std::vector<TimeBreakdown>& rows);

// Throughput (tokens/s) against peak memory per device (GiB): "pareto front", "fits",
// "does not fit" scatter series, and the capacity as a vertical line (none when capacity_B <= 0).
// The front's points are labelled with their strategies (labelled_front()), each label a
// marker-less one-point series named "label <k>" hidden from the legend. Labels do not pile
// up: the fastest front point first, then the others by falling throughput, each skipped when
// it would sit closer to a chosen one than a label's height (kLabelHeightShare of the largest
// throughput) vertically and its width (kLabelWidthShare of the largest memory) horizontally;
// at most kMaxParetoLabels; returned in memory order.
inline constexpr size_t kMaxParetoLabels = 10;
inline constexpr double kLabelHeightShare = 0.06, kLabelWidthShare = 0.3;
std::vector<const ParetoPoint*> labelled_front(const std::vector<ParetoPoint>& points);
QChart* pareto_chart(const std::string& title, const std::vector<ParetoPoint>& points,
                     double capacity_B);

// Hovering a point of a pareto_chart shows the label of the strategy it stands for.
void add_pareto_tooltips(QChart* chart, const std::vector<ParetoPoint>& points);

QColor event_color(EventKind k);

}  // namespace stratasim
