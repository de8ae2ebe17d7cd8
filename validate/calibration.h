// Calibration (issue 4): fits a HardwareModel to microbenchmark measurements
// (kernels/microbench.h), predicts kernel times with it, and reads/writes the result.
//
// Every fit is a weighted least-squares line through (work, time), weights 1/time^2 so that
// relative errors count alike across sizes, after subtracting the measured per-launch overhead:
//   time = (work + half_size) / rate      <=>   time = half_size/rate + work/rate,
// which is exactly kernel_cost's roofline term work / (rate * f(work)) with the efficiency curve
// f(work) = work / (work + half_size) (max_fraction 1: the fitted `rate` is the achievable
// asymptote, not a datasheet peak). So:
//   memory_bandwidth, efficiency.memory  <- STREAM copy + triad at DRAM-resident sizes only
//       (arrays of 64-256 MiB; cache-resident copy is several times faster and is recorded, not
//       modelled: the kernels are validated at DRAM-resident working sets, see kernel_cases.h)
//   peak.fp32, efficiency.matmul          <- the repo's fp32 GEMM, n = 96..768
//   vector_flops                          <- L1-resident multiply-add chains on every thread
//   kernel_overhead                       <- an empty OpenMP parallel region
//   serial_flops (record only)            <- burn_flops ops in the pipeline runtime, one stage,
//                                            one replica per thread (microbench.h "serial")
// Per-family factors: each kernel family and form's measured time over the roofline (minus
// launch overhead), averaged over the calibration shapes of kernel_cases.h, which are disjoint
// from the validation shapes; the factor absorbs what the roofline cannot see (instruction
// mix, exp/erf cost, imperfect vectorization). Times are the fastest repeat (min_seconds):
// on a shared machine it is the least disturbed one; validate compares like with like.
//
// Files: the hardware model (a one-device cluster, a normal file any scenario can name by
// {"file": ...}) and, beside it, "<stem>.calibration.json": what was measured and fitted.
#pragma once

#include <span>
#include <optional>
#include <string>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "kernels/measurement.h"
#include "sim/core/json_reader.h"

namespace stratasim {

struct LineFit {
  double intercept = 0;  // s
  double slope = 0;      // s per unit of work
};
// Weighted (1/t^2) least squares t = intercept + slope x; a negative intercept is refitted as
// 0 (a line through the origin). Needs >= 1 point with x > 0 (InputError otherwise).
LineFit fit_line_relative(std::span<const double> x, std::span<const double> t);

struct FamilyFactor {
  std::string family, form;
  double factor = 1;                // measured / roofline (minus launches x overhead)
  std::vector<std::string> shapes;  // the calibration shapes it was fitted on
};

struct CalibrationInfo {
  std::string device_name = "local-cpu";
  std::string cpu;          // /proc/cpuinfo model name
  std::string measured_at;  // ISO 8601 UTC
  int threads = 1;
  double memory_B = 0;  // installed memory (the device's capacity)
  std::string what;     // free text: which device (cpu / cuda:N), quick or full
};

struct Calibration {
  HardwareModel hardware;  // one device, one node
  CalibrationInfo info;
  double serial_flops = 0;         // burn_flops-style FLOP/s of one thread, every thread busy
  double serial_overhead_s = 0;    // fixed cost of one such op (intercept)
  double sync_s = 0;               // one barrier round trip among the threads
  double cache_bandwidth_Bps = 0;  // fastest cache-resident copy/triad (recorded only)
  double fp64_flops = 0;           // fp64 GEMM asymptote (no dtype slot in DeviceSpec)
  std::vector<FamilyFactor> factors;
  std::vector<kernels::Measurement> microbenchmarks;
  std::vector<kernels::Measurement> kernel_calibration;  // empty: factors all 1
};

// Fits everything above. `micro` must contain launch, copy/triad "dram", gemm_peak fp32 and
// vector measurements; serial and sync are optional (0 when absent). InputError if not.
Calibration fit_calibration(const std::vector<kernels::Measurement>& micro,
                            const std::vector<kernels::Measurement>& kernel_calibration,
                            const CalibrationInfo& info);

// Roofline time of one measured kernel's counted work on `d` (sim/analytical kernel_time, fp32).
double roofline_kernel_s(const DeviceSpec& d, const kernels::Measurement& work);
// A family that is a workload of its own is predicted as any scenario is: its operator graph
// lowered on `hw` and run by the analytical engine (one sample streamed forward, fp32, fused as
// one chain or op by op; kernel_time applies hw's family factors). nullopt for the other
// families, whose measured kernels are a single kernel's work (roofline_kernel_s).
std::optional<double> predict_workload_kernel_s(const HardwareModel& hw,
                                                const kernels::Measurement& m);
// The same scaled by the family/form factor (1 when the calibration has none for it).
double predict_kernel_s(const Calibration& c, const kernels::Measurement& work);
const FamilyFactor* find_factor(const Calibration& c, const std::string& family,
                                const std::string& form);

Json measurement_json(const kernels::Measurement& m);
Json calibration_record_json(const Calibration& c, const std::string& hardware_file_name);
Json calibrated_hardware_json(const Calibration& c);  // what read_cluster reads back

// "dir/local.json" -> "dir/local.calibration.json".
std::string calibration_record_path(const std::string& hardware_path);
// Writes both files atomically (the record first, so a model never lacks its record).
void write_calibration(const Calibration& c, const std::string& hardware_path);
// Reads the model through read_cluster({"file": path}), as a scenario would, and the record
// beside it (InputError naming the record file if it is missing or malformed).
Calibration read_calibration(const std::string& hardware_path);

}  // namespace stratasim
