// The chart library draws what the engine computed: memory stacks sum to the engine's totals,
// the timeline has forward+backward bars per micro-batch per chunk on every pipeline rank.
#include <doctest/doctest.h>

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <memory>

#include "gui/charts.h"
#include "gui/timeline_view.h"
#include "sim/core/units.h"
#include "tests/gui/gui_test_support.h"

namespace stratasim {
namespace {

using testing::kLlama;
using testing::scenario_path;

template <class Series>
std::vector<Series*> series_of(QChart* chart) {
  std::vector<Series*> out;
  for (QAbstractSeries* s : chart->series()) {
    if (auto* t = qobject_cast<Series*>(s)) out.push_back(t);
  }
  return out;
}

// Bars drawn for (rank, kind): each bar is 4 points of its area's upper line, in the kind's lane.
int drawn_bars(QChart* chart, int rank, const char* kind, Lane lane = kComputeLane) {
  const double lo = rank + lane.lo;
  for (QAreaSeries* a : series_of<QAreaSeries>(chart)) {
    if (a->name() == kind && a->upperSeries()->count() > 0 &&
        qFuzzyCompare(a->upperSeries()->at(0).y(), lo)) {
      return a->upperSeries()->count() / 4;
    }
  }
  return 0;
}

TEST_CASE("memory chart: stacked totals per pipeline rank equal the engine's memory") {
  const Scenario sc = load_scenario(scenario_path(kLlama));
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  for (const VariantResult& v : rows) {
    if (!v.feasible()) continue;
    CAPTURE(v.name);
    std::unique_ptr<QChart> chart(memory_chart(v.name, v.prediction));
    const auto stacks = series_of<QStackedBarSeries>(chart.get());
    REQUIRE(stacks.size() == 1);
    const QList<QBarSet*> sets = stacks[0]->barSets();
    REQUIRE(sets.size() == int(kMemoryComponents.size()));
    REQUIRE(v.prediction.rank_memory.size() == size_t(v.plan->pp));
    for (int r = 0; r < v.plan->pp; ++r) {
      double stacked = 0;
      for (QBarSet* set : sets) stacked += set->at(r);
      CHECK(stacked * kGiB == doctest::Approx(v.prediction.rank_memory[r].total()).epsilon(1e-12));
    }
    const auto lines = series_of<QLineSeries>(chart.get());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]->at(0).y() * kGiB == doctest::Approx(v.prediction.capacity_B));
  }
}

TEST_CASE(
    "timeline chart: one row per pipeline rank, forward and backward per micro-batch "
    "per chunk") {
  const Scenario sc = load_scenario(scenario_path(kLlama));
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  // base: interleaved pp4 v5; "1f1b": pp4 v1; "tp4 pp8": interleaved pp8 v2. 1024 samples /
  // (dp * mb 1) micro-batches: dp = 512 / (tp pp) = 16 -> m = 64 for tp8 pp4 and tp4 pp8.
  struct Expect {
    const char* variant;
    int pp, v, m;
  };
  for (const Expect& e :
       {Expect{"base", 4, 5, 64}, Expect{"1f1b", 4, 1, 64}, Expect{"tp4 pp8", 8, 2, 64}}) {
    CAPTURE(e.variant);
    const VariantResult& v = find_variant(rows, e.variant, sc.file);
    REQUIRE(v.feasible());
    CHECK(v.plan->micro_batches == e.m);
    const std::vector<GanttRow> gantt = gantt_rows(v.prediction);
    REQUIRE(gantt.size() == size_t(e.pp));
    std::unique_ptr<QChart> chart(timeline_chart(e.variant, v.prediction));
    for (const GanttRow& row : gantt) {
      CHECK(row.count(EventKind::kForward) == e.m * e.v);
      CHECK(row.count(EventKind::kBackward) == e.m * e.v);
      CHECK(drawn_bars(chart.get(), row.rank, "forward") == e.m * e.v);
      CHECK(drawn_bars(chart.get(), row.rank, "backward") == e.m * e.v);
    }
  }
}

TEST_CASE("timeline chart: sends and syncs on each rank's communication lane, below its compute") {
  // The bundled Llama-2 70B base (interleaved pp4 v5, m 64, blocking sends): every rank sends
  // its activations and gradients once per micro-batch and chunk except where the chain starts
  // and ends, then syncs its gradients: the comm lane of rank r holds exactly the timeline's
  // comm events of r, and the compute lane its forwards.
  const Scenario sc = load_scenario(scenario_path(kLlama));
  const std::vector<VariantResult> rows = evaluate_variants_with_timelines(sc);
  const VariantResult& base = rows.front();
  REQUIRE(base.feasible());
  std::unique_ptr<QChart> chart(timeline_chart("base", base.prediction));
  for (const GanttRow& row : gantt_rows(base.prediction)) {
    CAPTURE(row.rank);
    CHECK(row.count(EventKind::kComm) > 2 * 64);
    CHECK(drawn_bars(chart.get(), row.rank, "comm", kCommLane) == row.count(EventKind::kComm));
    CHECK(drawn_bars(chart.get(), row.rank, "comm", kComputeLane) == 0);
    CHECK(drawn_bars(chart.get(), row.rank, "forward") == row.count(EventKind::kForward));
  }
  CHECK(kCommLane.lo > kComputeLane.hi);  // y grows downwards: the comm lane is below
  // The time axis spans the iteration (its last event is the optimizer step at iteration_s;
  // the event's end and the iteration are sums of the same terms in another order, equal to
  // within rounding).
  CHECK(timeline_full_ms(chart.get()) >= base.prediction.iteration_s * 1e3 * (1 - 1e-12));
  CHECK(timeline_full_ms(chart.get()) < base.prediction.iteration_s * 1e3 * 1.25);
}

TEST_CASE("breakdown chart: one bar per variant, segments add up to at most the iteration") {
  const Scenario sc = load_scenario(scenario_path(kLlama));
  std::vector<TimeBreakdown> bars;
  for (const VariantResult& v : evaluate_variants_with_timelines(sc)) {
    if (!v.feasible()) continue;
    bars.push_back(time_breakdown(v.name, v.prediction));
    double parts = 0;
    for (const TimeSegment& s : bars.back().segments) parts += s.seconds;
    // "other" fills what the parts leave unexplained, so they never fall short.
    CHECK(parts >= v.prediction.iteration_s * (1 - 1e-12));
    CHECK(bars.back().segments.size() == time_segment_names().size());
  }
  std::unique_ptr<QChart> chart(breakdown_chart("t", bars));
  const auto stacks = series_of<QHorizontalStackedBarSeries>(chart.get());
  REQUIRE(stacks.size() == 1);
  REQUIRE(!stacks[0]->barSets().empty());
  CHECK(stacks[0]->barSets()[0]->count() == int(bars.size()));
}

TEST_CASE("pareto points: the front keeps the points no fitting point beats on both axes") {
  // a: 10 GiB, 100 tok/s; b: 20 GiB, 90 tok/s (a beats it on both); c: 30 GiB, 200 tok/s;
  // d: 5 GiB, 300 tok/s but does not fit, so it beats nothing and is not on the front.
  std::vector<ParetoPoint> pts{{"a", 10 * kGiB, 100, true, false},
                               {"b", 20 * kGiB, 90, true, false},
                               {"c", 30 * kGiB, 200, true, false},
                               {"d", 5 * kGiB, 300, false, false}};
  mark_front(pts);
  CHECK(pts[0].on_front);
  CHECK_FALSE(pts[1].on_front);
  CHECK(pts[2].on_front);
  CHECK_FALSE(pts[3].on_front);
  std::unique_ptr<QChart> chart(pareto_chart("p", pts, 80 * kGiB));
  const auto scatter = series_of<QScatterSeries>(chart.get());
  REQUIRE(scatter.size() == 3 + 2);  // does not fit, fits, pareto front; a label per front point
  CHECK(scatter[0]->count() == 1);
  CHECK(scatter[1]->count() == 1);
  CHECK(scatter[2]->count() == 2);
  // The labels name the front's strategies at their points, in memory order: a, then c.
  for (int k = 0; k < 2; ++k) {
    const QScatterSeries* label = scatter[3 + k];
    CHECK(label->name() == QString("label %1").arg(k));
    CHECK(label->pointLabelsVisible());
    CHECK(label->pointLabelsFormat() == (k == 0 ? "a" : "c"));
    REQUIRE(label->count() == 1);
    CHECK(label->at(0) == QPointF(k == 0 ? 10 : 30, k == 0 ? 100 : 200));
  }
}

TEST_CASE("pareto labels: the fastest first, no two closer than a label, at most kMaxParetoLabels") {
  // 28 points on a front, point i at (i + 1) GiB and 100 (i + 1) tokens/s: spans 28 GiB and
  // 2800 tokens/s, neighbours 1/28 = 3.6% of each apart (< 6% vertically, < 30% horizontally:
  // they clash), every second one 7.1% apart (no clash). From the fastest, 27, 25, ..., 9 are
  // labelled: ten labels. In memory order: points 9, 11, ..., 27. An '@' in a label is not a
  // Qt placeholder.
  std::vector<ParetoPoint> pts;
  for (int i = 0; i < 28; ++i) pts.push_back({"s@" + std::to_string(i), (i + 1) * kGiB, 100.0 * (i + 1), true, false});
  mark_front(pts);
  const std::vector<const ParetoPoint*> labelled = labelled_front(pts);
  REQUIRE(labelled.size() == kMaxParetoLabels);
  for (size_t k = 0; k < labelled.size(); ++k) CHECK(labelled[k] == &pts[9 + 2 * k]);
  std::unique_ptr<QChart> chart(pareto_chart("p", pts, 0));
  int labels = 0;
  for (QScatterSeries* s : series_of<QScatterSeries>(chart.get())) {
    if (!s->name().startsWith("label")) continue;
    CHECK_FALSE(s->pointLabelsFormat().contains('@'));
    ++labels;
  }
  CHECK(labels == int(kMaxParetoLabels));
}

}  // namespace
}  // namespace stratasim
