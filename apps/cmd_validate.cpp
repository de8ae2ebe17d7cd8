// stratasim validate --published [--data FILE] [--json OUT]
// stratasim validate --hardware FILE [--kernels] [--runtime] [--device cpu|cuda:N] [--quick]
//                    [--json OUT]
// The second form predicts with a calibrated hardware model (stratasim calibrate) and measures
// afresh: the kernel families at their validation shapes and/or the pipeline runtime's
// schedules (both when neither is named). Exit 0 within tolerance, 3 outside (a --quick run
// is never gated: its small sizes sit in the caches the model leaves out).
#include <cstdio>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_cases.h"
#include "kernels/microbench.h"
#include "sim/core/atomic_file.h"
#include "validate/kernel_validation.h"
#include "validate/published.h"

namespace stratasim {
namespace {

int validate_published_cases(const CliArgs& args) {
  const std::string data = args.option("data", published_data_default_path());
  const ValidationReport report = validate_published(load_published_cases(data));
  std::fputs(format_validation(report).c_str(), stdout);
  if (!args.option("json").empty()) {
    write_file_atomically(args.option("json"), validation_json(report).dump(1) + "\n");
  }
  return report.all_within_tolerance ? 0 : 3;
}

int validate_calibrated(const CliArgs& args) {
  const DeviceChoice device = parse_device_option(args.option("device", "cpu"));
  bool kernels = args.has("kernels"), runtime = args.has("runtime");
  if (!kernels && !runtime) kernels = runtime = !device.cuda;
  if (device.cuda && runtime) {
    throw InputError("command line", "--runtime", device.text,
                     "the pipeline runtime runs on CPU threads; use --device cpu");
  }
  if (device.cuda) kernels = true;

  KernelValidationReport report;
  report.hardware_path = args.option("hardware");
  report.quick = args.has("quick");
  report.calibration = read_calibration(report.hardware_path);
  const ProgressPrinter progress("validate");
  if (kernels) {
    std::vector<kernels::Measurement> measured;
    if (device.cuda) {
      (void)kernels::cuda::open_device(device.index);
      measured = kernels::cuda::run_kernels(device.index, report.quick, progress);
    } else {
      // The machine check runs after every round of the kernel cases and keeps each item's
      // fastest run, as calibrate keeps the fastest of its rounds.
      std::vector<kernels::Measurement> check;
      measured = kernels::run_kernel_cases(
          kernels::CaseSet::kValidation, report.quick, progress,
          [&] { kernels::keep_fastest(check, kernels::run_machine_check(report.quick)); });
      report.machine_check = compare_kernels(report.calibration, check);
    }
    report.kernels = compare_kernels(report.calibration, measured);
  }
  if (runtime) {
    report.runtime = validate_runtime(runtime_cases(report.quick), report.calibration,
                                      report.quick ? 1 : kernels::kRounds, 2, progress);
  }
  summarize(report);
  std::fputs(format_kernel_validation(report).c_str(), stdout);
  if (!args.option("json").empty()) {
    write_file_atomically(args.option("json"), kernel_validation_json(report).dump(1) + "\n");
  }
  return report.quick || report.within_tolerance() ? 0 : 3;
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, {"data", "json", "hardware", "device"},
                                 {"published", "kernels", "runtime", "quick"});
  const bool calibrated =
      args.has("kernels") || args.has("runtime") || !args.option("hardware").empty();
  if (args.has("published") && calibrated) {
    throw InputError("command line", "validate", "--published",
                     "runs alone; validate a calibrated model in a second call");
  }
  if (args.has("published")) return validate_published_cases(args);
  if (args.option("hardware").empty()) {
    throw InputError("command line", "validate", calibrated ? "--hardware (missing)" : "(no mode)",
                     "needs --published, or --hardware FILE (written by stratasim calibrate) "
                     "with --kernels and/or --runtime (both by default)");
  }
  return validate_calibrated(args);
}

}  // namespace stratasim
