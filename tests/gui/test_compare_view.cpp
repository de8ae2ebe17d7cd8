// Two selected strategies side by side: a timeline per strategy with m x v forward and backward
// bars on every pipeline rank, memory stacks that sum to the engine's memory per rank, the time
// breakdown of both, the Pareto scatter with both ringed, and why_best()'s explanation.
#include <doctest/doctest.h>

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableView>

#include "gui/charts.h"
#include "gui/compare_view.h"
#include "gui/variant_table_model.h"
#include "sim/core/units.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::run_job;
using testing::scenario_path;

// Bars drawn for (rank, kind) in a timeline chart: 4 points of its area's upper line per bar,
// the rank's compute lane (kComputeLane).
int drawn_bars(QChart* chart, int rank, const char* kind) {
  for (QAbstractSeries* s : chart->series()) {
    auto* a = qobject_cast<QAreaSeries*>(s);
    if (a && a->name() == kind && a->upperSeries()->count() > 0 &&
        qFuzzyCompare(a->upperSeries()->at(0).y(), rank + kComputeLane.lo)) {
      return a->upperSeries()->count() / 4;
    }
  }
  return 0;
}

const VariantResult& row_named(const std::vector<VariantResult>& rows, const QString& name) {
  for (const VariantResult& v : rows) {
    if (QString::fromStdString(v.name) == name) return v;
  }
  FAIL("no row named " << name.toStdString());
  return rows.front();
}

TEST_CASE("compare view: two selected strategies, their charts and the explanation") {
  const Scenario sc = load_scenario(scenario_path(kLlama));
  const std::vector<VariantResult> engine = evaluate_variants_with_timelines(sc);
  MainWindow w;
  w.resize(1280, 800);
  REQUIRE(run_job(w, [&] { return w.load_scenario(QString::fromStdString(scenario_path(kLlama))); }));
  QAbstractItemModel* table = w.table()->model();
  w.select_rows({0, 1});
  REQUIRE(w.compare_selected());
  CHECK(w.pages()->currentIndex() == MainWindow::kComparePage);
  CompareView* view = w.compare_view();
  REQUIRE(view->count() == 2);

  std::vector<EvaluatedStrategy> evaluated;
  for (int i = 0; i < 2; ++i) {
    const QString name = table->index(i, VariantTableModel::kVariant).data().toString();
    CAPTURE(name.toStdString());
    const VariantResult& v = row_named(engine, name);
    CHECK(view->compared()[i].name == v.name);
    evaluated.push_back(evaluated_strategy(v));
    // Timeline: every pipeline rank runs m micro-batches through each of its v chunks.
    QChart* timeline = view->timeline_view(i)->chart();
    const int per_rank = v.plan->micro_batches * v.plan->chunks;
    for (int r = 0; r < v.plan->pp; ++r) {
      CHECK(drawn_bars(timeline, r, "forward") == per_rank);
      CHECK(drawn_bars(timeline, r, "backward") == per_rank);
    }
  }
  // Memory: one chart, the stacks of A's ranks then B's, each summing to the engine's total.
  QStackedBarSeries* stack = nullptr;
  for (QAbstractSeries* s : view->memory_view()->chart()->series()) {
    if (auto* b = qobject_cast<QStackedBarSeries*>(s)) stack = b;
  }
  REQUIRE(stack != nullptr);
  int category = 0;
  for (const VariantResult& shown : view->compared()) {
    const VariantResult& v = row_named(engine, QString::fromStdString(shown.name));
    for (int r = 0; r < v.plan->pp; ++r, ++category) {
      double stacked = 0;
      for (QBarSet* set : stack->barSets()) stacked += set->at(category);
      CHECK(stacked * kGiB == doctest::Approx(v.prediction.rank_memory[r].total()).epsilon(1e-12));
    }
  }
  for (QBarSet* set : stack->barSets()) CHECK(set->count() == category);
  // Breakdown: one bar per compared strategy in every segment's set.
  QHorizontalStackedBarSeries* bars = nullptr;
  for (QAbstractSeries* s : view->breakdown_view()->chart()->series()) {
    if (auto* b = qobject_cast<QHorizontalStackedBarSeries*>(s)) bars = b;
  }
  REQUIRE(bars != nullptr);
  for (QBarSet* set : bars->barSets()) CHECK(set->count() == 2);
  // Pareto: every feasible variant is a point; the two compared are ringed.
  int points = 0, ringed = 0;
  for (QAbstractSeries* s : view->pareto_view()->chart()->series()) {
    auto* scatter = qobject_cast<QScatterSeries*>(s);
    if (!scatter || scatter->name().startsWith("label")) continue;
    (scatter->name() == "compared" ? ringed : points) += scatter->count();
  }
  CHECK(ringed == 2);
  CHECK(points == int(std::count_if(engine.begin(), engine.end(),
                                    [](const VariantResult& v) { return v.feasible(); })));
  // The explanation is why_best() of the two.
  std::vector<std::string> why = why_best(evaluated);
  REQUIRE(view->explanation_lines().size() == int(why.size()));
  for (size_t i = 0; i < why.size(); ++i) {
    CHECK(view->explanation_lines()[int(i)].toStdString() == why[i]);
  }
  CHECK(view->explanation_lines()[0].startsWith(
      QString::fromStdString(evaluated[best_strategy(evaluated)].label + " wins")));
}

TEST_CASE("compare view: fewer than two feasible rows are refused, more than four are cut") {
  MainWindow w;
  REQUIRE(run_job(w, [&] { return w.load_scenario(QString::fromStdString(scenario_path(kLlama))); }));
  w.select_rows({0});
  CHECK_FALSE(w.compare_selected());
  CHECK(w.status() == "select 2 to 4 feasible rows to compare");
  CHECK(w.compare_view()->count() == 0);
  w.select_rows({0, 1, 2, 3, 4, 5});
  REQUIRE(w.compare_selected());
  CHECK(w.compare_view()->count() == CompareView::kMaxStrategies);
  CHECK(w.compare_view()->chart_views().size() == size_t(4 + 3));
  // The explanation covers every compared strategy: one headline per strategy the winner beats.
  int headlines = 0;
  for (const QString& line : w.compare_view()->explanation_lines()) headlines += line.contains(" wins: ");
  CHECK(headlines == CompareView::kMaxStrategies - 1);
}

}  // namespace
}  // namespace stratasim
