#include "gui/main_window.h"

#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <QtConcurrent/QtConcurrentRun>
#include <QtCore/QSortFilterProxyModel>
#include <QtGui/QCursor>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QProgressBar>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableView>
#include <QtWidgets/QToolTip>

#include "gui/charts.h"
#include "gui/variant_table_model.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

enum Tab { kTimelineTab, kMemoryTab, kBreakdownTab, kParetoTab };

Evaluation evaluate(const QString& path) {
  Evaluation e;
  try {
    e.scenario = load_scenario(path.toStdString());
    e.rows = evaluate_variants_with_timelines(e.scenario);
  } catch (const std::exception& ex) {
    e.error = QString::fromStdString(ex.what());
  }
  return e;
}

// Hovering a Pareto point shows the strategy it stands for.
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

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      model_(new VariantTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView),
      tabs_(new QTabWidget),
      status_(new QLabel("open a scenario (File > Open)")),
      progress_(new QProgressBar) {
  setWindowTitle("stratasim");
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(VariantTableModel::kTokens, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(VariantTableModel::kVariant,
                                                   QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  for (const char* name : {"pipeline timeline", "memory", "time breakdown", "pareto"}) {
    auto* view = new QChartView;
    view->setRenderHint(QPainter::Antialiasing);
    tabs_->addTab(view, name);
  }
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setSizes({220, 580});  // the table needs a few rows, the charts the space
  setCentralWidget(split);
  progress_->setRange(0, 0);  // busy indicator while the worker runs
  progress_->setMaximumWidth(160);
  progress_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open scenario...", QKeySequence::Open, this, &MainWindow::open_dialog);
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  connect(&watcher_, &QFutureWatcher<Evaluation>::finished, this, &MainWindow::on_evaluated);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::show_selected);
}

QChartView* MainWindow::chart_view(int tab) const {
  return qobject_cast<QChartView*>(tabs_->widget(tab));
}

bool MainWindow::load_scenario(const QString& path) {
  if (busy()) return false;
  status_->setText("evaluating " + path + " ...");
  progress_->show();
  watcher_.setFuture(QtConcurrent::run(evaluate, path));
  return true;
}

void MainWindow::open_dialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, "Open scenario", "scenarios", "Scenarios (*.json)");
  if (!path.isEmpty()) load_scenario(path);
}

void MainWindow::on_evaluated() {
  progress_->hide();
  Evaluation e = watcher_.result();
  if (!e.error.isEmpty()) {
    status_->setText("error: " + e.error);
    emit evaluation_finished(false);
    return;
  }
  scenario_ = std::move(e.scenario);
  model_->set_rows(std::move(e.rows));
  setWindowTitle(QString::fromStdString("stratasim - " + scenario_.name));
  status_->setText(QString("%1: %2 variants")
                       .arg(QString::fromStdString(scenario_.name))
                       .arg(model_->rowCount()));
  std::vector<TimeBreakdown> bars;
  for (const VariantResult& v : model_->rows()) {
    if (v.feasible()) bars.push_back(time_breakdown(v.name, v.prediction));
  }
  replace_chart(kBreakdownTab, breakdown_chart("time per iteration", bars));
  const std::vector<ParetoPoint> points = pareto_points(model_->rows());
  QChart* pareto =
      pareto_chart("throughput vs memory per device", points, scenario_.hardware.device.memory_B);
  add_pareto_tooltips(pareto, points);
  replace_chart(kParetoTab, pareto);
  select_row(0);
  emit evaluation_finished(true);
}

void MainWindow::select_row(int view_row) {
  if (view_row < proxy_->rowCount()) table_->selectRow(view_row);
}

QString MainWindow::selected_variant() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return {};
  return proxy_->index(rows.front().row(), VariantTableModel::kVariant).data().toString();
}

void MainWindow::show_selected() {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  const VariantResult& v = model_->rows()[proxy_->mapToSource(rows.front()).row()];
  if (!v.feasible()) {
    status_->setText(QString::fromStdString(v.name + ": infeasible: " + v.infeasible));
    return;
  }
  const std::string label = v.name + " (" + strategy_label(v.strategy, v.plan->dp) + ")";
  replace_chart(kTimelineTab, timeline_chart(label, v.prediction));
  replace_chart(kMemoryTab, memory_chart(label + " memory per pipeline rank", v.prediction));
}

void MainWindow::replace_chart(int tab, QChart* chart) {
  QChartView* view = chart_view(tab);
  QChart* old = view->chart();
  view->setChart(chart);  // the view takes the new chart and releases the old one
  delete old;
}

}  // namespace stratasim
