// stratasim-gui's main window. Pages: "Strategies" (run evaluate / search / simulate off the GUI
// thread with a progress bar and Cancel; a sortable, filterable table of the results; the
// selected row's charts), "Compare" (2-4 selected rows side by side, gui/compare_view),
// "Scenario" (edit the scenario, gui/scenario_editor) and "Calibration" (gui/calibration_tab).
// File menu: open, save the scenario, export the table as CSV and the visible chart as PNG.
#pragma once

#include <QtCore/QString>
#include <QtWidgets/QMainWindow>

#include "gui/job_runner.h"

class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
class QTabWidget;

namespace stratasim {

class CalibrationTab;
class CompareView;
class ScenarioEditor;
class StrategyFilter;
class VariantTableModel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Page { kStrategiesPage, kComparePage, kScenarioPage, kCalibrationPage };
  enum ChartTab { kTimelineTab, kMemoryTab, kBreakdownTab, kParetoTab };
  explicit MainWindow(QWidget* parent = nullptr);

  // Loads the scenario and evaluates its variants in a worker thread; evaluation_finished()
  // follows through the event loop (also on errors). False while a job runs.
  bool load_scenario(const QString& path);
  // Jobs on the current scenario; each false while a job runs (or without a scenario).
  bool run_evaluate();
  bool run_search();
  bool run_simulate();  // the selected row's variant, as a `stratasim simulate` child
  void cancel();
  bool busy() const { return runner_.busy(); }
  const JobResult& last_job() const { return runner_.result(); }

  // Compares the selected rows (2-4 feasible) and shows the Compare page; false otherwise.
  bool compare_selected();
  void select_rows(const std::vector<int>& view_rows);
  void select_row(int view_row) { select_rows({view_row}); }

  void save_scenario(const QString& path);    // throws InputError
  void export_table_csv(const QString& path);  // the rows as filtered and sorted
  void export_chart_png(const QString& path);  // the visible chart (Compare: the whole page)

  // For tests and screenshots.
  QTableView* table() const { return table_; }
  QComboBox* objective_box() const { return objective_; }
  StrategyFilter* filter() const { return proxy_; }
  QTabWidget* pages() const { return pages_; }
  QTabWidget* tabs() const { return tabs_; }
  QChartView* chart_view(int tab) const;
  CompareView* compare_view() const { return compare_; }
  ScenarioEditor* editor() const { return editor_; }
  CalibrationTab* calibration() const { return calibration_; }
  QProgressBar* progress() const { return progress_; }
  QPushButton* cancel_button() const { return cancel_; }
  QString selected_variant() const;
  QString status() const;
  const Scenario& scenario() const { return scenario_; }

 signals:
  void evaluation_finished(bool ok);  // any job: evaluate, search or simulate

 private:
  QWidget* build_strategies_page();
  QWidget* build_filter_bar();
  void build_menu();
  void started(bool ok, const QString& what);
  void on_job_finished(bool ok);
  void on_progress(int percent);
  void show_selected();
  void show_all_charts();
  void apply_editor();
  void replace_chart(int tab, QChart* chart);
  void file_dialog_then(const QString& title, const QString& filter, bool save,
                        void (MainWindow::*action)(const QString&));
  std::vector<VariantResult> selected_rows() const;
  void report_later(const QString& error);

  JobRunner runner_;
  VariantTableModel* model_;
  StrategyFilter* proxy_;
  QTabWidget* pages_;
  QTableView* table_;
  QTabWidget* tabs_;
  CompareView* compare_;
  ScenarioEditor* editor_;
  CalibrationTab* calibration_;
  QLabel* status_;
  QProgressBar* progress_;
  QPushButton *evaluate_, *search_, *simulate_, *cancel_, *compare_button_;
  QSpinBox* top_k_;
  QComboBox* objective_;  // what the search ranks by
  Scenario scenario_;
  QString path_;        // the scenario file as loaded
  bool edited_ = false;  // scenario_ differs from the file at path_
  bool loaded_ = false;
};

}  // namespace stratasim
