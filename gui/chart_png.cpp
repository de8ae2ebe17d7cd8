#include "gui/chart_png.h"

#include <QtCharts/QChartView>
#include <QtWidgets/QApplication>
#include <QtWidgets/QGridLayout>
#include <algorithm>
#include <cmath>
#include <memory>

#include "gui/charts.h"
#include "gui/export.h"
#include "sim/core/error.h"

namespace stratasim {
namespace {

// The process's QApplication: the existing one, or one made here on the offscreen platform
// when no display is available; it lives until the process exits.
void ensure_application() {
  if (QApplication::instance() != nullptr) return;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  static int argc = 1;
  static char name[] = "stratasim";
  static char* argv[] = {name, nullptr};
  static std::unique_ptr<QApplication> app = std::make_unique<QApplication>(argc, argv);
}

const VariantResult& feasible_variant(const std::vector<VariantResult>& rows,
                                      const std::string& name, const std::string& file) {
  const VariantResult& v = find_variant(rows, name, file);
  if (!v.feasible()) {
    throw InputError(file, v.name == rows.front().name ? "strategy" : "variants." + v.name,
                     "(infeasible)", "cannot be plotted: " + v.infeasible);
  }
  return v;
}

QChart* make_chart(const Scenario& sc, const PlotRequest& rq) {
  if (rq.kind == PlotKind::kPareto && !sc.search.axes.empty() && !sc.search_derived) {
    return pareto_chart(sc.name + ": search", pareto_points(search_scenario(sc)),
                        sc.hardware.device.memory_B);
  }
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  switch (rq.kind) {
    case PlotKind::kTimeline: {
      const VariantResult& v = feasible_variant(rows, rq.variant, sc.file);
      return timeline_chart(
          sc.name + ": " + v.name + " (" + strategy_label(v.strategy, v.plan->data_parallel()) + ")",
          v.prediction);
    }
    case PlotKind::kMemory: {
      const VariantResult& v = feasible_variant(rows, rq.variant, sc.file);
      return memory_chart(sc.name + ": " + v.name + " memory per pipeline rank", v.prediction);
    }
    case PlotKind::kBreakdown: {
      std::vector<TimeBreakdown> bars;
      for (const VariantResult& v : rows) {
        if (v.feasible() && (rq.variant.empty() || v.name == rq.variant)) {
          bars.push_back(time_breakdown(v.name, v.prediction));
        }
      }
      if (bars.empty()) feasible_variant(rows, rq.variant, sc.file);  // throws the reason
      return breakdown_chart(sc.name + ": time per iteration", bars);
    }
    case PlotKind::kPareto:
      return pareto_chart(sc.name + ": variants", pareto_points(rows), sc.hardware.device.memory_B);
  }
  SS_ASSERT(false, "every plot kind is handled");
  return nullptr;
}

const ResultEntry& result_entry(const ResultFile& r, const std::string& name, const char* needs) {
  if (r.kind == ResultKind::kSearch) {
    throw InputError(r.file, "top", "(search result)",
                     std::string("has no ") + needs +
                         " per candidate; plot --kind pareto, or evaluate a candidate");
  }
  for (const ResultEntry& e : r.entries) {
    if (!name.empty() && e.name != name) continue;
    if (!e.feasible) {
      throw InputError(r.file, "variants", "\"" + e.name + "\"", "cannot be plotted: " + e.reason);
    }
    return e;
  }
  throw InputError(r.file, "variants", "\"" + name + "\"", "is not a variant of this result");
}

QChart* variants_pareto_chart(const ResultFile& r, const std::string& title,
                              const std::string& scenario = "") {
  double capacity = 0;
  for (const ResultEntry& e : r.entries) {
    if (e.feasible && (scenario.empty() || e.scenario == scenario)) {
      capacity = std::max(capacity, e.prediction.capacity_B);
    }
  }
  return pareto_chart(title + ": variants", variants_pareto_points(r, scenario), capacity);
}

// The scenarios of a result file in the order they first appear.
std::vector<std::string> scenarios_of(const ResultFile& r) {
  std::vector<std::string> out;
  for (const ResultEntry& e : r.entries) {
    if (std::find(out.begin(), out.end(), e.scenario) == out.end()) out.push_back(e.scenario);
  }
  return out;
}

QChart* make_result_chart(const ResultFile& r, const PlotRequest& rq) {
  const std::string title = r.scenario.empty() ? r.file : r.scenario;
  switch (rq.kind) {
    case PlotKind::kTimeline: {
      const ResultEntry& e = result_entry(r, rq.variant, "timeline");
      if (e.prediction.timeline.empty()) {
        throw InputError(r.file, "prediction.timeline", "[]",
                         "is empty: write it with `stratasim evaluate --timeline --json` or "
                         "`stratasim simulate --json`");
      }
      return timeline_chart(title + ": " + e.name + " (" + e.prediction.engine + ")", e.prediction);
    }
    case PlotKind::kMemory:
      return memory_chart(title + ": " + result_entry(r, rq.variant, "memory").name +
                              " memory per pipeline rank",
                          result_entry(r, rq.variant, "memory").prediction);
    case PlotKind::kBreakdown: {
      result_entry(r, rq.variant, "time breakdown");  // throws for search results and bad names
      std::vector<TimeBreakdown> bars;
      for (const ResultEntry& e : r.entries) {
        if (e.feasible && (rq.variant.empty() || e.name == rq.variant)) {
          bars.push_back(time_breakdown(e.name, e.prediction));
        }
      }
      return breakdown_chart(title + ": time per iteration", bars);
    }
    case PlotKind::kPareto:
      return r.kind == ResultKind::kSearch ? pareto_chart(title + ": search", r.points, 0)
                                           : variants_pareto_chart(r, title);
  }
  SS_ASSERT(false, "every plot kind is handled");
  return nullptr;
}

void render_png(QChart* chart, const PlotRequest& request, const std::string& path) {
  QChartView view(chart);  // the view owns the chart
  view.setRenderHint(QPainter::Antialiasing);
  view.resize(request.width, request.height);
  save_widget_png(view, path);
}

}  // namespace

std::vector<ParetoPoint> variants_pareto_points(const ResultFile& r, const std::string& scenario) {
  std::vector<ParetoPoint> points;
  for (const ResultEntry& e : r.entries) {
    if (!e.feasible || (!scenario.empty() && e.scenario != scenario)) continue;
    const std::string prefix = scenario.empty() ? "" : e.scenario + ": ";
    const std::string label = e.name.rfind(prefix, 0) == 0 ? e.name.substr(prefix.size()) : e.name;
    points.push_back({label, e.prediction.peak_memory_B, e.prediction.tokens_per_s, e.prediction.fits, false});
  }
  mark_front(points);
  return points;
}

bool parse_plot_kind(const std::string& text, PlotKind* out) {
  if (text == "timeline")
    *out = PlotKind::kTimeline;
  else if (text == "memory")
    *out = PlotKind::kMemory;
  else if (text == "breakdown")
    *out = PlotKind::kBreakdown;
  else if (text == "pareto")
    *out = PlotKind::kPareto;
  else
    return false;
  return true;
}

void plot_scenario_png(const Scenario& sc, const PlotRequest& request, const std::string& path) {
  ensure_application();
  render_png(make_chart(sc, request), request, path);
}

std::vector<std::string> pareto_panels(const ResultFile& result) {
  const std::vector<std::string> scenarios = scenarios_of(result);
  if (result.kind != ResultKind::kVariants || scenarios.size() < 2) return {};
  if (scenarios.size() > kMaxParetoPanels) {
    throw InputError(result.file, "[]", std::to_string(scenarios.size()) + " scenarios",
                     "is more than one picture can show as Pareto charts (at most " +
                         std::to_string(kMaxParetoPanels) +
                         "): compare fewer scenarios, or plot each scenario's own result");
  }
  return scenarios;
}

void plot_result_png(const ResultFile& result, const PlotRequest& request, const std::string& path) {
  ensure_application();
  const std::vector<std::string> panels =
      request.kind == PlotKind::kPareto ? pareto_panels(result) : std::vector<std::string>{};
  if (panels.empty()) return render_png(make_result_chart(result, request), request, path);
  // One Pareto chart per scenario, in a grid of about square shape filling the picture.
  QWidget grid;
  auto* layout = new QGridLayout(&grid);
  layout->setContentsMargins(0, 0, 0, 0);
  const int columns = static_cast<int>(std::ceil(std::sqrt(double(panels.size()))));
  for (size_t i = 0; i < panels.size(); ++i) {
    auto* view = new QChartView(variants_pareto_chart(result, panels[i], panels[i]));
    view->setRenderHint(QPainter::Antialiasing);
    layout->addWidget(view, int(i) / columns, int(i) % columns);
  }
  grid.resize(request.width, request.height);
  grid.setAttribute(Qt::WA_DontShowOnScreen);
  grid.show();  // lays the grid out at its size before it is grabbed
  save_widget_png(grid, path);
}

}  // namespace stratasim
