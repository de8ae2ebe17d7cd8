// Runs the `stratasim` command as a child process for the window (SimGrid forks, and calibrate
// and validate measure this machine, so neither runs inside the GUI process): its stderr lines
// are reported as they arrive, cancel() kills it.
#pragma once

#include <QtCore/QObject>
#include <QtCore/QProcess>
#include <QtCore/QStringList>

namespace stratasim {

// The stratasim executable: $STRATASIM_EXECUTABLE, else `stratasim` next to this program or
// in ../apps (the build tree), else on PATH; empty when none is found.
QString stratasim_executable();

class CommandRunner : public QObject {
  Q_OBJECT
 public:
  explicit CommandRunner(QObject* parent = nullptr);

  // Starts `stratasim ARGS`; false (and failed() with the reason) when it cannot start or one
  // is still running.
  bool start(const QStringList& args);
  // Kills the child's whole process group (it leads one); finished() follows with
  // cancelled = true.
  void cancel();
  bool busy() const { return process_.state() != QProcess::NotRunning; }
  const QString& output() const { return stderr_; }  // everything it wrote to stderr
  qint64 pid() const { return process_.processId(); }

 signals:
  void line(const QString& text);  // one line of the child's stderr
  void finished(int exit_code, bool cancelled, const QString& error);

 private:
  void read_stderr();
  QProcess process_;
  QString stderr_, partial_;
  bool cancelled_ = false;
};

}  // namespace stratasim
