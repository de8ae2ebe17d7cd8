// stratasim kernels [--device cpu|cuda:N] [--quick] [--json OUT]
// Runs every kernel family fused and unfused at the validation shapes (kernels/kernel_cases.h)
// and prints the times, the rate (GFLOP/s for families with matrix work, GB/s of counted
// traffic otherwise) and the fused speedup.
//
// JSON (--json): {"kind": "kernels", "device": "cpu", "threads": 2, "quick": false,
//   "cases": [measurement as in the calibration record: family, form, dtype, shape,
//             matmul_flop, vector_flop, bytes, launches, seconds (median), min_seconds,
//             repeats],
//   "speedups": [{"family", "shape", "speedup"}]}   // unfused / fused, fastest repeats
#include <cstdio>
#include <string>
#include <vector>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_cases.h"
#include "kernels/threads.h"
#include "sim/core/atomic_file.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "validate/calibration.h"

namespace stratasim {
namespace {

double best_s(const kernels::Measurement& m) {
  return m.min_seconds > 0 ? m.min_seconds : m.seconds;
}

std::string rate_text(const kernels::Measurement& m) {
  if (m.matmul_flop > 0) return format_flop_rate((m.matmul_flop + m.vector_flop) / best_s(m));
  return format_bandwidth(m.bytes / best_s(m));
}

}  // namespace

int cmd_kernels(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "kernels");
  if (!args.positionals.empty()) {
    throw InputError(
        "command line", "kernels", "\"" + args.positionals[0] + "\"",
        "takes no positional arguments (options: --device cpu|cuda:N --quick --json OUT)");
  }
  const DeviceChoice device = parse_device_option(args.option("device", "cpu"));
  const bool quick = args.has("quick");
  const ProgressPrinter progress("kernels");
  std::vector<kernels::Measurement> ms;
  int threads = 1;
  if (device.cuda) {
    (void)kernels::cuda::open_device(device.index);
    ms = kernels::cuda::run_kernels(device.index, quick, progress);
  } else {
    threads = kernels::kernel_threads();
    ms = kernels::run_kernel_cases(kernels::CaseSet::kValidation, quick, progress);
  }

  std::printf("stratasim kernels on %s, %d threads, fastest of the repeats\n\n",
              device.text.c_str(), threads);
  std::printf("%-22s %-24s %11s %11s %8s  %-14s %-14s\n", "kernel", "shape", "fused", "unfused",
              "speedup", "fused rate", "unfused rate");
  Json cases = Json::array(), speedups = Json::array();
  for (const kernels::Measurement& m : ms) cases.push_back(measurement_json(m));
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].form != "fused") continue;
    const kernels::Measurement* un = nullptr;
    for (const auto& u : ms) {
      if (u.form == "unfused" && u.family == ms[i].family && u.shape == ms[i].shape) un = &u;
    }
    const double speedup = un ? best_s(*un) / best_s(ms[i]) : 0;
    std::printf("%-22s %-24s %11s %11s %7.2fx  %-14s %-14s\n", ms[i].family.c_str(),
                ms[i].shape.c_str(), format_seconds(best_s(ms[i])).c_str(),
                un ? format_seconds(best_s(*un)).c_str() : "-", speedup, rate_text(ms[i]).c_str(),
                un ? rate_text(*un).c_str() : "-");
    speedups.push_back({{"family", ms[i].family}, {"shape", ms[i].shape}, {"speedup", speedup}});
  }
  if (!args.option("json").empty()) {
    const Json j{{"kind", "kernels"}, {"device", device.text}, {"threads", threads},
                 {"quick", quick},    {"cases", cases},        {"speedups", speedups}};
    write_file_atomically(args.option("json"), json_text(j, 1) + "\n");
  }
  return 0;
}

}  // namespace stratasim
