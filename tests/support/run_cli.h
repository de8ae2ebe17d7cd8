// Runs the stratasim command (built by this project) and captures its exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <doctest/doctest.h>

namespace stratasim::testing {

struct CliRun {
  int code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line and captures its exit code and output (stderr included).
inline CliRun run_command(const std::string& command_line) {
  const std::string cmd = command_line + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliRun run_cli(const std::string& args) {
  return run_command(std::string(STRATASIM_BINARY) + " " + args);
}

}  // namespace stratasim::testing
