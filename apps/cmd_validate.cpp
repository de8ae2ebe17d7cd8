// stratasim validate --published [--data FILE|DIR ...] [--data-only] [--cross] [--json OUT] [--csv OUT]
//                    [--scenarios DIR]
// stratasim validate --hardware FILE [--kernels] [--runtime] [--device cpu|cuda:N] [--quick]
//                    [--json OUT]
// The second form predicts with a calibrated hardware model (stratasim calibrate) and measures
// afresh: the kernel families at their validation shapes and/or the pipeline runtime's
// schedules (both when neither is named). Exit 0 within tolerance, 3 outside (a --quick run
// is never gated: its small sizes sit in the caches the model leaves out).
#include <cstdio>
#include <filesystem>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_cases.h"
#include "kernels/microbench.h"
#include "sim/core/atomic_file.h"
#include "validate/kernel_validation.h"
#include "validate/intervals.h"
#include "validate/published.h"

namespace stratasim {
namespace {

// --scenarios DIR: each expressible case as the scenario file it became (DIR/<id>.json), so
// that any case can be re-run with evaluate, search or simulate.
void write_case_scenarios(const ValidationSet& set, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InputError("command line", "--scenarios", "\"" + dir + "\"", "is not a directory that can be created");
  }
  for (const TranslatedCase& c : set.cases) {
    if (!c.unsupported.empty()) continue;
    write_file_atomically((std::filesystem::path(dir) / (c.id + ".json")).string(),
                          json_text(c.scenario, 1) + "\n");
  }
}

// Case files: every --data FILE (or each *.json inside a DIR) and any positional after --published, after the built-in
// ones (unless --data-only).
int validate_published_cases(const CliArgs& args) {
  std::vector<std::string> files = args.all("data");
  files.insert(files.end(), args.positionals.begin(), args.positionals.end());
  if (args.has("data-only") && files.empty()) {
    throw InputError("command line", "--data-only", "(no --data FILE)",
                     "needs at least one case file");
  }
  const ValidationSet set = load_validation_set(files, !args.has("data-only"));
  if (!args.option("scenarios").empty()) write_case_scenarios(set, args.option("scenarios"));
  const ValidationReport report = validate_published(set);
  std::fputs(format_validation(report).c_str(), stdout);
  Json json = validation_json(report);
  if (args.has("cross")) {  // leave-one-source-out: how well the intervals cover
    const CrossValidation cross = cross_validate(case_errors(report));
    std::fputs(format_cross_validation(cross).c_str(), stdout);
    json["cross"] = cross_validation_json(cross);
  }
  if (!args.option("json").empty()) {
    write_file_atomically(args.option("json"), json_text(json, 1) + "\n");
  }
  if (!args.option("csv").empty()) {
    write_file_atomically(args.option("csv"), validation_csv(report));
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
    // The DAG executor's graphs through the generic scenario path, on the calibration's threads.
    report.dag = validate_dags(dag_cases(report.quick, std::max(1, report.calibration.info.threads)),
                               report.calibration, report.quick ? 1 : kernels::kRounds, 3, progress);
  }
  summarize(report);
  std::fputs(format_kernel_validation(report).c_str(), stdout);
  if (!args.option("json").empty()) {
    write_file_atomically(args.option("json"), json_text(kernel_validation_json(report), 1) + "\n");
  }
  return report.quick || report.within_tolerance() ? 0 : 3;
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "validate");
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
