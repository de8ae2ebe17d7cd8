// `stratasim validate --kernels/--runtime`: the calibrated hardware model's predictions of the
// kernel families (fused and unfused, at the validation shapes of kernels/kernel_cases.h,
// disjoint from the calibration shapes) and of the pipeline runtime (runtime_validation.h),
// next to fresh measurements.
//
// JSON written by --json (read by the GUI), schema "kernel_validation" v1:
// {
//   "kind": "kernel_validation",
//   "hardware": "hardware_models/local.json",   // the calibrated model used
//   "device": "local-cpu", "calibrated_at": "...", "cpu": "...", "threads": 2,  // calibration's
//   "quick": false,
//   "kernels": [ {"family": "layernorm", "form": "fused" | "unfused", "shape": "12288x1024",
//                 "predicted_s": 0.031, "measured_s": 0.029, "error": 0.069} ... ],
//   "runtime": [ {"schedule": "1f1b", "p": 2, "m": 8, "v": 1,
//                 "predicted_s": 0.51, "measured_s": 0.50, "error": 0.02,
//                 "predicted_bubble": 0.11, "measured_bubble": 0.12,
//                 "preemptions": 0} ... ],
//   "machine_check": [ {"family": "copy", "form": "", "shape": "33554432 dram",
//                       "predicted_s": ..., "measured_s": ..., "error": -0.02} ... ],
//                       // CPU kernels only: microbenchmarks re-run now vs the calibrated model
//                       // (the machine's drift since calibration; not part of any MAPE)
//   "dag": [ {"graph": "resnet", "threads": 2, "nodes": 6, "predicted_s": 0.021,
//             "measured_s": 0.020, "error": 0.05} ... ],   // runtime --dag graphs, scenario path
//   "mape": {"kernels": 0.08, "runtime": 0.03, "dag": 0.04},   // null when that part was not run
//   "tolerance": {"kernels": 0.15, "runtime": 0.10, "dag": 0.15},
//   "within_tolerance": true                       // false also when a part is over its MAPE
// }
// error = (predicted - measured) / measured; MAPE = mean |error|; times in seconds (the
// fastest repeat, see calibration.h); bubbles are idle fractions of the iteration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/measurement.h"
#include "sim/core/json_reader.h"
#include "validate/calibration.h"
#include "validate/runtime_validation.h"

namespace stratasim {

inline constexpr double kKernelMapeTolerance = 0.15;
inline constexpr double kRuntimeMapeTolerance = 0.10;
// The DAG executor's makespans through the generic scenario path (issue 16's acceptance: 15%).
inline constexpr double kDagMapeTolerance = 0.15;

struct KernelCaseResult {
  std::string family, form, shape;
  double predicted_s = 0, measured_s = 0, error = 0;
};

struct KernelValidationReport {
  std::string hardware_path;
  Calibration calibration;
  bool quick = false;
  std::vector<KernelCaseResult> kernels;
  std::vector<KernelCaseResult> machine_check;  // microbenchmarks now vs the calibrated model
  std::vector<RuntimeCaseResult> runtime;
  std::vector<DagCaseResult> dag;
  std::optional<double> kernel_mape, runtime_mape, dag_mape;
  bool within_tolerance() const;
};

// The calibrated prediction of one measured kernel case: a family that is a workload of its own
// (the image pipeline) through the generic scenario path (its operator graph lowered on the
// calibrated hardware, whose family factors kernel_time applies, and the analytical engine);
// the others' single kernel with predict_kernel_s.
double predict_measured_kernel_s(const Calibration& cal, const kernels::Measurement& m);
// Predicts every measured kernel with the calibration (predict_measured_kernel_s) and compares.
std::vector<KernelCaseResult> compare_kernels(const Calibration& cal,
                                              const std::vector<kernels::Measurement>& measured);
// The machine check's largest |error| beyond which format_kernel_validation says that the
// machine ran off its calibrated speed.
inline constexpr double kMachineDriftNotice = 0.10;
// Mean absolute relative error; nullopt for an empty list.
std::optional<double> mape_of(const std::vector<double>& errors);
// Fills kernel_mape / runtime_mape from the case lists.
void summarize(KernelValidationReport& r);

std::string format_kernel_validation(const KernelValidationReport& r);
Json kernel_validation_json(const KernelValidationReport& r);

}  // namespace stratasim
