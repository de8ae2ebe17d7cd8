#include "sim/cost/device_variability.h"

#include <algorithm>
#include <cmath>

namespace stratasim {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }

}  // namespace

double inverse_normal_cdf(double p) {
  p = std::clamp(p, 1e-15, 1 - 1e-15);
  if (p < 0.5) return -inverse_normal_cdf(1 - p);
  // Newton's method on Phi(x) - p from the tail estimate sqrt(-2 ln(1 - p)), which lies at or
  // above the root; Phi is concave there, so the iterates fall monotonically onto it.
  double x = std::sqrt(-2.0 * std::log(1 - p));
  for (int i = 0; i < 60; ++i) {
    const double step = (normal_cdf(x) - p) / normal_pdf(x);
    x -= step;
    if (std::abs(step) < 1e-13) break;
  }
  return x;
}

double expected_max_standard_normal(int n) {
  if (n <= 1) return 0;
  // A search costs many plans on one device count: keep the last answer per thread.
  thread_local int last_n = 0;
  thread_local double last = 0;
  if (n != last_n) last = inverse_normal_cdf((n - 0.375) / (n + 0.25)), last_n = n;
  return last;
}

double slowest_device_factor(const HardwareModel& hw) {
  const double sigma = hw.device.speed_variability;
  if (sigma <= 0) return 1.0;
  return 1.0 + sigma * expected_max_standard_normal(hw.num_devices);
}

}  // namespace stratasim
