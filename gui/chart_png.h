// Rendering stratasim's charts to PNG files without a display, for `stratasim plot`. No Qt
// types here, so the command line links the chart library without including Qt.
#pragma once

#include <string>
#include <vector>

#include "gui/result_file.h"
#include "gui/variant_eval.h"

namespace stratasim {

enum class PlotKind { kTimeline, kMemory, kBreakdown, kPareto };
// "timeline", "memory", "breakdown", "pareto"; false for anything else.
bool parse_plot_kind(const std::string& text, PlotKind* out);

struct PlotRequest {
  PlotKind kind = PlotKind::kTimeline;
  std::string variant;  // timeline and memory: the variant drawn ("" = base); breakdown: only it
  int width = 1200, height = 700;
};

// Evaluates the scenario (its search for a pareto plot when it lists search axes, else its
// variants) and writes the chart as a PNG of exactly width x height pixels. Creates an
// offscreen QApplication when none exists. Throws InputError for an unknown variant, an
// infeasible one, or a file that cannot be written.
void plot_scenario_png(const Scenario& sc, const PlotRequest& request, const std::string& path);

// The same charts from a result file (gui/result_file.h): timeline of an entry with a timeline
// (evaluate --timeline --json, simulate --json), memory of a full prediction, breakdown of all
// full predictions, pareto of every entry (search: its top-k and front). Throws InputError
// naming the file when the file lacks what the kind needs.
// A compare file of several scenarios gives one Pareto chart per scenario (pareto_panels(): its
// scenarios, each with its own front and capacity) in a grid; one scenario, one chart.
void plot_result_png(const ResultFile& result, const PlotRequest& request, const std::string& path);
// Throws InputError for more than kMaxParetoPanels scenarios (each chart would be unreadable).
inline constexpr size_t kMaxParetoPanels = 16;
std::vector<std::string> pareto_panels(const ResultFile& result);  // empty: a single chart
// The feasible variants of one scenario of a compare file ("": all of them) as chart points
// named by variant, with the front marked among them alone.
std::vector<ParetoPoint> variants_pareto_points(const ResultFile& r, const std::string& scenario);

}  // namespace stratasim
