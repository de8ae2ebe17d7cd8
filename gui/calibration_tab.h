// The calibration tab: runs `stratasim calibrate -o HARDWARE.json` (measures this machine's
// kernels) and `stratasim validate --hardware HARDWARE.json --json REPORT.json` as child
// processes, shows their stderr as it arrives (Cancel kills the child), and charts the report:
// predicted against measured time per kernel (log-log, with the y = x line; hover for the kernel
// and its error) and per pipeline schedule (bars, the error in each label), with the MAPE.
#pragma once

#include <QtWidgets/QWidget>

#include "gui/calibration_data.h"
#include "gui/command_runner.h"

class QChart;
class QChartView;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace stratasim {

QChart* kernel_calibration_chart(const CalibrationReport& r);   // scatter "kernels", line "y = x"
QChart* runtime_calibration_chart(const CalibrationReport& r);  // bar sets "predicted", "measured"

class CalibrationTab : public QWidget {
  Q_OBJECT
 public:
  explicit CalibrationTab(QWidget* parent = nullptr);

  void calibrate();  // then validate, when calibrate succeeds
  void validate();
  void cancel();
  bool busy() const { return runner_.busy(); }
  // Reads and shows a report; false (and the error in the status line) when it is unreadable.
  bool load_report(const QString& path);

  const CalibrationReport& report() const { return report_; }
  QChartView* kernel_view() const { return kernels_; }
  QChartView* runtime_view() const { return runtime_; }
  QString status() const;
  QString log() const;

 signals:
  void finished(bool ok);  // a calibrate/validate run ended (or failed to start)

 private:
  void on_finished(int code, bool cancelled, const QString& error);
  void set_running(bool running);
  QString hardware_file() const;

  CommandRunner runner_;
  enum class Step { kNone, kCalibrate, kValidate } step_ = Step::kNone;
  bool validate_after_ = false;
  QLineEdit* hardware_;
  QPushButton *calibrate_, *validate_, *load_, *cancel_;
  QPlainTextEdit* log_;
  QLabel* status_;
  QChartView *kernels_, *runtime_;
  CalibrationReport report_;
  QString report_path_;
};

}  // namespace stratasim
