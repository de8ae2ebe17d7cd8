#include "validate/calibration.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/kernel_cost.h"
#include "sim/core/atomic_file.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

using kernels::Measurement;

// The fastest repeat: on a shared machine the least disturbed one (see calibration.h).
double time_of(const Measurement& m) { return m.min_seconds > 0 ? m.min_seconds : m.seconds; }

std::vector<const Measurement*> select(const std::vector<Measurement>& ms,
                                       const std::function<bool(const Measurement&)>& keep) {
  std::vector<const Measurement*> out;
  for (const Measurement& m : ms) {
    if (keep(m)) out.push_back(&m);
  }
  return out;
}

[[noreturn]] void missing(const std::string& what) {
  throw InputError("calibration", "measurements", "(missing)",
                   "needs " + what + " microbenchmark measurements to fit the hardware model");
}

struct RateFit {
  double rate = 0;       // work per second at large sizes
  double half_size = 0;  // work at which half of `rate` is reached
  double intercept_s = 0;
};

// time - launches * overhead = (work + half) / rate, fitted over the selected measurements.
RateFit fit_rate(const std::vector<const Measurement*>& ms, double Measurement::*work,
                 double overhead_s, const std::string& what) {
  if (ms.empty()) missing(what);
  // A measurement whose time is mostly launch overhead says nothing about the rate (under load
  // or a sanitizer the overhead can exceed it, and the fit's slope goes to 0: a rate of 1e18).
  std::vector<double> x, t;
  for (const Measurement* m : ms) {
    const double work_s = time_of(*m) - m->launches * overhead_s;
    if (!(work_s > 0.1 * time_of(*m))) continue;
    x.push_back(m->*work);
    t.push_back(work_s);
  }
  if (x.empty()) {  // every time was overhead: the plain rate of the largest, overhead included
    const auto big = std::max_element(ms.begin(), ms.end(), [&](const Measurement* a, const Measurement* b) {
      return a->*work < b->*work;
    });
    x.push_back((*big)->*work);
    t.push_back(time_of(**big));
  }
  LineFit line = x.size() > 1 ? fit_line_relative(x, t) : LineFit{0.0, t[0] / x[0]};
  if (!(line.slope > 0)) {
    // Noise larger than the size dependence (tiny sizes on a loaded machine): no half size,
    // the rate of the largest measurement.
    const auto big = std::max_element(x.begin(), x.end()) - x.begin();
    line = {0.0, t[big] / x[big]};
  }
  return {1.0 / line.slope, line.intercept / line.slope, line.intercept};
}

std::string gb_text(double bps) { return format_bandwidth(bps); }

std::string source_text(const Calibration& c) {
  const CalibrationInfo& i = c.info;
  if (c.info.what.starts_with("cuda")) {
    return "Calibrated by `stratasim calibrate` (" + i.what + ") at " + i.measured_at + " on " +
           i.cpu +
           ": memory_bandwidth and efficiency.memory from copy/triad kernels, peak per "
           "dtype and efficiency.matmul from GEMMs (kernels/cuda), kernel_overhead from an "
           "empty kernel launch; vector_flops = the fp32 GEMM rate. Raw measurements: the "
           ".calibration.json beside this file.";
  }
  return "Calibrated by `stratasim calibrate` (" + i.what + ") at " + i.measured_at + " on '" +
         i.cpu + "' with " + std::to_string(i.threads) +
         " threads. memory_bandwidth and efficiency.memory: STREAM copy + triad over "
         "64-256 MiB arrays (beyond the last-level cache; cache-resident copy/triad "
         "reached " +
         gb_text(c.cache_bandwidth_Bps) +
         ", not modelled). peak.fp32 "
         "and efficiency.matmul: the repo's blocked fp32 GEMM (kernels/gemm.h), "
         "n = 96..768; peak is the fitted achievable asymptote (max_fraction 1). "
         "vector_flops: L1-resident multiply-add chains on every thread. "
         "kernel_overhead: an empty OpenMP parallel region. fp64 GEMM reached " +
         format_flop_rate(c.fp64_flops) +
         " (recorded only: no fp64 dtype). bf16/fp16 not measured: the CPU kernels "
         "compute in fp32. memory: installed RAM. Fit residual details, per-family "
         "factors and raw measurements: the .calibration.json beside this file.";
}

}  // namespace

LineFit fit_line_relative(std::span<const double> x, std::span<const double> t) {
  SS_ASSERT(x.size() == t.size(), "fit_line_relative: x and t must have the same size");
  // Minimize sum w (a + b x - t)^2 with w = 1/t^2: normal equations of a 2x2 system.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  bool any = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(t[i] > 0) || !(x[i] >= 0)) continue;
    const double w = 1.0 / (t[i] * t[i]);
    sw += w, sx += w * x[i], sxx += w * x[i] * x[i], st += w * t[i], sxt += w * x[i] * t[i];
    any = any || x[i] > 0;
  }
  if (!any) {
    throw InputError("calibration", "fit", "(no points)",
                     "needs at least one measurement with positive work and time");
  }
  const double det = sw * sxx - sx * sx;
  LineFit f;
  if (det > 1e-12 * sw * sxx) {
    f.slope = (sw * sxt - sx * st) / det;
    f.intercept = (st - f.slope * sx) / sw;
  }
  if (!(det > 1e-12 * sw * sxx) || f.intercept < 0) {  // one size, or a negative intercept
    f.intercept = 0;
    f.slope = sxt / sxx;
  }
  return f;
}

Calibration fit_calibration(const std::vector<Measurement>& micro,
                            const std::vector<Measurement>& kernel_calibration,
                            const CalibrationInfo& info) {
  Calibration c;
  c.info = info;
  c.microbenchmarks = micro;
  c.kernel_calibration = kernel_calibration;
  const auto family = [](const char* f) {
    return [f](const Measurement& m) { return m.family == f; };
  };

  const auto launch = select(micro, family("launch"));
  if (launch.empty()) missing("launch");
  const double overhead_s = time_of(*launch.front());
  if (const auto sync = select(micro, family("sync")); !sync.empty())
    c.sync_s = time_of(*sync.front());

  const auto stream = [](const Measurement& m) {
    return m.family == "copy" || m.family == "triad";
  };
  auto dram =
      select(micro, [&](const Measurement& m) { return stream(m) && m.shape.ends_with("dram"); });
  if (dram.empty()) dram = select(micro, stream);  // untagged sizes (the CUDA benchmarks): all
  const RateFit mem = fit_rate(dram, &Measurement::bytes, overhead_s, "copy/triad (dram)");
  for (const Measurement* m : select(micro, [](const Measurement& m) {
         return (m.family == "copy" || m.family == "triad") && m.shape.ends_with("cache");
       })) {
    c.cache_bandwidth_Bps = std::max(c.cache_bandwidth_Bps, m->bytes / time_of(*m));
  }
  const auto gemm_fp32 = select(
      micro, [](const Measurement& m) { return m.family == "gemm_peak" && m.dtype == "fp32"; });
  const RateFit mm = fit_rate(gemm_fp32, &Measurement::matmul_flop, overhead_s, "gemm_peak fp32");
  const auto gemm_fp64 = select(
      micro, [](const Measurement& m) { return m.family == "gemm_peak" && m.dtype == "fp64"; });
  if (!gemm_fp64.empty()) {
    c.fp64_flops =
        fit_rate(gemm_fp64, &Measurement::matmul_flop, overhead_s, "gemm_peak fp64").rate;
  }
  // Without a vector benchmark (the CUDA set), non-matrix work runs at the fp32 GEMM rate.
  const auto vector = select(micro, family("vector"));
  const RateFit vec =
      vector.empty() ? mm : fit_rate(vector, &Measurement::vector_flop, overhead_s, "vector");
  if (const auto serial = select(micro, family("serial")); !serial.empty()) {
    // The op's own FLOP; the region's fork/join and the op's fixed cost form the intercept.
    const RateFit s = fit_rate(serial, &Measurement::vector_flop, 0.0, "serial");
    c.serial_flops = s.rate;
    c.serial_overhead_s = s.intercept_s;
  }

  DeviceSpec& d = c.hardware.device;
  d.name = info.device_name;
  // Single-threaded tasks (an operator graph's `task` ops, the DAG executor's nodes): the serial
  // rate and fixed cost measured with every thread busy, one task a thread.
  if (c.serial_flops >= 1e6) {
    d.task_flops = c.serial_flops;
    d.task_overhead_s = std::min(c.serial_overhead_s, 1.0);
    d.cores = std::max(1, info.threads);
  }
  d.peak_flops[static_cast<int>(DType::kFp32)] = mm.rate;
  for (DType t : {DType::kTf32, DType::kBf16, DType::kFp16, DType::kFp8}) {
    const std::string name(dtype_name(t));
    const auto gemm = select(
        micro, [&](const Measurement& m) { return m.family == "gemm_peak" && m.dtype == name; });
    if (!gemm.empty()) {
      d.peak_flops[static_cast<int>(t)] =
          fit_rate(gemm, &Measurement::matmul_flop, overhead_s, "gemm_peak " + name).rate;
    }
  }
  d.vector_flops = vec.rate;
  d.memory_B = info.memory_B > 0 ? info.memory_B : kGiB;
  d.memory_bandwidth_Bps = mem.rate;
  d.matmul = {1.0, mm.half_size};
  d.memory = {1.0, mem.half_size};
  d.kernel_overhead_s = overhead_s;
  d.source = source_text(c);

  HardwareModel& h = c.hardware;
  h.name = info.device_name;
  h.num_devices = 1;
  h.node.devices = 1;
  h.node.device_link = {"shared-memory", mem.rate, c.sync_s, 1.0, {},
                        "Measured by stratasim calibrate: DRAM copy bandwidth and one thread "
                        "barrier round trip (threads of one process share memory)."};
  h.node.nics = 0;

  // Per family and form: mean of measured / roofline over the calibration shapes. A shape
  // whose time does not exceed its launch overheads (tiny sizes on a loaded machine) says
  // nothing about the rest and is left out; a family with no such shape keeps factor 1. The
  // roofline is the one the prediction scales: a workload family's (the image pipeline) is its
  // operator graph's prediction on this hardware before any factor is set (a sum of per-op
  // rooflines, not the roofline of the summed work), so a calibration shape predicts back its
  // own measured time.
  std::map<std::pair<std::string, std::string>, std::pair<double, FamilyFactor>> sums;
  for (const Measurement& m : kernel_calibration) {
    const double launches_s = m.launches * overhead_s;
    const std::optional<double> workload = predict_workload_kernel_s(c.hardware, m);
    const double roof = (workload ? *workload : roofline_kernel_s(d, m)) - launches_s;
    auto& [sum, f] = sums[{m.family, m.form}];
    f.family = m.family, f.form = m.form;
    if (time_of(m) > launches_s && roof > 0) {
      sum += (time_of(m) - launches_s) / roof;
      f.shapes.push_back(m.shape);
    }
  }
  for (auto& [key, entry] : sums) {
    const auto n = entry.second.shapes.size();
    entry.second.factor = n > 0 ? entry.first / static_cast<double>(n) : 1.0;
    c.factors.push_back(entry.second);
    // The device carries them too, so that any scenario naming this hardware file predicts a
    // kernel of a calibrated family with its measured factor (sim/cost kernel_time).
    const int family = kernel_family_index(entry.second.family);
    if (family >= 0 && (entry.second.form == "fused" || entry.second.form == "unfused")) {
      h.device.family_factors[family][entry.second.form == "fused" ? 0 : 1] =
          std::clamp(entry.second.factor, 0.05, 20.0);
    }
  }
  return c;
}

double roofline_kernel_s(const DeviceSpec& d, const Measurement& work) {
  Kernel k;
  k.matmul_flops = work.matmul_flop;
  k.other_flops = work.vector_flop;
  k.bytes = work.bytes;
  k.launches = std::max(work.launches, 1);
  return kernel_time(k, d, DType::kFp32).total_s -
         d.kernel_overhead_s * (k.launches - work.launches);
}

std::optional<double> predict_workload_kernel_s(const HardwareModel& hw, const Measurement& m) {
  int h = 0, w = 0;
  if (m.family != "image_pipeline" || std::sscanf(m.shape.c_str(), "%dx%d", &h, &w) != 2 || h < 1 ||
      w < 1) {
    return std::nullopt;
  }
  Strategy s;
  s.workload = Workload::kInference;
  s.dtype = DType::kFp32;
  s.micro_batch = s.global_batch = 1;
  fusion_preset(m.form == "fused" ? "chains" : "none", &s.fusion);
  const Expected<Plan> plan = lower(make_image_pipeline(h, w), s, hw);
  if (!plan) return std::nullopt;
  return predict_analytical(*plan).iteration_s;
}

const FamilyFactor* find_factor(const Calibration& c, const std::string& family,
                                const std::string& form) {
  for (const FamilyFactor& f : c.factors) {
    if (f.family == family && f.form == form) return &f;
  }
  return nullptr;
}

double predict_kernel_s(const Calibration& c, const Measurement& work) {
  const DeviceSpec& d = c.hardware.device;
  const double launches_s = work.launches * d.kernel_overhead_s;
  const FamilyFactor* f = find_factor(c, work.family, work.form);
  return launches_s + (f ? f->factor : 1.0) * (roofline_kernel_s(d, work) - launches_s);
}

Json measurement_json(const Measurement& m) {
  return Json{{"family", m.family},
              {"form", m.form},
              {"dtype", m.dtype},
              {"shape", m.shape},
              {"matmul_flop", m.matmul_flop},
              {"vector_flop", m.vector_flop},
              {"bytes", m.bytes},
              {"launches", m.launches},
              {"seconds", m.seconds},
              {"min_seconds", m.min_seconds},
              {"repeats", m.repeats}};
}

Json calibrated_hardware_json(const Calibration& c) {
  Json j = to_json(c.hardware);
  j["source"] = c.hardware.device.source;
  return j;
}

Json calibration_record_json(const Calibration& c, const std::string& hardware_file_name) {
  Json factors = Json::array();
  for (const FamilyFactor& f : c.factors) {
    factors.push_back(
        {{"family", f.family}, {"form", f.form}, {"factor", f.factor}, {"fitted_on", f.shapes}});
  }
  Json micro = Json::array(), kern = Json::array();
  for (const Measurement& m : c.microbenchmarks) micro.push_back(measurement_json(m));
  for (const Measurement& m : c.kernel_calibration) kern.push_back(measurement_json(m));
  const DeviceSpec& d = c.hardware.device;
  return Json{{"kind", "calibration"},
              {"hardware", hardware_file_name},
              {"what", c.info.what},
              {"measured_at", c.info.measured_at},
              {"cpu", c.info.cpu},
              {"threads", c.info.threads},
              {"fit",
               {{"kernel_overhead_s", d.kernel_overhead_s},
                {"sync_s", c.sync_s},
                {"memory_bandwidth_Bps", d.memory_bandwidth_Bps},
                {"memory_half_size_B", d.memory.half_size},
                {"cache_bandwidth_Bps", c.cache_bandwidth_Bps},
                {"fp32_flops", d.peak_flops[static_cast<int>(DType::kFp32)]},
                {"matmul_half_size_flop", d.matmul.half_size},
                {"fp64_flops", c.fp64_flops},
                {"vector_flops", d.vector_flops},
                {"serial_flops", c.serial_flops},
                {"serial_overhead_s", c.serial_overhead_s}}},
              {"family_factors", factors},
              {"microbenchmarks", micro},
              {"kernel_calibration", kern}};
}

std::string calibration_record_path(const std::string& hardware_path) {
  std::filesystem::path p(hardware_path);
  p.replace_extension(".calibration.json");
  return p.generic_string();
}

void write_calibration(const Calibration& c, const std::string& hardware_path) {
  const std::string name = std::filesystem::path(hardware_path).filename().generic_string();
  // The model must load as a scenario's cluster would: a figure outside the plausible bounds
  // (a disturbed measurement) is reported, never written.
  const Json hardware = calibrated_hardware_json(c);
  try {
    (void)read_cluster(JsonNode(hardware, hardware_path, ""));
  } catch (const InputError& e) {
    throw InputError("calibrate", hardware_path, "(not written)",
                     std::string("the measurements give an implausible model: ") + e.what() +
                         "; rerun on an idle machine");
  }
  write_file_atomically(calibration_record_path(hardware_path),
                        json_text(calibration_record_json(c, name), 1) + "\n");
  write_file_atomically(hardware_path, json_text(hardware, 2) + "\n");
}

namespace {

Measurement read_measurement(const JsonNode& n) {
  n.allow_keys({"family", "form", "dtype", "shape", "matmul_flop", "vector_flop", "bytes",
                "launches", "seconds", "min_seconds", "repeats"});
  Measurement m;
  m.family = n.at("family").as_string();
  m.form = n.at("form").as_string();
  m.dtype = n.at("dtype").as_string();
  m.shape = n.at("shape").as_string();
  m.matmul_flop = n.at("matmul_flop").as_number();
  m.vector_flop = n.at("vector_flop").as_number();
  m.bytes = n.at("bytes").as_number();
  m.launches = static_cast<int>(n.at("launches").as_integer(0, 1 << 20));
  m.seconds = n.at("seconds").as_number();
  m.min_seconds = n.at("min_seconds").as_number();
  m.repeats = static_cast<int>(n.at("repeats").as_integer(0, 1 << 20));
  return m;
}

double non_negative(const JsonNode& n) {
  const double v = n.as_number();
  if (!(v >= 0) || !std::isfinite(v)) n.fail("must be a finite number >= 0");
  return v;
}

}  // namespace

Calibration read_calibration(const std::string& hardware_path) {
  Calibration c;
  const Json ref = Json{{"file", hardware_path}};
  c.hardware = read_cluster(JsonNode(ref, "command line", "--hardware"));

  const std::string record = calibration_record_path(hardware_path);
  if (!std::filesystem::is_regular_file(record)) {
    throw InputError(record, "", "(missing)",
                     "is the calibration record `stratasim calibrate` writes beside " +
                         hardware_path + "; run calibrate again");
  }
  const Json doc = load_json_file(record);
  const JsonNode root(doc, record, "");
  root.allow_keys({"kind", "hardware", "what", "measured_at", "cpu", "threads", "fit",
                   "family_factors", "microbenchmarks", "kernel_calibration"});
  if (root.at("kind").as_string() != "calibration") root.at("kind").fail("must be \"calibration\"");
  c.info.device_name = c.hardware.device.name;
  c.info.what = root.at("what").as_string();
  c.info.measured_at = root.at("measured_at").as_string();
  c.info.cpu = root.at("cpu").as_string();
  c.info.threads = static_cast<int>(root.at("threads").as_integer(1, 1 << 16));
  const JsonNode fit = root.at("fit");
  fit.allow_keys({"kernel_overhead_s", "sync_s", "memory_bandwidth_Bps", "memory_half_size_B",
                  "cache_bandwidth_Bps", "fp32_flops", "matmul_half_size_flop", "fp64_flops",
                  "vector_flops", "serial_flops", "serial_overhead_s"});
  c.sync_s = non_negative(fit.at("sync_s"));
  c.cache_bandwidth_Bps = non_negative(fit.at("cache_bandwidth_Bps"));
  c.fp64_flops = non_negative(fit.at("fp64_flops"));
  c.serial_flops = non_negative(fit.at("serial_flops"));
  c.serial_overhead_s = non_negative(fit.at("serial_overhead_s"));
  const JsonNode factors = root.at("family_factors");
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const JsonNode f = factors.element(i);
    f.allow_keys({"family", "form", "factor", "fitted_on"});
    FamilyFactor ff{f.at("family").as_string(), f.at("form").as_string(), 0, {}};
    ff.factor = f.at("factor").as_number();
    if (!(ff.factor > 0) || !std::isfinite(ff.factor))
      f.at("factor").fail("must be a finite number > 0");
    const JsonNode shapes = f.at("fitted_on");
    for (std::size_t k = 0; k < shapes.size(); ++k)
      ff.shapes.push_back(shapes.element(k).as_string());
    c.factors.push_back(std::move(ff));
  }
  for (const char* key : {"microbenchmarks", "kernel_calibration"}) {
    const JsonNode list = root.at(key);
    auto& out = std::string(key) == "microbenchmarks" ? c.microbenchmarks : c.kernel_calibration;
    for (std::size_t i = 0; i < list.size(); ++i) out.push_back(read_measurement(list.element(i)));
  }
  return c;
}

}  // namespace stratasim
