#include "gui/charts.h"

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

#include <QtGui/QCursor>
#include <QtWidgets/QToolTip>

#include "gui/timeline_view.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

constexpr double kMs = 1 / kMilli;  // seconds -> milliseconds on the time axes

const QColor kPalette[] = {QColor(0x4e79a7), QColor(0xf28e2b), QColor(0xe15759),
                           QColor(0x76b7b2), QColor(0x59a14f), QColor(0xedc948),
                           QColor(0xb07aa1), QColor(0xff9da7), QColor(0x9c755f)};

QChart* new_chart(const std::string& title) {
  auto* chart = new QChart;
  chart->setTitle(QString::fromStdString(title));
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

QValueAxis* value_axis(const QString& title, double lo, double hi) {
  auto* axis = new QValueAxis;
  axis->setTitleText(title);
  axis->setRange(lo, hi);
  axis->applyNiceNumbers();
  return axis;
}

constexpr EventKind kDrawnKinds[] = {EventKind::kForward,   EventKind::kBackward,
                                     EventKind::kWeightGrad, EventKind::kRecompute,
                                     EventKind::kComm,      EventKind::kOptimizer,
                                     EventKind::kIdle};

}  // namespace

QColor event_color(EventKind k) {
  switch (k) {
    case EventKind::kForward:
      return QColor(0x4e79a7);
    case EventKind::kBackward:
      return QColor(0x59a14f);
    case EventKind::kRecompute:
      return QColor(0xedc948);
    case EventKind::kComm:
      return QColor(0xe15759);
    case EventKind::kIdle:
      return QColor(0xdddddd);
    case EventKind::kOptimizer:
      return QColor(0xb07aa1);
    case EventKind::kWeightGrad:
      return QColor(0x8cd17d);
  }
  return Qt::black;
}

Lane lane_of(EventKind k) { return k == EventKind::kComm ? kCommLane : kComputeLane; }

QChart* timeline_chart(const std::string& title, const Prediction& p, bool lane_labels) {
  QChart* chart = new_chart(title);
  const std::vector<GanttRow> rows = gantt_rows(p);
  const int n = static_cast<int>(rows.size());
  double end_s = 0;
  for (const TimelineEvent& e : p.timeline) end_s = std::max(end_s, e.end_s);
  QValueAxis* x = value_axis("time (ms)", 0, std::max(end_s, 1e-9) * kMs);
  auto* y = new QCategoryAxis;
  y->setRange(-0.5, n - 0.5);
  y->setStartValue(-0.5);  // the first category starts at the axis minimum, not at 0
  y->setReverse(true);     // rank 0 on top, as in the GPipe and 1F1B figures
  y->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
  // Each rank's row: its name over the compute lane, "comm" over the communication lane.
  const double boundary = (kComputeLane.hi + kCommLane.lo) / 2;
  for (int r = 0; r < n; ++r) {
    if (!lane_labels) {
      y->append(QString("rank %1").arg(r), r + 0.5);
      continue;
    }
    y->append(QString("rank %1").arg(r), r + boundary);
    y->append(QString("comm %1").arg(r), r + 0.5);
  }
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  // White edges tell adjacent bars apart; with hundreds of bars per rank they would hide them.
  size_t most_bars = 0;
  for (const GanttRow& row : rows) most_bars = std::max(most_bars, row.bars.size());
  const QPen separators = most_bars <= 200 ? QPen(Qt::white, 1) : QPen(Qt::NoPen);
  for (EventKind kind : kDrawnKinds) {
    bool legend_shown = false;
    for (const GanttRow& row : rows) {
      if (row.count(kind) == 0) continue;
      const double lo = row.rank + lane_of(kind).lo, hi = row.rank + lane_of(kind).hi;
      // The area owns its edge series (QAreaSeries does not take them over by itself).
      auto* area = new QAreaSeries;
      auto* upper = new QLineSeries(area);
      auto* lower = new QLineSeries(area);
      for (const GanttBar& b : row.bars) {
        if (b.kind != kind) continue;
        const double x0 = b.start_s * kMs, x1 = b.end_s * kMs;
        upper->append({{x0, lo}, {x0, hi}, {x1, hi}, {x1, lo}});
        lower->append({{x0, lo}, {x1, lo}});
      }
      area->setUpperSeries(upper);
      area->setLowerSeries(lower);
      area->setName(QString::fromUtf8(event_kind_name(kind).data(),
                                      static_cast<int>(event_kind_name(kind).size())));
      area->setColor(event_color(kind));
      area->setPen(separators);
      chart->addSeries(area);
      area->attachAxis(x);
      area->attachAxis(y);
      for (QLegendMarker* m : chart->legend()->markers(area)) m->setVisible(!legend_shown);
      legend_shown = true;
    }
  }
  set_timeline_full_ms(chart, std::max(end_s, 1e-9) * kMs);  // what zooming out returns to
  return chart;
}

QChart* memory_chart(const std::string& title, const Prediction& p) {
  return memory_compare_chart(title, {{"", &p}});
}

QChart* memory_compare_chart(const std::string& title, const std::vector<LabelledPrediction>& rows) {
  QChart* chart = new_chart(title);
  auto* bars = new QStackedBarSeries;
  int colour = 0;
  for (const MemoryComponent& c : kMemoryComponents) {
    auto* set = new QBarSet(c.name);
    for (const LabelledPrediction& row : rows) {
      for (const MemoryBreakdown& m : row.prediction->rank_memory) set->append(m.*c.bytes / kGiB);
    }
    set->setColor(kPalette[colour++]);
    bars->append(set);
  }
  QStringList ranks;
  const double capacity_B = rows.empty() ? 0 : rows.front().prediction->capacity_B;
  double top = capacity_B;
  for (const LabelledPrediction& row : rows) {
    for (size_t r = 0; r < row.prediction->rank_memory.size(); ++r) {
      ranks << (row.label.empty() ? QString("rank %1").arg(r)
                                  : QString::fromStdString(row.label) + QString::number(r));
      top = std::max(top, row.prediction->rank_memory[r].total());
    }
  }
  const int n = static_cast<int>(ranks.size());
  auto* categories = new QBarCategoryAxis;
  categories->append(ranks);
  categories->setTitleText("pipeline rank");
  QValueAxis* y = value_axis(rows.size() > 1 ? "GiB per device" : "memory per device (GiB)", 0,
                             top * 1.1 / kGiB);
  chart->addSeries(bars);
  chart->addAxis(categories, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  bars->attachAxis(categories);
  bars->attachAxis(y);
  // The capacity line spans the bars on a value axis aligned with the categories: hidden for
  // one strategy; for several it names each strategy's group of ranks (rank labels would not fit).
  auto* line_x = new QCategoryAxis;
  line_x->setRange(-0.5, n - 0.5);
  if (rows.size() > 1) {
    categories->setLabelsVisible(false);
    categories->setTitleText("");
    line_x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
    line_x->setTitleText("pipeline ranks of each strategy");
    double end = -0.5;
    for (const LabelledPrediction& row : rows) {
      end += static_cast<double>(row.prediction->rank_memory.size());
      line_x->append(QString::fromStdString(row.label), end);
    }
    chart->addAxis(line_x, Qt::AlignBottom);
  } else {
    line_x->setVisible(false);
    chart->addAxis(line_x, Qt::AlignTop);
  }
  auto* capacity = new QLineSeries;
  capacity->setName("capacity");
  capacity->append(-0.5, capacity_B / kGiB);
  capacity->append(n - 0.5, capacity_B / kGiB);
  capacity->setPen(QPen(Qt::red, 2, Qt::DashLine));
  chart->addSeries(capacity);
  capacity->attachAxis(line_x);
  capacity->attachAxis(y);
  return chart;
}

QChart* breakdown_chart(const std::string& title, const std::vector<TimeBreakdown>& rows) {
  QChart* chart = new_chart(title);
  auto* bars = new QHorizontalStackedBarSeries;
  const std::vector<std::string> names = time_segment_names();
  double longest = 0;
  for (size_t s = 0; s < names.size(); ++s) {
    auto* set = new QBarSet(QString::fromStdString(names[s]));
    double sum = 0;
    for (const TimeBreakdown& row : rows) {
      set->append(row.segments[s].seconds * kMs);
      sum += row.segments[s].seconds;
    }
    set->setColor(kPalette[s % std::size(kPalette)]);
    if (sum > 0)
      bars->append(set);  // segments that are zero everywhere stay out of the legend
    else
      delete set;
  }
  QStringList labels;
  for (const TimeBreakdown& row : rows) {
    labels << QString::fromStdString(row.label);
    double total = 0;
    for (const TimeSegment& s : row.segments) total += s.seconds;
    longest = std::max({longest, total, row.iteration_s});
  }
  auto* categories = new QBarCategoryAxis;
  categories->append(labels);
  categories->setReverse(true);
  QValueAxis* x = value_axis("time per iteration (ms)", 0, std::max(longest, 1e-9) * 1.05 * kMs);
  chart->addSeries(bars);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(categories, Qt::AlignLeft);
  bars->attachAxis(x);
  bars->attachAxis(categories);
  return chart;
}

std::vector<const ParetoPoint*> labelled_front(const std::vector<ParetoPoint>& points) {
  double x_span = 0, y_span = 0;
  std::vector<const ParetoPoint*> front;
  for (const ParetoPoint& pt : points) {
    x_span = std::max(x_span, pt.memory_B);
    y_span = std::max(y_span, pt.tokens_per_s);
    if (pt.on_front) front.push_back(&pt);
  }
  std::stable_sort(front.begin(), front.end(), [](const ParetoPoint* a, const ParetoPoint* b) {
    return a->tokens_per_s > b->tokens_per_s;
  });
  auto clash = [&](const ParetoPoint* a, const ParetoPoint* b) {
    return std::abs(a->tokens_per_s - b->tokens_per_s) < kLabelHeightShare * y_span &&
           std::abs(a->memory_B - b->memory_B) < kLabelWidthShare * x_span;
  };
  std::vector<const ParetoPoint*> chosen;
  for (const ParetoPoint* pt : front) {
    if (chosen.size() == kMaxParetoLabels) break;
    if (std::none_of(chosen.begin(), chosen.end(), [&](const ParetoPoint* c) { return clash(pt, c); })) {
      chosen.push_back(pt);
    }
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const ParetoPoint* a, const ParetoPoint* b) { return a->memory_B < b->memory_B; });
  return chosen;
}

namespace {

// Each labelled front point as a one-point series without a marker whose point label is the
// strategy (Qt Charts replaces only @xPoint/@yPoint in a label format: '@' is escaped away).
void add_front_labels(QChart* chart, const std::vector<ParetoPoint>& points, QValueAxis* x,
                      QValueAxis* y) {
  int k = 0;
  for (const ParetoPoint* pt : labelled_front(points)) {
    auto* label = new QScatterSeries;
    label->setName(QString("label %1").arg(k++));
    label->setMarkerSize(1);
    label->setColor(Qt::transparent);
    label->setBorderColor(Qt::transparent);
    label->append(pt->memory_B / kGiB, pt->tokens_per_s);
    label->setPointLabelsFormat(QString::fromStdString(pt->label).replace('@', ' '));
    label->setPointLabelsVisible(true);
    label->setPointLabelsClipping(false);
    label->setPointLabelsColor(QColor(0x333333));
    chart->addSeries(label);
    label->attachAxis(x);
    label->attachAxis(y);
    for (QLegendMarker* m : chart->legend()->markers(label)) m->setVisible(false);
  }
}

}  // namespace

QChart* pareto_chart(const std::string& title, const std::vector<ParetoPoint>& points,
                     double capacity_B) {
  QChart* chart = new_chart(title);
  double max_mem = capacity_B, max_tp = 0;
  for (const ParetoPoint& pt : points) {
    max_mem = std::max(max_mem, pt.memory_B);
    max_tp = std::max(max_tp, pt.tokens_per_s);
  }
  QValueAxis* x = value_axis("peak memory per device (GiB)", 0, max_mem * 1.1 / kGiB);
  QValueAxis* y = value_axis("throughput (tokens/s)", 0, std::max(max_tp, 1.0) * 1.1);
  y->setLabelFormat("%.0f");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  struct Group {
    const char* name;
    QColor colour;
    double size;
    bool front, fits;
  };
  const Group groups[] = {{"does not fit", QColor(0xbab0ac), 8, false, false},
                          {"fits", QColor(0x4e79a7), 9, false, true},
                          {"pareto front", QColor(0xe15759), 12, true, true}};
  for (const Group& g : groups) {
    auto* series = new QScatterSeries;
    series->setName(g.name);
    series->setColor(g.colour);
    series->setMarkerSize(g.size);
    for (const ParetoPoint& pt : points) {
      if (pt.on_front == g.front && pt.fits == g.fits) {
        series->append(pt.memory_B / kGiB, pt.tokens_per_s);
      }
    }
    chart->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
  }
  add_front_labels(chart, points, x, y);
  if (capacity_B <= 0) return chart;  // unknown (search result files do not carry it)
  auto* capacity = new QLineSeries;
  capacity->setName("capacity");
  capacity->append(capacity_B / kGiB, 0);
  capacity->append(capacity_B / kGiB, std::max(max_tp, 1.0) * 1.1);
  capacity->setPen(QPen(Qt::red, 2, Qt::DashLine));
  chart->addSeries(capacity);
  capacity->attachAxis(x);
  capacity->attachAxis(y);
  return chart;
}

void add_pareto_tooltips(QChart* chart, const std::vector<ParetoPoint>& points) {
  for (QAbstractSeries* s : chart->series()) {
    auto* scatter = qobject_cast<QScatterSeries*>(s);
    if (scatter == nullptr) continue;
    QObject::connect(scatter, &QScatterSeries::hovered, chart,
                     [points](const QPointF& at, bool state) {
                       if (!state) return QToolTip::hideText();
                       for (const ParetoPoint& pt : points) {
                         if (qFuzzyCompare(pt.memory_B / kGiB, at.x()) &&
                             qFuzzyCompare(pt.tokens_per_s, at.y())) {
                           QToolTip::showText(QCursor::pos(), QString::fromStdString(pt.label));
                         }
                       }
                     });
  }
}

}  // namespace stratasim
