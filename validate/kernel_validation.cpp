#include "validate/kernel_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/core/units.h"

namespace stratasim {
namespace {

std::string line(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

Json mape_json(const std::optional<double>& m) { return m ? Json(*m) : Json(nullptr); }

Json case_results_json(const std::vector<KernelCaseResult>& cases) {
  Json out = Json::array();
  for (const auto& k : cases) {
    out.push_back({{"family", k.family},
                   {"form", k.form},
                   {"shape", k.shape},
                   {"predicted_s", k.predicted_s},
                   {"measured_s", k.measured_s},
                   {"error", k.error}});
  }
  return out;
}

}  // namespace

double predict_measured_kernel_s(const Calibration& cal, const kernels::Measurement& m) {
  if (auto t = predict_workload_kernel_s(cal.hardware, m)) return *t;
  return predict_kernel_s(cal, m);
}

bool KernelValidationReport::within_tolerance() const {
  return (!kernel_mape || *kernel_mape <= kKernelMapeTolerance) &&
         (!runtime_mape || *runtime_mape <= kRuntimeMapeTolerance) &&
         (!dag_mape || *dag_mape <= kDagMapeTolerance);
}

std::vector<KernelCaseResult> compare_kernels(const Calibration& cal,
                                              const std::vector<kernels::Measurement>& measured) {
  std::vector<KernelCaseResult> out;
  for (const kernels::Measurement& m : measured) {
    KernelCaseResult r{m.family, m.form, m.shape};
    r.predicted_s = predict_measured_kernel_s(cal, m);
    r.measured_s = m.min_seconds > 0 ? m.min_seconds : m.seconds;
    r.error = (r.predicted_s - r.measured_s) / r.measured_s;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<double> mape_of(const std::vector<double>& errors) {
  if (errors.empty()) return std::nullopt;
  double sum = 0;
  for (double e : errors) sum += std::abs(e);
  return sum / static_cast<double>(errors.size());
}

void summarize(KernelValidationReport& r) {
  std::vector<double> ke, re, de;
  for (const auto& k : r.kernels) ke.push_back(k.error);
  for (const auto& c : r.runtime) re.push_back(c.error);
  for (const auto& d : r.dag) de.push_back(d.error);
  r.kernel_mape = mape_of(ke);
  r.runtime_mape = mape_of(re);
  r.dag_mape = mape_of(de);
}

std::string format_kernel_validation(const KernelValidationReport& r) {
  std::string s = "hardware " + r.hardware_path + " (calibrated " + r.calibration.info.measured_at +
                  ", " + r.calibration.info.cpu + ", " +
                  std::to_string(r.calibration.info.threads) + " threads)" +
                  (r.quick ? ", quick run (tolerances not applied)" : "") + "\n";
  if (!r.kernels.empty()) {
    s += line("\n%-22s %-8s %-24s %12s %12s %8s\n", "kernel", "form", "shape", "predicted",
              "measured", "error");
    for (const auto& k : r.kernels) {
      s += line("%-22s %-8s %-24s %12s %12s %+7.1f%%\n", k.family.c_str(), k.form.c_str(),
                k.shape.c_str(), format_seconds(k.predicted_s).c_str(),
                format_seconds(k.measured_s).c_str(), 100 * k.error);
    }
  }
  if (!r.machine_check.empty()) {
    s += line("\n%-22s %-33s %12s %12s %8s\n", "machine check", "shape", "predicted", "measured",
              "error");
    double worst = 0;
    for (const auto& k : r.machine_check) {
      s += line("%-22s %-33s %12s %12s %+7.1f%%\n", k.family.c_str(), k.shape.c_str(),
                format_seconds(k.predicted_s).c_str(), format_seconds(k.measured_s).c_str(),
                100 * k.error);
      worst = std::max(worst, std::abs(k.error));
    }
    s += worst > kMachineDriftNotice
             ? line(
                   "(the machine ran up to %.0f%% off its calibrated speed during this run: the "
                   "kernel errors above include that drift)\n",
                   100 * worst)
             : line(
                   "(microbenchmarks re-run now, fastest of the rounds: within %.0f%% of the "
                   "calibrated model)\n",
                   100 * kMachineDriftNotice);
  }
  if (!r.runtime.empty()) {
    s += line("\n%-18s %3s %3s %3s %12s %12s %8s %10s %10s %8s\n", "pipeline schedule", "p", "m",
              "v", "predicted", "measured", "error", "bubble(p)", "bubble(m)", "preempt");
    for (const auto& c : r.runtime) {
      s += line("%-18s %3d %3d %3d %12s %12s %+7.1f%% %9.1f%% %9.1f%% %8ld\n", c.schedule.c_str(),
                c.p, c.m, c.v, format_seconds(c.predicted_s).c_str(),
                format_seconds(c.measured_s).c_str(), 100 * c.error, 100 * c.predicted_bubble,
                100 * c.measured_bubble, c.preemptions);
    }
    s += "(preempt: involuntary context switches of the rank threads in the measured run; many "
         "mean other processes took the cores)\n";
  }
  if (!r.dag.empty()) {
    s += line("\n%-18s %7s %5s %12s %12s %8s\n", "dag (scenario path)", "threads", "nodes", "predicted", "measured",
              "error");
    for (const auto& d : r.dag) {
      s += line("%-18s %7d %5d %12s %12s %+7.1f%%\n", d.graph.c_str(), d.threads, d.nodes,
                format_seconds(d.predicted_s).c_str(), format_seconds(d.measured_s).c_str(), 100 * d.error);
    }
  }
  s += "\n";
  if (r.kernel_mape) {
    s += line("kernel time MAPE   %5.1f%% (%zu cases; tolerance %.0f%%)\n", 100 * *r.kernel_mape,
              r.kernels.size(), 100 * kKernelMapeTolerance);
  }
  if (r.runtime_mape) {
    s += line("pipeline iteration MAPE %5.1f%% (%zu cases; tolerance %.0f%%)\n",
              100 * *r.runtime_mape, r.runtime.size(), 100 * kRuntimeMapeTolerance);
  }
  if (r.dag_mape) {
    s += line("dag makespan MAPE  %5.1f%% (%zu cases; tolerance %.0f%%)\n", 100 * *r.dag_mape, r.dag.size(),
              100 * kDagMapeTolerance);
  }
  if (!r.quick) s += r.within_tolerance() ? "within tolerance\n" : "OUTSIDE tolerance\n";
  return s;
}

Json kernel_validation_json(const KernelValidationReport& r) {
  Json runtime = Json::array();
  for (const auto& c : r.runtime) {
    runtime.push_back({{"schedule", c.schedule},
                       {"p", c.p},
                       {"m", c.m},
                       {"v", c.v},
                       {"predicted_s", c.predicted_s},
                       {"measured_s", c.measured_s},
                       {"error", c.error},
                       {"predicted_bubble", c.predicted_bubble},
                       {"measured_bubble", c.measured_bubble},
                       {"preemptions", c.preemptions}});
  }
  Json dag = Json::array();
  for (const auto& d : r.dag) {
    dag.push_back({{"graph", d.graph}, {"threads", d.threads}, {"nodes", d.nodes}, {"predicted_s", d.predicted_s},
                   {"measured_s", d.measured_s}, {"error", d.error}});
  }
  const CalibrationInfo& i = r.calibration.info;
  return Json{
      {"kind", "kernel_validation"},
      {"hardware", r.hardware_path},
      {"device", r.calibration.hardware.device.name},
      {"calibrated_at", i.measured_at},
      {"cpu", i.cpu},
      {"threads", i.threads},
      {"quick", r.quick},
      {"kernels", case_results_json(r.kernels)},
      {"machine_check", case_results_json(r.machine_check)},
      {"runtime", runtime},
      {"dag", dag},
      {"mape", {{"kernels", mape_json(r.kernel_mape)}, {"runtime", mape_json(r.runtime_mape)},
                {"dag", mape_json(r.dag_mape)}}},
      {"tolerance", {{"kernels", kKernelMapeTolerance}, {"runtime", kRuntimeMapeTolerance},
                     {"dag", kDagMapeTolerance}}},
      {"within_tolerance", r.within_tolerance()}};
}

}  // namespace stratasim
