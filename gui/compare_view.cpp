#include "gui/compare_view.h"

#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <QtWidgets/QGridLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QVBoxLayout>
#include <algorithm>

#include "gui/charts.h"
#include "gui/timeline_view.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

// The compared strategies ringed on the Pareto scatter.
void ring_compared(QChart* chart, const std::vector<VariantResult>& compared) {
  auto* ring = new QScatterSeries;
  ring->setName("compared");
  ring->setMarkerSize(20);
  ring->setColor(Qt::transparent);
  ring->setBorderColor(Qt::black);
  for (const VariantResult& v : compared) {
    ring->append(v.prediction.peak_memory_B / kGiB, v.prediction.tokens_per_s);
  }
  chart->addSeries(ring);
  for (QAbstractAxis* axis : chart->axes()) ring->attachAxis(axis);
}

// The small charts of the bottom row: smaller fonts, the legend on the right.
QChart* compact(QChart* chart) {
  QFont small = chart->font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  chart->legend()->setFont(small);
  chart->legend()->setAlignment(Qt::AlignRight);
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsFont(small);
    axis->setTitleFont(small);
  }
  chart->setMargins(QMargins(2, 2, 2, 2));
  return chart;
}

}  // namespace

CompareView::CompareView(QWidget* parent)
    : QWidget(parent), why_(new QLabel), grid_(new QGridLayout) {
  why_->setWordWrap(true);
  why_->setTextFormat(Qt::RichText);
  why_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(why_);
  layout->addLayout(grid_, 1);
  clear();
}

void CompareView::clear() {
  for (QChartView* v : chart_views()) {
    grid_->removeWidget(v);
    delete v;  // deletes its chart too
  }
  timelines_.clear();
  memory_ = breakdown_ = pareto_ = nullptr;
  compared_.clear();
  lines_.clear();
  why_->setText("Select 2 to 4 strategies in the table and press <b>Compare</b>.");
}

QChartView* CompareView::add_chart(QChart* chart, int row, int column, int column_span,
                                   bool timeline) {
  QChartView* view = timeline ? new TimelineView(chart) : new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumSize(200, 180);
  grid_->addWidget(view, row, column, 1, column_span);
  return view;
}

bool CompareView::set_strategies(const std::vector<VariantResult>& compared,
                                 const std::vector<VariantResult>& all) {
  clear();
  for (const VariantResult& v : compared) {
    if (v.feasible() && count() < kMaxStrategies) compared_.push_back(v);
  }
  if (count() < 2) {
    compared_.clear();
    why_->setText("Compare needs at least two feasible strategies.");
    return false;
  }
  std::vector<EvaluatedStrategy> evaluated;
  std::vector<TimeBreakdown> bars;
  std::vector<LabelledPrediction> memory;
  std::vector<std::string> letters;
  // A grid of 12 columns (divisible by 2, 3 and 4): the timelines share row 0 equally, the
  // memory, breakdown and Pareto charts take a third of row 1 each.
  const int span = 12 / count();
  for (int i = 0; i < count(); ++i) {
    const VariantResult& v = compared_[i];
    letters.push_back(std::string(1, char('A' + i)));
    evaluated.push_back(evaluated_strategy(v));
    bars.push_back(time_breakdown(letters[i] + ": " + v.name, v.prediction));
    memory.push_back({letters[i], &v.prediction});
    const std::string label =
        letters[i] + ": " + v.name + " (" + strategy_label(v.strategy, v.plan->data_parallel()) + ")";
    timelines_.push_back(add_chart(timeline_chart(label, v.prediction, false), 0, i * span, span, true));
  }
  // One time scale for all: the longest iteration, zoomed and panned together.
  std::vector<TimelineView*> timelines;
  for (QChartView* view : timelines_) timelines.push_back(static_cast<TimelineView*>(view));
  link_time_axes(timelines);
  memory_ = add_chart(compact(memory_compare_chart("memory per device, by pipeline rank", memory)),
                      1, 0, 4);
  breakdown_ = add_chart(compact(breakdown_chart("time per iteration", bars)), 1, 4, 4);
  const std::vector<ParetoPoint> points = pareto_points(all);
  QChart* pareto = pareto_chart("throughput vs memory per device", points,
                                compared_.front().prediction.capacity_B);
  ring_compared(pareto, compared_);
  add_pareto_tooltips(pareto, points);
  pareto_ = add_chart(compact(pareto), 1, 8, 4);
  grid_->setRowStretch(0, 1);
  grid_->setRowStretch(1, 1);
  // One list per strategy the winner beats (why_versus_each), the runner-up first.
  QString html = "<b>Why " + QString::fromStdString(compared_[best_strategy(evaluated)].name) +
                 " wins</b>";
  for (const WhyVersus& versus : why_versus_each(evaluated)) {
    html += "<ul style='margin:0'>";
    for (const std::string& s : versus.sentences) {
      lines_ << QString::fromStdString(s);
      html += "<li>" + lines_.back().toHtmlEscaped() + "</li>";
    }
    html += "</ul>";
  }
  why_->setText(html);
  return true;
}

QString CompareView::explanation() const { return why_->text(); }

std::vector<QChartView*> CompareView::chart_views() const {
  std::vector<QChartView*> all = timelines_;
  if (memory_) all.push_back(memory_);
  if (breakdown_) all.push_back(breakdown_);
  if (pareto_) all.push_back(pareto_);
  return all;
}

}  // namespace stratasim
