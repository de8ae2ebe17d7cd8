#include "validate/flop_conventions.h"

#include <cmath>

#include "sim/core/units.h"
#include "validate/case_rules.h"

namespace stratasim {
namespace {

double field(const Json& c, const char* group, const char* key) {
  const Json& g = c.at(group);
  if (!g.contains(key) || !g.at(key).is_number()) {
    throw InputError("validation case " + c.value("id", std::string("?")) + ": " + group + "." +
                     key + " is needed by its FLOP convention");
  }
  return g.at(key).get<double>();
}

bool arch_has(const Json& c, const char* word) {
  return lowercase(c.at("model").value("arch", std::string())).find(word) != std::string::npos;
}

// Eq. 3 of Narayanan et al. (SC21).
double narayanan_hardware(const Json& c) {
  const double B = field(c, "parallel", "global_batch"), s = field(c, "model", "seq_len"),
               l = field(c, "model", "layers"), h = field(c, "model", "hidden"),
               V = field(c, "model", "vocab");
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double megatron_model_noncausal(const Json& c) {
  const double B = field(c, "parallel", "global_batch"), s = field(c, "model", "seq_len"),
               l = field(c, "model", "layers"), h = field(c, "model", "hidden"),
               V = field(c, "model", "vocab"), a = field(c, "model", "heads");
  const Json& m = c.at("model");
  const double g = m.contains("kv_heads") && m.at("kv_heads").is_number()
                       ? m.at("kv_heads").get<double>() : a;
  const double f = m.contains("ffn_hidden") && m.at("ffn_hidden").is_number()
                       ? m.at("ffn_hidden").get<double>() : 4 * h;
  const double mlp_matrices = arch_has(c, "swiglu") ? 3 : 2;
  const double matmul_params = l * (h * h * (2 + 2 * g / a) + mlp_matrices * h * f) + V * h;
  const double per_token = 6 * matmul_params + 12 * l * s * h;
  return B * s * per_token;
}

}  // namespace

std::string recompute_implied_by_flops(const Json& c) {
  const Json& m = c.at("measured");
  if (!m.contains("iteration_s") || !m.at("iteration_s").is_number() ||
      !m.contains("tflops_per_gpu") || !m.at("tflops_per_gpu").is_number() ||
      arch_has(c, "swiglu")) {
    return "";
  }
  const double B = field(c, "parallel", "global_batch"), s = field(c, "model", "seq_len"),
               l = field(c, "model", "layers"), h = field(c, "model", "hidden"),
               V = field(c, "model", "vocab"), gpus = field(c, "hardware", "num_gpus");
  const double base = B * s * l * h * h;
  const double with = 96 * base * (1 + s / (6 * h) + V / (16 * l * h));
  const double without = 72 * base * (1 + s / (6 * h) + V / (12 * l * h));
  const double measured =
      m.at("tflops_per_gpu").get<double>() * kTera * m.at("iteration_s").get<double>() * gpus;
  return std::fabs(with - measured) < std::fabs(without - measured) ? "full" : "none";
}

double iteration_flops(const std::string& convention, const Json& c) {
  if (convention == "narayanan_hardware") return narayanan_hardware(c);
  if (convention == "megatron_model_noncausal") return megatron_model_noncausal(c);
  throw InputError("validation rules: flop_convention \"" + convention +
                   "\" is unknown (narayanan_hardware, megatron_model_noncausal)");
}

}  // namespace stratasim
