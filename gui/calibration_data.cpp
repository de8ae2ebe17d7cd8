#include "gui/calibration_data.h"

#include "sim/core/text.h"

namespace stratasim {
namespace {

std::string text_of(const JsonNode& n) { return n.is_string() ? n.as_string() : json_text(n.raw()); }

double error_of(const JsonNode& n, double predicted, double measured) {
  if (n.has("error")) return n.number("error");
  return measured > 0 ? (predicted - measured) / measured : 0;
}

std::optional<double> optional_number(const JsonNode& n, const char* key) {
  auto child = n.find(key);
  if (!child || child->raw().is_null()) return std::nullopt;
  return child->as_number();
}

std::vector<KernelCheck> kernel_checks(const JsonNode& list) {
  std::vector<KernelCheck> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonNode k = list.element(i);
    KernelCheck c;
    c.family = k.string("family");
    c.form = k.string_or("form", "");
    if (auto shape = k.find("shape")) c.shape = text_of(*shape);
    c.predicted_s = k.number("predicted_s");
    c.measured_s = k.number("measured_s");
    c.error = error_of(k, c.predicted_s, c.measured_s);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string machine_check_summary(const CalibrationReport& r) {
  std::string s;
  for (const KernelCheck& c : r.machine_check) {
    s += format_text("%s%s %+.0f%%", s.empty() ? "machine check: " : ", ", c.family.c_str(),
                     100 * c.error);
  }
  return s;
}

std::string KernelCheck::label() const {
  return family + "/" + form + (shape.empty() ? "" : " " + shape);
}

std::string RuntimeCheck::label() const {
  if (dag) return format_text("dag %s, %d threads", schedule.c_str(), p);
  std::string s = format_text("%s p%d m%d", schedule.c_str(), p, m);
  return v > 1 ? s + format_text(" v%d", v) : s;
}

CalibrationReport read_calibration_report(const Json& j, const std::string& file) {
  const JsonNode root(j, file, "");
  root.require_object();
  if (auto kind = root.find("kind"); kind && kind->as_string() != "kernel_validation") {
    kind->fail("is not a validation report (expected \"kernel_validation\", written by "
               "`stratasim validate --hardware FILE --json OUT`)");
  }
  CalibrationReport r;
  if (auto hw = root.find("hardware")) r.hardware = text_of(*hw);
  if (auto kernels = root.find("kernels")) r.kernels = kernel_checks(*kernels);
  if (auto check = root.find("machine_check")) r.machine_check = kernel_checks(*check);
  if (auto runtime = root.find("runtime")) {
    for (size_t i = 0; i < runtime->size(); ++i) {
      const JsonNode n = runtime->element(i);
      RuntimeCheck c;
      c.schedule = n.string("schedule");
      c.p = static_cast<int>(n.integer_or("p", 0));
      c.m = static_cast<int>(n.integer_or("m", 0));
      c.v = static_cast<int>(n.integer_or("v", 1));
      c.predicted_s = n.number("predicted_s");
      c.measured_s = n.number("measured_s");
      c.error = error_of(n, c.predicted_s, c.measured_s);
      c.predicted_bubble = optional_number(n, "predicted_bubble");
      c.measured_bubble = optional_number(n, "measured_bubble");
      r.runtime.push_back(std::move(c));
    }
  }
  if (auto dag = root.find("dag")) {
    for (size_t i = 0; i < dag->size(); ++i) {
      const JsonNode n = dag->element(i);
      RuntimeCheck c;
      c.dag = true;
      c.schedule = n.string("graph");
      c.p = static_cast<int>(n.integer_or("threads", 1));
      c.m = static_cast<int>(n.integer_or("nodes", 0));
      c.predicted_s = n.number("predicted_s");
      c.measured_s = n.number("measured_s");
      c.error = error_of(n, c.predicted_s, c.measured_s);
      r.runtime.push_back(std::move(c));
    }
  }
  if (auto mape = root.find("mape")) {
    r.mape_kernels = optional_number(*mape, "kernels");
    r.mape_runtime = optional_number(*mape, "runtime");
    r.mape_dag = optional_number(*mape, "dag");
  }
  return r;
}

CalibrationReport load_calibration_report(const std::string& path) {
  return read_calibration_report(load_json_file(path), path);
}

}  // namespace stratasim
