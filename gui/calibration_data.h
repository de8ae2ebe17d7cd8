// The report of `stratasim validate --hardware FILE --json OUT` read for the calibration tab:
//   {"kind": "kernel_validation", "hardware": ...,
//    "kernels": [{"family", "form", "shape", "predicted_s", "measured_s", "error"}],
//    "runtime": [{"schedule", "p", "m", "v", "predicted_s", "measured_s", "error",
//                 "predicted_bubble", "measured_bubble"}],
//    "machine_check": [like "kernels": the microbenchmarks re-run by validate],
//    "dag": [{"graph", "threads", "nodes", "predicted_s", "measured_s", "error"}],
//    "mape": {"kernels": x, "runtime": y, "dag": z}}
// Every section is optional (a run may have measured only kernels); what a present entry needs
// is required. No Qt.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.h"

namespace stratasim {

struct KernelCheck {
  std::string family, form, shape;
  double predicted_s = 0, measured_s = 0;
  double error = 0;  // (predicted - measured) / measured, as written (computed when absent)
  std::string label() const;  // "gemm/fused 1024x1024x1024"
};

struct RuntimeCheck {
  std::string schedule;  // a pipeline schedule, or the DAG executor's graph (dag true)
  int p = 0, m = 0, v = 1;  // a DAG: p = its threads, m = its nodes
  bool dag = false;
  double predicted_s = 0, measured_s = 0, error = 0;
  std::optional<double> predicted_bubble, measured_bubble;
  std::string label() const;  // "1f1b p4 m8" (+ " v2" when interleaved); "dag resnet, 2 threads"
};

struct CalibrationReport {
  std::string hardware;  // the name, or the JSON of the hardware when it is an object
  std::vector<KernelCheck> kernels;
  std::vector<KernelCheck> machine_check;  // copy, GEMM, vector rate now vs the model
  std::vector<RuntimeCheck> runtime;  // pipeline schedules, then the DAG graphs ("dag")
  std::optional<double> mape_kernels, mape_runtime, mape_dag;
};

// "machine check: copy -23%, gemm_peak -3%, vector +0%" (empty without a machine check): how far
// the machine ran from its calibrated speed while validate measured.
std::string machine_check_summary(const CalibrationReport& r);

// Throws InputError naming the file and JSON path (e.g. "kernels[2].measured_s").
CalibrationReport read_calibration_report(const Json& j, const std::string& file);
CalibrationReport load_calibration_report(const std::string& path);

}  // namespace stratasim
