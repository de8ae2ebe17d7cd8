#include "gui/main_window.h"

#include <QtCharts/QChartView>
#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QTimer>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableView>
#include <QtWidgets/QVBoxLayout>

#include "gui/calibration_tab.h"
#include "gui/charts.h"
#include "gui/timeline_view.h"
#include <string_view>
#include "gui/compare_view.h"
#include "gui/export.h"
#include "gui/scenario_editor.h"
#include "gui/strategy_filter.h"
#include "gui/variant_table_model.h"
#include "sim/core/error.h"

namespace stratasim {
namespace {

QSpinBox* degree_filter(const char* name) {
  auto* box = new QSpinBox;
  box->setRange(0, 4096);
  box->setSpecialValueText(QString(name) + " any");
  box->setPrefix(QString(name) + " ");
  return box;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      model_(new VariantTableModel(this)),
      proxy_(new StrategyFilter(this)),
      pages_(new QTabWidget),
      table_(new QTableView),
      tabs_(new QTabWidget),
      compare_(new CompareView),
      editor_(new ScenarioEditor),
      calibration_(new CalibrationTab),
      status_(new QLabel("open a scenario (File > Open)")),
      progress_(new QProgressBar),
      evaluate_(new QPushButton("Evaluate variants")),
      search_(new QPushButton("Search")),
      simulate_(new QPushButton("Simulate selected (SimGrid)")),
      cancel_(new QPushButton("Cancel")),
      compare_button_(new QPushButton("Compare selected")),
      top_k_(new QSpinBox),
      objective_(new QComboBox) {
  setWindowTitle("stratasim");
  pages_->addTab(build_strategies_page(), "Strategies");
  pages_->addTab(compare_, "Compare");
  pages_->addTab(editor_, "Scenario");
  pages_->addTab(calibration_, "Calibration");
  setCentralWidget(pages_);
  progress_->setMaximumWidth(200);
  progress_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  build_menu();
  connect(&runner_, &JobRunner::finished, this, &MainWindow::on_job_finished);
  connect(&runner_, &JobRunner::progress, this, &MainWindow::on_progress);
  connect(&runner_, &JobRunner::message, status_, &QLabel::setText);
  connect(editor_, &ScenarioEditor::applied, this, &MainWindow::apply_editor);
}

QWidget* MainWindow::build_strategies_page() {
  proxy_->setSourceModel(model_);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(VariantTableModel::kTokens, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(VariantTableModel::kVariant, QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  for (const char* name : {"pipeline timeline", "memory", "time breakdown", "pareto"}) {
    auto* view = std::string_view(name) == "pipeline timeline" ? new TimelineView : new QChartView;
    view->setRenderHint(QPainter::Antialiasing);
    tabs_->addTab(view, name);
  }
  top_k_->setRange(1, 1000);
  top_k_->setValue(50);
  top_k_->setPrefix("top ");
  // The search's objective; the data is the Objective value.
  for (Objective o : {Objective::kThroughput, Objective::kThroughputPerDevice, Objective::kMemoryHeadroom,
                      Objective::kCostPerToken}) {
    objective_->addItem(QString("by ") + QString::fromStdString(std::string(objective_name(o))).replace('_', ' '),
                        static_cast<int>(o));
  }
  objective_->setToolTip("what the search ranks by (cost per token needs cluster.device.price_per_hour)");
  cancel_->setEnabled(false);
  auto* jobs = new QHBoxLayout;
  for (QWidget* w : std::initializer_list<QWidget*>{evaluate_, search_, top_k_, objective_, simulate_, cancel_}) {
    jobs->addWidget(w);
  }
  jobs->addStretch(1);
  jobs->addWidget(compare_button_);
  connect(evaluate_, &QPushButton::clicked, this, &MainWindow::run_evaluate);
  connect(search_, &QPushButton::clicked, this, &MainWindow::run_search);
  connect(simulate_, &QPushButton::clicked, this, &MainWindow::run_simulate);
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel);
  connect(compare_button_, &QPushButton::clicked, this, &MainWindow::compare_selected);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setSizes({200, 520});
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  layout->addLayout(jobs);
  layout->addWidget(build_filter_bar());
  layout->addWidget(split, 1);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::show_selected);
  return page;
}

QWidget* MainWindow::build_filter_bar() {
  auto* bar = new QWidget;
  auto* layout = new QHBoxLayout(bar);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(new QLabel("filter:"));
  auto* fits = new QCheckBox("fits in memory");
  auto* schedule = new QComboBox;
  schedule->addItems(
      {"any schedule", "gpipe", "1f1b", "interleaved", "pipedream_async", "zb_h1", "zb_h2",
       "dualpipe", "zb_v"});
  layout->addWidget(fits);
  layout->addWidget(schedule);
  connect(fits, &QCheckBox::toggled, proxy_, &StrategyFilter::set_fits_only);
  connect(schedule, &QComboBox::currentIndexChanged, this, [this, schedule](int i) {
    proxy_->set_schedule(i == 0 ? QString() : schedule->currentText());
  });
  for (auto [name, column] : {std::pair{"tp", int(VariantTableModel::kTp)},
                              {"pp", int(VariantTableModel::kPp)}, {"dp", int(VariantTableModel::kDp)},
                              {"cp", int(VariantTableModel::kCp)}, {"ep", int(VariantTableModel::kEp)}}) {
    QSpinBox* box = degree_filter(name);
    layout->addWidget(box);
    connect(box, &QSpinBox::valueChanged, this,
            [this, column](int v) { proxy_->set_degree(column, v); });
  }
  layout->addStretch(1);
  return bar;
}

void MainWindow::build_menu() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open scenario...", QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open scenario", "scenarios",
                                                      "Scenarios (*.json)");
    if (!path.isEmpty()) load_scenario(path);
  });
  file->addAction("&Save scenario as...", QKeySequence::SaveAs, this, [this] {
    file_dialog_then("Save scenario", "JSON (*.json)", true, &MainWindow::save_scenario);
  });
  file->addAction("Export table as &CSV...", this, [this] {
    file_dialog_then("Export table", "CSV (*.csv)", true, &MainWindow::export_table_csv);
  });
  file->addAction("Export chart as &PNG...", this, [this] {
    file_dialog_then("Export chart", "PNG (*.png)", true, &MainWindow::export_chart_png);
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::file_dialog_then(const QString& title, const QString& filter, bool save,
                                  void (MainWindow::*action)(const QString&)) {
  const QString path = save ? QFileDialog::getSaveFileName(this, title, {}, filter)
                            : QFileDialog::getOpenFileName(this, title, {}, filter);
  if (path.isEmpty()) return;
  try {
    (this->*action)(path);
    status_->setText("wrote " + path);
  } catch (const std::exception& e) {
    QMessageBox::warning(this, title, e.what());
  }
}

QChartView* MainWindow::chart_view(int tab) const {
  return qobject_cast<QChartView*>(tabs_->widget(tab));
}

void MainWindow::report_later(const QString& error) {
  status_->setText("error: " + error);
  QTimer::singleShot(0, this, [this] { emit evaluation_finished(false); });
}

bool MainWindow::load_scenario(const QString& path) {
  if (busy()) return false;
  try {
    const Json doc = load_json_file(path.toStdString());
    scenario_ = read_scenario(doc, path.toStdString());
    editor_->set_document(doc, path.toStdString());
  } catch (const std::exception& e) {
    report_later(e.what());
    return true;
  }
  path_ = path;
  edited_ = false;
  loaded_ = true;
  setWindowTitle(QString::fromStdString("stratasim - " + scenario_.name));
  return run_evaluate();
}

void MainWindow::apply_editor() {
  try {
    scenario_ = editor_->scenario();
  } catch (const std::exception& e) {
    editor_->show_error(e.what());
    return;
  }
  editor_->show_error({});
  edited_ = loaded_ = true;
  pages_->setCurrentIndex(kStrategiesPage);
  run_evaluate();
}

void MainWindow::started(bool ok, const QString& what) {
  if (!ok) return;
  status_->setText(what + " ...");
  progress_->setRange(0, 0);
  progress_->show();
  cancel_->setEnabled(true);
  for (QPushButton* b : {evaluate_, search_, simulate_}) b->setEnabled(false);
}

bool MainWindow::run_evaluate() {
  if (!loaded_ || busy()) return false;
  const bool ok = runner_.start_evaluate(scenario_);
  started(ok, "evaluating " + QString::fromStdString(scenario_.name));
  return ok;
}

bool MainWindow::run_search() {
  if (!loaded_ || busy()) return false;
  const bool ok = runner_.start_search(scenario_, top_k_->value(),
                                       static_cast<Objective>(objective_->currentData().toInt()));
  started(ok, "searching " + QString::number(scenario_.search.size()) + " points");
  return ok;
}

bool MainWindow::run_simulate() {
  if (!loaded_ || busy()) return false;
  QString variant = selected_variant();
  bool is_variant = false;
  for (const auto& [name, s] : scenario_.variants) is_variant |= QString::fromStdString(name) == variant;
  if (!is_variant) variant = QString::fromStdString(scenario_.variants.front().first);
  QString file = path_;
  if (edited_) {  // the child reads the edited scenario from a file of its own
    file = QDir::temp().filePath(QString("stratasim_gui_%1.json").arg(QCoreApplication::applicationPid()));
    try {
      save_json(editor_->document(), file.toStdString());
    } catch (const std::exception& e) {
      report_later(e.what());
      return false;
    }
  }
  started(true, "simulating " + variant + " with SimGrid");
  runner_.start_simulate(scenario_, file, variant == "base" ? QString() : variant);
  return true;
}

void MainWindow::cancel() {
  runner_.cancel();
  status_->setText("cancelling ...");
}

void MainWindow::on_progress(int percent) {
  if (percent < 0) return progress_->setRange(0, 0);
  progress_->setRange(0, 100);
  progress_->setValue(percent);
}

void MainWindow::on_job_finished(bool ok) {
  progress_->hide();
  cancel_->setEnabled(false);
  for (QPushButton* b : {evaluate_, search_, simulate_}) b->setEnabled(true);
  const JobResult& r = runner_.result();
  if (!ok) {
    status_->setText("error: " + r.error);
    emit evaluation_finished(false);
    return;
  }
  std::vector<VariantResult> rows = r.rows;
  if (r.kind == JobKind::kSimulate) {  // the simulated row joins the analytical ones
    rows = model_->rows();
    rows.insert(rows.end(), r.rows.begin(), r.rows.end());
  }
  model_->set_rows(std::move(rows));
  // A search's rows in its own ranking (the objective's order); evaluated variants by throughput.
  if (r.kind == JobKind::kSearch) {
    table_->sortByColumn(VariantTableModel::kVariant, Qt::AscendingOrder);
  } else if (r.kind == JobKind::kEvaluate) {
    table_->sortByColumn(VariantTableModel::kTokens, Qt::DescendingOrder);
  }
  status_->setText(r.summary);
  show_all_charts();
  select_row(0);
  emit evaluation_finished(true);
}

void MainWindow::show_all_charts() {
  std::vector<TimeBreakdown> bars;
  for (const VariantResult& v : model_->rows()) {
    if (v.feasible() && bars.size() < 12) bars.push_back(time_breakdown(v.name, v.prediction));
  }
  replace_chart(kBreakdownTab, breakdown_chart("time per iteration", bars));
  const std::vector<ParetoPoint> points = pareto_points(model_->rows());
  QChart* pareto =
      pareto_chart("throughput vs memory per device", points, scenario_.hardware.device.memory_B);
  add_pareto_tooltips(pareto, points);
  replace_chart(kParetoTab, pareto);
}

void MainWindow::select_rows(const std::vector<int>& view_rows) {
  QItemSelection selection;
  for (int r : view_rows) {
    if (r < proxy_->rowCount()) selection.select(proxy_->index(r, 0), proxy_->index(r, 0));
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect |
                                                  QItemSelectionModel::Rows);
}

std::vector<VariantResult> MainWindow::selected_rows() const {
  QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) {
    return a.row() < b.row();
  });
  std::vector<VariantResult> out;
  for (const QModelIndex& i : rows) out.push_back(model_->rows()[proxy_->mapToSource(i).row()]);
  return out;
}

QString MainWindow::selected_variant() const {
  const std::vector<VariantResult> rows = selected_rows();
  return rows.empty() ? QString() : QString::fromStdString(rows.front().name);
}

QString MainWindow::status() const { return status_->text(); }

void MainWindow::show_selected() {
  const std::vector<VariantResult> rows = selected_rows();
  if (rows.empty()) return;
  const VariantResult& v = rows.front();
  if (!v.feasible()) {
    status_->setText(QString::fromStdString(v.name + ": infeasible: " + v.infeasible));
    return;
  }
  const std::string label = v.name + " (" + strategy_label(v.strategy, v.plan->data_parallel()) + ")";
  replace_chart(kTimelineTab, timeline_chart(label, v.prediction));
  replace_chart(kMemoryTab, memory_chart(label + " memory per pipeline rank", v.prediction));
}

bool MainWindow::compare_selected() {
  const std::vector<VariantResult> rows = selected_rows();
  if (!compare_->set_strategies(rows, model_->rows())) {
    status_->setText("select 2 to 4 feasible rows to compare");
    return false;
  }
  pages_->setCurrentIndex(kComparePage);
  return true;
}

void MainWindow::replace_chart(int tab, QChart* chart) {
  QChartView* view = chart_view(tab);
  QChart* old = view->chart();
  view->setChart(chart);  // the view takes the new chart and releases the old one
  delete old;
}

void MainWindow::save_scenario(const QString& path) {
  save_json(editor_->document(), path.toStdString());
}

void MainWindow::export_table_csv(const QString& path) {
  save_table_csv(*proxy_, path.toStdString());
}

void MainWindow::export_chart_png(const QString& path) {
  QWidget* what = pages_->currentIndex() == kComparePage ? static_cast<QWidget*>(compare_)
                  : pages_->currentIndex() == kCalibrationPage
                      ? static_cast<QWidget*>(calibration_)
                      : static_cast<QWidget*>(tabs_->currentWidget());
  save_widget_png(*what, path.toStdString());
}

}  // namespace stratasim
