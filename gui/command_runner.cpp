#include "gui/command_runner.h"

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QStandardPaths>

#include <signal.h>
#include <unistd.h>

namespace stratasim {

QString stratasim_executable() {
  const QString env = qEnvironmentVariable("STRATASIM_EXECUTABLE");
  if (!env.isEmpty()) return QFileInfo(env).isExecutable() ? env : QString();
  const QDir here(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {here.filePath("stratasim"), here.filePath("../apps/stratasim")}) {
    if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).canonicalFilePath();
  }
  return QStandardPaths::findExecutable("stratasim");
}

CommandRunner::CommandRunner(QObject* parent) : QObject(parent) {
  connect(&process_, &QProcess::readyReadStandardError, this, &CommandRunner::read_stderr);
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    read_stderr();
    if (!partial_.isEmpty()) {
      stderr_ += partial_;
      emit line(partial_);
    }
    partial_.clear();
    const bool crashed = status == QProcess::CrashExit && !cancelled_;
    emit finished(code, cancelled_, crashed ? "stratasim crashed" : QString());
  });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) {
      emit finished(-1, false, "cannot start " + process_.program() + ": " + process_.errorString());
    }
  });
}

bool CommandRunner::start(const QStringList& args) {
  if (busy()) return false;
  const QString exe = stratasim_executable();
  stderr_.clear();
  partial_.clear();
  cancelled_ = false;
  if (exe.isEmpty()) {
    emit finished(-1, false,
                  "the stratasim executable was not found next to stratasim-gui, in ../apps or "
                  "on PATH (set STRATASIM_EXECUTABLE)");
    return false;
  }
  process_.setProgram(exe);
  process_.setArguments(args);
  process_.setProcessChannelMode(QProcess::SeparateChannels);
  // Its own process group, so cancel() reaches whatever it started (SimGrid's forked child,
  // MPI ranks) and not only the command itself.
  process_.setChildProcessModifier([] { ::setpgid(0, 0); });
  process_.start();
  return true;
}

void CommandRunner::cancel() {
  if (!busy()) return;
  cancelled_ = true;
  const qint64 pid = process_.processId();
  if (pid > 0) ::kill(-static_cast<pid_t>(pid), SIGKILL);  // the whole group
  process_.kill();
}

void CommandRunner::read_stderr() {
  partial_ += QString::fromLocal8Bit(process_.readAllStandardError());
  int newline;
  while ((newline = partial_.indexOf('\n')) >= 0) {
    const QString text = partial_.left(newline);
    partial_.remove(0, newline + 1);
    stderr_ += text + "\n";
    emit line(text);
  }
}

}  // namespace stratasim
