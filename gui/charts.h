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

// Horizontal stacked bars, one bar per breakdown (ms), one QBarSet per segment name.
QChart* breakdown_chart(const std::string& title, const std::vector<TimeBreakdown>& rows);

// Throughput (tokens/s) against peak memory per device (GiB): "pareto front", "fits",
// "does not fit" scatter series, and the capacity as a vertical line.
QChart* pareto_chart(const std::string& title, const std::vector<ParetoPoint>& points,
                     double capacity_B);

QColor event_color(EventKind k);

}  // namespace stratasim
