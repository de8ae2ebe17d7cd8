// The four charts of stratasim, as Qt Charts built from chart_data.h. Shared by the window
// (gui/main_window) and `stratasim plot`. Each function returns a new QChart the caller owns
// (usually by handing it to a QChartView).
#pragma once

#include <QtCharts/QChart>
#include <string>
#include <vector>

#include "gui/chart_data.h"

namespace stratasim {

// Gantt chart: one row per pipeline rank; forward, backward, recompute, comm, idle and
// optimizer bars in distinct colours. Each (rank, kind) is one QAreaSeries whose upper line
// traces its bars as rectangles (4 points per bar), named "<kind> rank <r>".
QChart* timeline_chart(const std::string& title, const Prediction& p);

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
QChart* pareto_chart(const std::string& title, const std::vector<ParetoPoint>& points,
                     double capacity_B);

// Hovering a point of a pareto_chart shows the label of the strategy it stands for.
void add_pareto_tooltips(QChart* chart, const std::vector<ParetoPoint>& points);

QColor event_color(EventKind k);

}  // namespace stratasim
