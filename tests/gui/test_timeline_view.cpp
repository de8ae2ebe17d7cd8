// Zoom and pan of the pipeline timeline, and the shared time scale of the compare view.
#include <doctest/doctest.h>

#include <QtCharts/QCategoryAxis>
#include <QtCharts/QValueAxis>
#include <QtGui/QWheelEvent>
#include <QtTest/QTest>
#include <memory>

#include "gui/charts.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/timeline_view.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::scenario_path;

// A timeline of a made-up prediction whose last event ends at `end_ms`.
QChart* made_up_timeline(double end_ms) {
  Prediction p;
  p.timeline = {{0, EventKind::kForward, 0, 0, 0, end_ms / 2e3, "F0"},
                {0, EventKind::kBackward, 0, 0, end_ms / 2e3, end_ms / 1e3, "B0"},
                {0, EventKind::kComm, 0, 0, end_ms / 4e3, end_ms / 2e3, "send act 0", 1e6}};
  return timeline_chart("t", p);
}

TEST_CASE("timeline view: zoom keeps the time under the cursor, pan and reset stay in range") {
  TimelineView view(made_up_timeline(100));
  QValueAxis* x = time_axis(view.chart());
  REQUIRE(x != nullptr);
  const double full = timeline_full_ms(view.chart());
  CHECK(full >= 100);
  CHECK(x->min() == 0);
  CHECK(x->max() == full);
  // Zoom 4x in around 50 ms: [0, full] -> [50 - 50/4, 50 + (full - 50)/4].
  view.zoom_time(0.25, 50);
  CHECK(x->min() == doctest::Approx(37.5));
  CHECK(x->max() == doctest::Approx(50 + (full - 50) / 4));
  const double width = x->max() - x->min();
  view.pan_time(10);
  CHECK(x->min() == doctest::Approx(47.5));
  CHECK(x->max() - x->min() == doctest::Approx(width));
  // Panning past either end stops there, keeping the width.
  view.pan_time(-1e9);
  CHECK(x->min() == 0);
  CHECK(x->max() == doctest::Approx(width));
  view.pan_time(1e9);
  CHECK(x->max() == doctest::Approx(full));
  // Zooming out past the whole iteration shows the whole iteration; NaN changes nothing.
  view.zoom_time(100, 10);
  CHECK(x->min() == 0);
  CHECK(x->max() == doctest::Approx(full));
  view.zoom_time(std::nan(""), 10);
  CHECK(x->max() == doctest::Approx(full));
  view.zoom_time(0.5, 20);
  view.reset_time();
  CHECK(x->min() == 0);
  CHECK(x->max() == doctest::Approx(full));
}

TEST_CASE("timeline view: the wheel zooms, a left drag pans, the keys do both") {
  TimelineView view(made_up_timeline(100));
  view.resize(800, 400);
  view.show();
  REQUIRE(QTest::qWaitForWindowExposed(&view));
  QValueAxis* x = time_axis(view.chart());
  const double full = x->max();
  // One notch (120 eighths of a degree) in, at the middle of the plot area: 80% of the range.
  const QPointF middle = view.mapFromScene(view.chart()->mapToScene(view.chart()->plotArea().center()));
  QWheelEvent wheel(middle, view.mapToGlobal(middle), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(view.viewport(), &wheel);
  CHECK(x->max() - x->min() == doctest::Approx(0.8 * full));
  // Drag the view left by a quarter of the plot: later times come into view.
  const double before = x->min();
  const QPoint from = middle.toPoint(), to = from - QPoint(int(view.chart()->plotArea().width() / 4), 0);
  QTest::mousePress(view.viewport(), Qt::LeftButton, Qt::NoModifier, from);
  QTest::mouseMove(view.viewport(), to);
  QTest::mouseRelease(view.viewport(), Qt::LeftButton, Qt::NoModifier, to);
  CHECK(x->min() > before);
  CHECK(x->max() - x->min() == doctest::Approx(0.8 * full));
  QTest::keyClick(&view, Qt::Key_Home);
  CHECK(x->min() == 0);
  CHECK(x->max() == doctest::Approx(full));
  QTest::keyClick(&view, Qt::Key_Plus);
  CHECK(x->max() - x->min() == doctest::Approx(0.8 * full));
}

TEST_CASE("timeline view: linked views share the longest range and zoom together") {
  TimelineView a(made_up_timeline(100)), b(made_up_timeline(300));
  link_time_axes({&a, &b});
  QValueAxis *xa = time_axis(a.chart()), *xb = time_axis(b.chart());
  CHECK(timeline_full_ms(a.chart()) == timeline_full_ms(b.chart()));
  CHECK(xa->max() == xb->max());
  CHECK(xa->max() >= 300);
  a.zoom_time(0.5, 100);
  CHECK(xb->min() == doctest::Approx(xa->min()));
  CHECK(xb->max() == doctest::Approx(xa->max()));
  b.pan_time(20);
  CHECK(xa->min() == doctest::Approx(xb->min()));
}

TEST_CASE("compare view: the strategies' timelines share one time scale") {
  MainWindow w;
  REQUIRE(testing::run_job(w, [&] { return w.load_scenario(QString::fromStdString(scenario_path(kLlama))); }));
  w.select_rows({0, 1, 2});
  REQUIRE(w.compare_selected());
  CompareView* view = w.compare_view();
  double longest = 0;
  for (const VariantResult& v : view->compared()) longest = std::max(longest, v.prediction.iteration_s * 1e3);
  const double max = time_axis(view->timeline_view(0)->chart())->max();
  CHECK(max >= longest * (1 - 1e-12));  // the last event's end: the iteration, up to rounding
  for (int i = 1; i < view->count(); ++i) {
    CHECK(time_axis(view->timeline_view(i)->chart())->max() == max);
  }
  // Small charts name the ranks only; a full-size timeline names both lanes of every rank.
  for (int i = 0; i < view->count(); ++i) {
    const int ranks = view->compared()[i].plan->pp;
    for (QAbstractAxis* a : view->timeline_view(i)->chart()->axes(Qt::Vertical)) {
      CHECK(qobject_cast<QCategoryAxis*>(a)->categoriesLabels().size() == ranks);
    }
    std::unique_ptr<QChart> full(timeline_chart("full", view->compared()[i].prediction));
    for (QAbstractAxis* a : full->axes(Qt::Vertical)) {
      CHECK(qobject_cast<QCategoryAxis*>(a)->categoriesLabels().size() == 2 * ranks);
    }
  }
  auto* first = dynamic_cast<TimelineView*>(view->timeline_view(0));
  REQUIRE(first != nullptr);
  first->zoom_time(0.1, 0);
  CHECK(time_axis(view->timeline_view(2)->chart())->max() == doctest::Approx(0.1 * max));
}

}  // namespace
}  // namespace stratasim
