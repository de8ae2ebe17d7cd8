#include "gui/calibration_tab.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <QtCore/QDir>
#include <QtCore/QStandardPaths>
#include <QtGui/QCursor>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSplitter>
#include <QtWidgets/QToolTip>
#include <QtWidgets/QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "sim/core/text.h"
#include "sim/core/units.h"

namespace stratasim {
namespace {

constexpr double kMsPerS = 1 / kMilli;

QString percent(double fraction) {
  return QString::fromStdString(format_text("%+.1f%%", 100 * fraction));
}

QLogValueAxis* log_axis(const QString& title, double lo, double hi) {
  auto* a = new QLogValueAxis;
  a->setTitleText(title);
  a->setBase(10);
  a->setLabelFormat("%g");
  a->setRange(lo, hi);
  return a;
}

}  // namespace

QChart* kernel_calibration_chart(const CalibrationReport& r) {
  auto* chart = new QChart;
  chart->setTitle("kernels: predicted vs measured (ms)");
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* points = new QScatterSeries;
  points->setName("kernels");
  points->setMarkerSize(9);
  double lo = 1e300, hi = 0;
  for (const KernelCheck& k : r.kernels) {
    if (k.predicted_s <= 0 || k.measured_s <= 0) continue;  // not drawable on a log scale
    points->append(k.measured_s * kMsPerS, k.predicted_s * kMsPerS);
    lo = std::min({lo, k.measured_s, k.predicted_s});
    hi = std::max({hi, k.measured_s, k.predicted_s});
  }
  if (hi <= 0) lo = 1e-3, hi = 1;  // nothing drawable: an empty decade
  lo *= kMsPerS / 2, hi *= kMsPerS * 2;
  auto* diagonal = new QLineSeries;
  diagonal->setName("y = x");
  diagonal->append(lo, lo);
  diagonal->append(hi, hi);
  diagonal->setPen(QPen(Qt::gray, 1, Qt::DashLine));
  QLogValueAxis* x = log_axis("measured (ms)", lo, hi);
  QLogValueAxis* y = log_axis("predicted (ms)", lo, hi);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QXYSeries* s : {static_cast<QXYSeries*>(diagonal), static_cast<QXYSeries*>(points)}) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  std::vector<KernelCheck> kernels = r.kernels;
  QObject::connect(points, &QScatterSeries::hovered, chart, [kernels](const QPointF& at, bool on) {
    if (!on) return QToolTip::hideText();
    for (const KernelCheck& k : kernels) {
      if (qFuzzyCompare(k.measured_s * kMsPerS, at.x()) &&
          qFuzzyCompare(k.predicted_s * kMsPerS, at.y())) {
        QToolTip::showText(QCursor::pos(),
                           QString::fromStdString(k.label()) + ": error " + percent(k.error));
      }
    }
  });
  return chart;
}

QChart* runtime_calibration_chart(const CalibrationReport& r) {
  auto* chart = new QChart;
  chart->setTitle("pipeline schedules and DAGs (scenario path): time (ms), error in each label");
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* predicted = new QBarSet("predicted");
  auto* measured = new QBarSet("measured");
  QStringList labels;
  double top = 0;
  for (const RuntimeCheck& c : r.runtime) {
    predicted->append(c.predicted_s * kMsPerS);
    measured->append(c.measured_s * kMsPerS);
    labels << QString::fromStdString(c.label()) + "\n" + percent(c.error);
    top = std::max({top, c.predicted_s, c.measured_s});
  }
  auto* bars = new QBarSeries;
  bars->append(predicted);
  bars->append(measured);
  auto* categories = new QBarCategoryAxis;
  categories->append(labels);
  auto* y = new QValueAxis;
  y->setTitleText("time (ms)");
  y->setRange(0, std::max(top, 1e-6) * 1.1 * kMsPerS);
  y->applyNiceNumbers();
  chart->addSeries(bars);
  chart->addAxis(categories, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  bars->attachAxis(categories);
  bars->attachAxis(y);
  return chart;
}

CalibrationTab::CalibrationTab(QWidget* parent)
    : QWidget(parent),
      hardware_(new QLineEdit(QDir(QStandardPaths::writableLocation(QStandardPaths::TempLocation))
                                  .filePath("stratasim_hardware.json"))),
      calibrate_(new QPushButton("Calibrate + validate")),
      validate_(new QPushButton("Validate")),
      load_(new QPushButton("Load report...")),
      cancel_(new QPushButton("Cancel")),
      log_(new QPlainTextEdit),
      status_(new QLabel("Calibrate measures this machine's kernels and pipeline runtime; "
                         "validate compares them with the predictions.")),
      kernels_(new QChartView(kernel_calibration_chart({}))),
      runtime_(new QChartView(runtime_calibration_chart({}))) {
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  status_->setWordWrap(true);
  cancel_->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(new QLabel("hardware file"));
  buttons->addWidget(hardware_, 1);
  for (QPushButton* b : {calibrate_, validate_, load_, cancel_}) buttons->addWidget(b);
  auto* charts = new QSplitter;
  charts->addWidget(kernels_);
  charts->addWidget(runtime_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(charts);
  split->addWidget(log_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(status_);
  layout->addWidget(split, 1);
  for (QChartView* v : {kernels_, runtime_}) v->setRenderHint(QPainter::Antialiasing);
  connect(calibrate_, &QPushButton::clicked, this, &CalibrationTab::calibrate);
  connect(validate_, &QPushButton::clicked, this, &CalibrationTab::validate);
  connect(cancel_, &QPushButton::clicked, this, &CalibrationTab::cancel);
  connect(load_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Validation report", {}, "JSON (*.json)");
    if (!path.isEmpty()) load_report(path);
  });
  connect(&runner_, &CommandRunner::line, log_, &QPlainTextEdit::appendPlainText);
  connect(&runner_, &CommandRunner::finished, this, &CalibrationTab::on_finished);
}

QString CalibrationTab::hardware_file() const { return hardware_->text().trimmed(); }
QString CalibrationTab::status() const { return status_->text(); }
QString CalibrationTab::log() const { return log_->toPlainText(); }

void CalibrationTab::set_running(bool running) {
  for (QPushButton* b : {calibrate_, validate_, load_}) b->setEnabled(!running);
  cancel_->setEnabled(running);
}

void CalibrationTab::calibrate() {
  if (busy()) return;
  step_ = Step::kCalibrate;
  validate_after_ = true;
  log_->appendPlainText("$ stratasim calibrate -o " + hardware_file());
  status_->setText("calibrating ...");
  set_running(true);
  runner_.start({"calibrate", "-o", hardware_file()});
}

void CalibrationTab::validate() {
  if (busy()) return;
  step_ = Step::kValidate;
  validate_after_ = false;
  report_path_ = hardware_file() + ".validation.json";
  log_->appendPlainText("$ stratasim validate --hardware " + hardware_file() + " --json " +
                        report_path_);
  status_->setText("validating ...");
  set_running(true);
  runner_.start({"validate", "--hardware", hardware_file(), "--json", report_path_});
}

void CalibrationTab::cancel() { runner_.cancel(); }

void CalibrationTab::on_finished(int code, bool cancelled, const QString& error) {
  set_running(false);
  const char* what = step_ == Step::kCalibrate ? "calibrate" : "validate";
  bool ok = false;
  if (cancelled) {
    status_->setText(QString("%1 cancelled").arg(what));
  } else if (!error.isEmpty() || code != 0) {
    status_->setText(QString("%1 failed (exit code %2): %3")
                         .arg(what)
                         .arg(code)
                         .arg(error.isEmpty() ? runner_.output().trimmed() : error));
  } else if (step_ == Step::kCalibrate && validate_after_) {
    step_ = Step::kNone;
    validate();
    return;
  } else if (step_ == Step::kValidate) {
    ok = load_report(report_path_);
  } else {
    status_->setText(QString("%1 done").arg(what));
    ok = true;
  }
  step_ = Step::kNone;
  emit finished(ok);
}

bool CalibrationTab::load_report(const QString& path) {
  try {
    report_ = load_calibration_report(path.toStdString());
  } catch (const std::exception& e) {
    status_->setText(QString("error: ") + e.what());
    return false;
  }
  for (auto [view, chart] : {std::pair{kernels_, kernel_calibration_chart(report_)},
                             {runtime_, runtime_calibration_chart(report_)}}) {
    QChart* old = view->chart();
    view->setChart(chart);
    delete old;
  }
  QString text = QString("%1: %2 kernels, %3 schedules")
                     .arg(QString::fromStdString(report_.hardware.empty() ? "report" : report_.hardware))
                     .arg(report_.kernels.size())
                     .arg(report_.runtime.size());
  if (report_.mape_kernels) text += ", kernel MAPE " + QString::number(100 * *report_.mape_kernels, 'f', 1) + "%";
  if (report_.mape_runtime) text += ", runtime MAPE " + QString::number(100 * *report_.mape_runtime, 'f', 1) + "%";
  if (report_.mape_dag) text += ", DAG MAPE " + QString::number(100 * *report_.mape_dag, 'f', 1) + "%";
  if (!report_.machine_check.empty()) text += "; " + QString::fromStdString(machine_check_summary(report_));
  status_->setText(text);
  return true;
}

}  // namespace stratasim
