// The GUI's Cancel (CommandRunner::cancel) leaves no process behind (issue 14): the command it
// started and everything that command started, checked in the process table.
#include <doctest/doctest.h>

#include <QtTest/QSignalSpy>
#include <QtTest/QTest>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gui/command_runner.h"
#include "gui_test_support.h"

namespace fs = std::filesystem;

namespace {

// A process's command line, or "" when it exits while being read (the read then fails with
// ESRCH, which std::ifstream reports by throwing from underflow: CI saw exactly that race).
std::string command_line(const fs::path& proc_dir) {
  const int fd = ::open((proc_dir / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string cmd;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    cmd.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return cmd;
}

// Processes whose command line contains `marker` (NULs between arguments read as spaces); -1
// when /proc cannot be listed, so that a count of 0 always means none was found.
int processes_with(const std::string& marker) {
  int n = 0;
  std::error_code ec;
  fs::directory_iterator it("/proc", ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = command_line(it->path());
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    n += cmd.find(marker) != std::string::npos;
  }
  return ec ? -1 : n;
}

void cancel_and_wait(stratasim::CommandRunner& runner) {
  QSignalSpy done(&runner, &stratasim::CommandRunner::finished);
  runner.cancel();
  REQUIRE((done.count() > 0 || done.wait(5000)));
  CHECK(done.takeFirst().at(1).toBool());  // reported as cancelled
  QTest::qWait(300);                       // the kernel reaps the killed grandchildren
}

}  // namespace

TEST_CASE("command runner: Cancel kills the command's children too (process group)") {
  // A stand-in stratasim that starts a child and waits for it: killing only the command would
  // leave `sleep` running (reparented to init); the group kill takes it with it.
  const std::string script = stratasim::testing::temp_path("fake_with_child.sh");
  {
    std::ofstream out(script);
    out << "#!/bin/sh\necho started >&2\nsleep 8765.4321 &\nwait\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  qputenv("STRATASIM_EXECUTABLE", QByteArray::fromStdString(script));
  stratasim::CommandRunner runner;
  REQUIRE(runner.start({"simulate"}));
  for (int i = 0; i < 50 && processes_with("sleep 8765.4321") == 0; ++i) QTest::qWait(100);
  REQUIRE(processes_with("sleep 8765.4321") == 1);
  cancel_and_wait(runner);
  CHECK(processes_with("sleep 8765.4321") == 0);
  qunsetenv("STRATASIM_EXECUTABLE");
  fs::remove(script);
}

TEST_CASE("command runner: Cancel of a SimGrid simulate leaves no stratasim process") {
  // Megatron 1T at layer granularity simulates for many seconds in a forked child.
  const std::string scenario = stratasim::testing::temp_path("orphan_probe_gui_1t.json");
  fs::copy_file(stratasim::testing::scenario_path("megatron_1t_3072_a100.json"), scenario,
                fs::copy_options::overwrite_existing);
  qputenv("STRATASIM_EXECUTABLE", STRATASIM_BINARY);
  stratasim::CommandRunner runner;
  REQUIRE(runner.start({"simulate", QString::fromStdString(scenario), "--granularity", "layer"}));
  QTest::qWait(1500);
  CHECK(processes_with("orphan_probe_gui_1t") >= 1);
  cancel_and_wait(runner);
  CHECK(processes_with("orphan_probe_gui_1t") == 0);
  qunsetenv("STRATASIM_EXECUTABLE");
  fs::remove(scenario);
}
