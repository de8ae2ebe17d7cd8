// The slowest device of a job (sim/cost/device_variability.h): E[max of n standard normals] by
// Blom's plotting position, checked against a second implementation (numerical integration of
// the exact density n phi(x) Phi(x)^(n-1)); the factor on compute only; the catalog's figure.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/device_variability.h"
#include "sim/cost/kernel_cost.h"
#include "tests/support/input_error.h"
#include "tests/support/simple_device.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

// Exact E[max of n iid N(0,1)] = integral of x n phi(x) Phi(x)^(n-1), midpoint rule.
double exact_expected_max(int n) {
  double sum = 0;
  const double h = 1e-3;
  for (double x = -12 + h / 2; x < 12; x += h) {
    const double phi = std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * n * phi * std::pow(cdf, n - 1) * h;
  }
  return sum;
}

TEST_CASE("device variability: the inverse normal CDF at textbook points") {
  CHECK(inverse_normal_cdf(0.5) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(inverse_normal_cdf(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
  CHECK(inverse_normal_cdf(0.025) == doctest::Approx(-1.959964).epsilon(1e-6));
  CHECK(inverse_normal_cdf(0.8413447461) == doctest::Approx(1.0).epsilon(1e-8));
  CHECK(inverse_normal_cdf(1 - 1e-9) == doctest::Approx(5.997807).epsilon(1e-6));
}

TEST_CASE("device variability: E[max of n normals] within 5% of the exact integral") {
  CHECK(expected_max_standard_normal(1) == 0.0);
  // Closed forms: n = 2: 1/sqrt(pi) = 0.5642; n = 3: 3 / (2 sqrt(pi)) = 0.8463.
  CHECK(exact_expected_max(2) == doctest::Approx(1 / std::sqrt(M_PI)).epsilon(1e-6));
  CHECK(exact_expected_max(3) == doctest::Approx(3 / (2 * std::sqrt(M_PI))).epsilon(1e-6));
  for (int n : {2, 3, 8, 64, 1024, 16384}) {
    CAPTURE(n);
    const double blom = expected_max_standard_normal(n), exact = exact_expected_max(n);
    CHECK(std::abs(blom - exact) <= 0.05 * exact);
  }
  // Blom at n = 1024: Phi^-1(1023.625 / 1024.25) = Phi^-1(0.99938980) = 3.23407.
  CHECK(expected_max_standard_normal(1024) == doctest::Approx(3.23407).epsilon(1e-5));
}

TEST_CASE("device variability: the job's compute runs at its slowest device's pace") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.device.speed_variability = 0.011;
  hw.num_devices = 1;
  CHECK(slowest_device_factor(hw) == 1.0);
  hw.num_devices = 1024;  // 1 + 0.011 x 3.23407
  CHECK(slowest_device_factor(hw) == doctest::Approx(1.0355748).epsilon(1e-6));
  hw.device.speed_variability = 0;
  CHECK(slowest_device_factor(hw) == 1.0);
}

TEST_CASE("device variability: the factor stretches compute, not memory traffic") {
  DeviceSpec d = testing::simple_device();
  Kernel gemm;
  gemm.cls = OpClass::kMatmul;
  gemm.matmul_flops = 1.6e10;  // 20 us at 800 TFLOP/s, + 1 us launch
  CHECK(kernel_time(gemm, d, DType::kBf16, AttentionKernel::kFlash2, 1.5).total_s == doctest::Approx(31e-6));
  Kernel copy;
  copy.cls = OpClass::kMemoryBound;
  copy.bytes = 1e8;           // 100 us at 1 TB/s
  copy.other_flops = 1e6;     // negligible compute
  CHECK(kernel_time(copy, d, DType::kBf16, AttentionKernel::kFlash2, 1.5).total_s == doctest::Approx(101e-6));
}

TEST_CASE("device variability: a layer on 1024 devices computes 1 + 0.011 x 3.234 slower than on one") {
  // The same lowered layer costed on a cluster of 8 and of 1024 catalog A100s: every compute-
  // bound kernel stretches by the ratio of the two factors, memory-bound ones not at all.
  const ModelSpec m = testing::small_gpt(2);
  Strategy s;
  s.global_batch = 8, s.micro_batch = 8;
  Plan small = testing::lower_on_dgx_a100(m, s, 1);
  const double f1 = slowest_device_factor(small.hardware);
  CHECK(f1 == 1.0);
  Plan large = small;
  large.hardware.num_devices = 1024;
  const double f = slowest_device_factor(large.hardware);
  CHECK(f == doctest::Approx(1 + 0.011 * 3.23407).epsilon(1e-5));
  const std::vector<KernelTiming> a = kernel_timings(small.layer->forward, small);
  const std::vector<KernelTiming> b = kernel_timings(small.layer->forward, large);
  int compute_bound = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const Kernel& k = small.layer->forward[i];
    if (k.cls == OpClass::kCollective) continue;
    const KernelTime t = kernel_time(k, small.hardware.device, s.dtype);
    const double overhead = small.hardware.device.kernel_overhead_s * (k.reads_input_fused ? 0 : k.launches);
    if (t.compute_s > t.memory_s * f) {
      ++compute_bound;
      CHECK(b[i].total_s - overhead == doctest::Approx(f * (a[i].total_s - overhead)));
    } else if (t.memory_s > t.compute_s * f) {
      CHECK(b[i].total_s == doctest::Approx(a[i].total_s));
    }
  }
  CHECK(compute_bound >= 4);  // qkv, scores, context, projection, fc1, fc2
}

TEST_CASE("device variability: the catalog's GPUs carry the SC'22 figure, a bad value is refused") {
  for (const char* name : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200", "MI300X"}) {
    CAPTURE(name);
    const DeviceSpec d = catalog_device(name);
    CHECK(d.speed_variability == doctest::Approx(0.011));
    CHECK(d.source.find("Not All GPUs Are Created Equal") != std::string::npos);
  }
  CHECK(catalog_device("x86-cpu-socket").speed_variability == 0.0);
  const std::string text = R"({"preset": "H100-SXM5-80GB", "speed_variability": 0.5})";
  const std::string what = testing::input_error_message(
      [&] { read_device(JsonNode(parse_json_text(text, "dev.json"), "dev.json", "")); });
  CAPTURE(what);
  CHECK(what.find("dev.json") != std::string::npos);
  CHECK(what.find("speed_variability") != std::string::npos);
  CHECK(what.find("between 0 and 0.2") != std::string::npos);
}

}  // namespace
}  // namespace stratasim
