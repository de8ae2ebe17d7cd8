// stratasim calibrate [--device cpu|cuda:N] [-o hardware_models/local.json] [--quick]
// Runs the microbenchmarks (and, on the CPU, the kernel families at their calibration shapes),
// fits a hardware model and writes it with its calibration record (validate/calibration.h).
// Progress goes to stderr; the fitted figures to stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "hardware_models/src/hardware_json.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/huge_pages.h"
#include "kernels/kernel_cases.h"
#include "kernels/microbench.h"
#include "kernels/threads.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "validate/calibration.h"

namespace stratasim {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double installed_memory_B() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

DeviceChoice parse_device_option(const std::string& value) {
  DeviceChoice d;
  d.text = value;
  if (value == "cpu") return d;
  const std::string rule = "must be cpu or cuda:N with N a device index (e.g. cuda:0)";
  if (value.rfind("cuda:", 0) != 0 || value.size() == 5 || value.size() > 9) {
    throw InputError("command line", "--device", "\"" + value + "\"", rule);
  }
  for (std::size_t i = 5; i < value.size(); ++i) {
    if (value[i] < '0' || value[i] > '9') {
      throw InputError("command line", "--device", "\"" + value + "\"", rule);
    }
  }
  d.cuda = true;
  d.index = std::stoi(value.substr(5));
  return d;
}

ProgressPrinter::ProgressPrinter(std::string tag)
    : tag_(std::move(tag)), start_(std::chrono::steady_clock::now()) {}

void ProgressPrinter::operator()(std::string_view step) const {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "[%s %6.1fs] %.*s\n", tag_.c_str(), s, static_cast<int>(step.size()),
               step.data());
  std::fflush(stderr);
}

int cmd_calibrate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "calibrate");
  if (!args.positionals.empty()) {
    throw InputError(
        "command line", "calibrate", "\"" + args.positionals[0] + "\"",
        "takes no positional arguments (options: -o FILE --device cpu|cuda:N --quick)");
  }
  const std::string out = args.option("out", "hardware_models/local.json");
  if (!out.ends_with(".json")) {
    throw InputError("command line", "-o", "\"" + out + "\"",
                     "must end in .json (scenarios name hardware files by that suffix)");
  }
  const DeviceChoice device = parse_device_option(args.option("device", "cpu"));
  const bool quick = args.has("quick");
  const ProgressPrinter progress("calibrate");

  CalibrationInfo info;
  info.measured_at = utc_now();
  info.what = device.text + (quick ? ", quick" : ", full");
  std::vector<kernels::Measurement> micro, kernel_cal;
  if (device.cuda) {
    const kernels::cuda::DeviceProperties p = kernels::cuda::open_device(device.index);
    info.device_name = "local-cuda" + std::to_string(device.index);
    info.cpu = p.name;
    info.threads = 1;
    info.memory_B = p.memory_B;
    micro = kernels::cuda::run_microbenchmarks(device.index, quick, progress);
  } else {
    info.cpu = cpu_model_name();
    info.threads = kernels::kernel_threads();
    info.memory_B = installed_memory_B();
    // The timed arrays ask for 2 MiB pages (kernels/huge_pages.h); the record says whether the
    // system grants them.
    info.what += ", transparent huge pages: " + kernels::huge_page_mode();
    progress("microbenchmarks (" + std::to_string(info.threads) + " threads, " + info.cpu + ")");
    micro = kernels::run_microbenchmarks(quick, progress);
    progress("kernel families at the calibration shapes");
    kernel_cal = kernels::run_kernel_cases(kernels::CaseSet::kCalibration, quick, progress);
  }
  const Calibration cal = fit_calibration(micro, kernel_cal, info);
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // write reports failure
  write_calibration(cal, out);

  const DeviceSpec& d = cal.hardware.device;
  std::printf("wrote %s and %s\n", out.c_str(), calibration_record_path(out).c_str());
  std::printf("  memory bandwidth  %s (DRAM; half size %s; cache-resident %s)\n",
              format_bandwidth(d.memory_bandwidth_Bps).c_str(),
              format_bytes(d.memory.half_size).c_str(),
              format_bandwidth(cal.cache_bandwidth_Bps).c_str());
  std::printf("  fp32 GEMM         %s (half size %s FLOP); fp64 %s\n",
              format_flop_rate(d.peak_flops[static_cast<int>(DType::kFp32)]).c_str(),
              format_count(d.matmul.half_size).c_str(), format_flop_rate(cal.fp64_flops).c_str());
  std::printf("  vector            %s\n", format_flop_rate(d.vector_flops).c_str());
  std::printf("  launch overhead   %s; thread sync %s\n",
              format_seconds(d.kernel_overhead_s).c_str(), format_seconds(cal.sync_s).c_str());
  if (cal.serial_flops > 0) {
    std::printf("  serial (per thread, all busy) %s + %s per op\n",
                format_flop_rate(cal.serial_flops).c_str(),
                format_seconds(cal.serial_overhead_s).c_str());
  }
  for (const FamilyFactor& f : cal.factors) {
    std::printf("  factor %-22s %-8s %.3f\n", f.family.c_str(), f.form.c_str(), f.factor);
  }
  return 0;
}

}  // namespace stratasim
