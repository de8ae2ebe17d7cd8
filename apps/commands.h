// The stratasim subcommands. Each returns the process exit code: 0 success, 2 bad input or
// infeasible strategy (message on stderr), 1 internal failure.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace stratasim {

int cmd_evaluate(int argc, char** argv);
int cmd_explain(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_validate(int argc, char** argv);
int cmd_presets(int argc, char** argv);
int cmd_simulate(int argc, char** argv);  // the SimGrid engine (needs STRATASIM_WITH_SIMGRID)
int cmd_search(int argc, char** argv);
int cmd_batch(int argc, char** argv);  // many scenarios, results appended as JSON lines
int cmd_plot(int argc, char** argv);   // charts as PNG (needs STRATASIM_WITH_GUI)
int cmd_kernels(int argc, char** argv);    // the CPU/CUDA kernels, fused vs unfused
int cmd_calibrate(int argc, char** argv);  // fit a hardware model to microbenchmarks

// --device cpu|cuda:N of calibrate, validate and kernels (cmd_calibrate.cpp). InputError
// naming the value otherwise; whether cuda:N exists is open_device()'s to say.
struct DeviceChoice {
  bool cuda = false;
  int index = 0;
  std::string text = "cpu";
};
DeviceChoice parse_device_option(const std::string& value);

// Progress lines on stderr, "[tag   12.3s] step", seconds since construction.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::string tag);
  void operator()(std::string_view step) const;

 private:
  std::string tag_;
  std::chrono::steady_clock::time_point start_;
};
int cmd_runtime(int argc, char** argv);  // the CPU pipeline runtime / DAG executor

}  // namespace stratasim
