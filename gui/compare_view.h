// The compare view: 2-4 strategies side by side, lettered A-D. A generated explanation of why
// the best one wins (sim/compare/why.h) on top; a row of pipeline timelines (Gantt per stage),
// one per strategy on one time scale (zoomed and panned together, timeline_view.h); below, the memory per pipeline rank of all of them in one chart (stacked,
// capacity line), their time breakdown, and the Pareto scatter of every row with the compared
// ones ringed.
#pragma once

#include <QtCore/QStringList>
#include <QtWidgets/QWidget>
#include <vector>

#include "gui/variant_eval.h"

class QChart;
class QChartView;
class QGridLayout;
class QLabel;

namespace stratasim {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxStrategies = 4;
  explicit CompareView(QWidget* parent = nullptr);

  // `compared`: 2-4 feasible rows (more are cut to 4); `all`: every row for the Pareto scatter.
  // Returns false (and shows why) for fewer than two feasible rows.
  bool set_strategies(const std::vector<VariantResult>& compared,
                      const std::vector<VariantResult>& all);
  void clear();

  int count() const { return static_cast<int>(compared_.size()); }
  const std::vector<VariantResult>& compared() const { return compared_; }
  QString explanation() const;                       // the label's rich text
  const QStringList& explanation_lines() const { return lines_; }  // why_best()'s sentences
  QChartView* timeline_view(int i) const { return timelines_.at(i); }
  QChartView* memory_view() const { return memory_; }  // categories "A0", "A1", "B0", ...
  QChartView* breakdown_view() const { return breakdown_; }
  QChartView* pareto_view() const { return pareto_; }
  std::vector<QChartView*> chart_views() const;

 private:
  QChartView* add_chart(QChart* chart, int row, int column, int column_span = 1,
                        bool timeline = false);
  QLabel* why_;
  QGridLayout* grid_;
  std::vector<VariantResult> compared_;
  QStringList lines_;
  std::vector<QChartView*> timelines_;
  QChartView* memory_ = nullptr;
  QChartView* breakdown_ = nullptr;
  QChartView* pareto_ = nullptr;
};

}  // namespace stratasim
