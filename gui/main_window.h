// stratasim-gui's main window: loads a scenario, evaluates its variants in a worker thread
// (the window stays responsive), lists them in a sortable table and shows the charts of the
// selected variant in tabs (timeline, memory; time breakdown and Pareto over all variants).
#pragma once

#include <QtCore/QFutureWatcher>
#include <QtCore/QString>
#include <QtWidgets/QMainWindow>

#include "gui/variant_eval.h"

class QChart;
class QChartView;
class QLabel;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;
class QTabWidget;

namespace stratasim {

class VariantTableModel;

// What the worker thread hands back: the scenario and its evaluated variants, or an error.
struct Evaluation {
  Scenario scenario;
  std::vector<VariantResult> rows;
  QString error;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Starts loading and evaluating the scenario in a worker thread; evaluation_finished()
  // follows. Ignored (returns false) while an evaluation runs.
  bool load_scenario(const QString& path);
  bool busy() const { return watcher_.isRunning(); }

  // For tests and screenshots.
  QTableView* table() const { return table_; }
  QTabWidget* tabs() const { return tabs_; }
  QChartView* chart_view(int tab) const;
  QString selected_variant() const;
  void select_row(int view_row);

 signals:
  void evaluation_finished(bool ok);

 private:
  void open_dialog();
  void on_evaluated();
  void show_selected();
  void replace_chart(int tab, QChart* chart);

  VariantTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QTabWidget* tabs_;
  QLabel* status_;
  QProgressBar* progress_;
  QFutureWatcher<Evaluation> watcher_;
  Scenario scenario_;
};

}  // namespace stratasim
