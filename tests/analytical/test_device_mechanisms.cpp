// Device mechanisms worked by hand: fp8 only in linear layers (with its cast kernels), bf16
// storage under fp8 training, and fused attention at the device's FlashAttention curves.
#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

// A device with round numbers: 1000 TFLOP/s bf16, 2000 fp8, 1 TB/s, flat curves.
DeviceSpec round_device() {
  DeviceSpec d;
  d.name = "round";
  d.peak_flops[static_cast<int>(DType::kBf16)] = 1000e12;
  d.peak_flops[static_cast<int>(DType::kFp8)] = 2000e12;
  d.memory_bandwidth_Bps = 1e12;
  d.matmul = {0.8, 0};
  d.matmul_fp8 = {0.5, 0};
  d.memory = {1.0, 0};
  d.kernel_overhead_s = 1e-6;
  d.flash2 = {{0.4, 0}, {0.3, 0}};
  d.flash3 = {{0.6, 0}, {0.5, 0}};
  return d;
}

Kernel linear_forward() {
  Kernel k;
  k.cls = OpClass::kMatmul;
  k.phase = Phase::kForward;
  k.fp8_eligible = true;
  k.gemm_m = 1000, k.gemm_n = 2000, k.gemm_k = 4000;
  k.matmul_flops = 2 * k.gemm_m * k.gemm_n * k.gemm_k;  // 1.6e10
  return k;
}

}  // namespace

TEST_CASE("fp8: a linear layer's GEMM runs at the fp8 peak and curve, plus its casts") {
  const DeviceSpec d = round_device();
  const Kernel k = linear_forward();
  // bf16: 1.6e10 / (1000e12 * 0.8) = 20 us, + 1 us launch.
  CHECK(kernel_time(k, d, DType::kBf16).total_s == doctest::Approx(21e-6));
  // fp8: 1.6e10 / (2000e12 * 0.5) = 16 us + 1 us launch; casts: input 6 B x 1000 x 4000
  // = 24 MB and weight 5 B x 4000 x 2000 = 40 MB at 1 TB/s = 64 us, + 4 launches = 4 us.
  CHECK(kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(17e-6 + 64e-6 + 4e-6));
  // Backward: output gradient 6 B x 1000 x 2000 = 12 MB, weight 3 B x 8e6 = 24 MB -> 36 us.
  Kernel b = k;
  b.phase = Phase::kBackward;
  b.matmul_flops = 2 * k.matmul_flops;  // dgrad + wgrad, 16 us each at fp8
  b.launches = 2;
  CHECK(kernel_time(b, d, DType::kFp8).total_s == doctest::Approx(32e-6 + 2e-6 + 36e-6 + 4e-6));
}

TEST_CASE("fp8: attention's batched GEMMs and the output projection stay in 16 bit") {
  const DeviceSpec d = round_device();
  Kernel k = linear_forward();
  k.fp8_eligible = false;
  CHECK(kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(21e-6));

  // In a lowered Llama layer every projection is eligible; the head's output projection is not.
  ModelSpec m = model_preset("llama3-8b");
  Strategy s;
  s.dtype = DType::kFp8;
  s.global_batch = 1;
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 1;
  const Expected<Plan> plan = lower(m, s, hw);
  REQUIRE(plan.has_value());
  int eligible = 0;
  for (const Kernel& f : plan->layer->forward) eligible += f.fp8_eligible;
  CHECK(eligible == 4);  // qkv, attention output, fc1 (gate+up), fc2
  for (const Kernel& f : plan->head->forward) CHECK_FALSE(f.fp8_eligible);
  // Storage stays bf16: 2 bytes per weight and gradient element, not 1.
  CHECK(plan->weight_bytes_per_param == 2);
  CHECK(plan->grad_bytes_per_param == 2);
}

TEST_CASE("attention: fused attention runs at the FlashAttention curve of its version") {
  DeviceSpec d = round_device();
  Kernel fa;
  fa.cls = OpClass::kFlashAttention;
  fa.phase = Phase::kForward;
  fa.matmul_flops = 1.2e10;
  // FA2: 1.2e10 / (1000e12 * 0.4) = 30 us; FA3: / 0.6 = 20 us; + 1 us launch.
  CHECK(kernel_time(fa, d, DType::kBf16, 2).total_s == doctest::Approx(31e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, 3).total_s == doctest::Approx(21e-6));
  // Under fp8 training attention stays bf16: same time.
  CHECK(kernel_time(fa, d, DType::kFp8, 3).total_s == doctest::Approx(21e-6));
  fa.phase = Phase::kBackward;  // backward curve: 0.3 and 0.5
  CHECK(kernel_time(fa, d, DType::kBf16, 2).total_s == doctest::Approx(41e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, 3).total_s == doctest::Approx(25e-6));
  // No FA3 on the device (A100): version 3 falls back to FA2; no curves at all: the GEMM curve.
  d.flash3 = {};
  CHECK(kernel_time(fa, d, DType::kBf16, 3).total_s == doctest::Approx(41e-6));
  d.flash2 = {};
  CHECK(kernel_time(fa, d, DType::kBf16, 3).total_s == doctest::Approx(1.2e10 / 800e12 + 1e-6));
}

TEST_CASE("attention: the catalog's A100 has FA2 curves only; H100 has FA2 and FA3") {
  CHECK(catalog_device("A100-SXM4-80GB").flash2.present());
  CHECK_FALSE(catalog_device("A100-SXM4-80GB").flash3.present());
  const DeviceSpec h = catalog_device("H100-SXM5-80GB");
  CHECK(h.flash3.forward.max_fraction > h.flash2.forward.max_fraction);
  CHECK(h.matmul_fp8.max_fraction < h.matmul.max_fraction);  // fp8 GEMMs reach less of peak
}
