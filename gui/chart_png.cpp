#include "gui/chart_png.h"

#include <QtCharts/QChartView>
#include <QtWidgets/QApplication>
#include <memory>

#include "gui/charts.h"
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
  if (rq.kind == PlotKind::kPareto && !sc.search.axes.empty()) {
    return pareto_chart(sc.name + ": search", pareto_points(search_scenario(sc)),
                        sc.hardware.device.memory_B);
  }
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  switch (rq.kind) {
    case PlotKind::kTimeline: {
      const VariantResult& v = feasible_variant(rows, rq.variant, sc.file);
      return timeline_chart(
          sc.name + ": " + v.name + " (" + strategy_label(v.strategy, v.plan->dp) + ")",
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

}  // namespace

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
  QChartView view(make_chart(sc, request));  // the view owns the chart
  view.setRenderHint(QPainter::Antialiasing);
  view.resize(request.width, request.height);
  const QPixmap pixmap = view.grab();
  if (!pixmap.save(QString::fromStdString(path), "PNG")) {
    throw InputError("command line", "-o", path, "cannot be written as a PNG file");
  }
}

}  // namespace stratasim
