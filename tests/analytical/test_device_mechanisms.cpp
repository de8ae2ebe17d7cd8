// Device mechanisms worked by hand: fp8 only in linear layers (with its cast kernels), bf16
// storage under fp8 training, and fused attention at the device's FlashAttention curves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/lowering/iteration.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/simple_device.h"
#include "tests/support/small_plans.h"

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

// The round device with a cuDNN curve too (forward 0.5, backward 0.4), for the kernel choice.
DeviceSpec round_device_with_cudnn() {
  DeviceSpec d = round_device();
  d.cudnn = {{0.5, 0}, {0.4, 0}};
  return d;
}

// A strategy of global batch 8 with the `fusion` JSON given, read as a scenario would be.
Strategy strategy_with_fusion(const char* fusion) {
  const Json j = parse_json_text(std::string(R"({"global_batch": 8, "fusion": )") + fusion + "}", "s.json");
  return read_strategy(JsonNode(j, "s.json", "strategy"));
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

// Its backward: input and weight gradients (twice the forward FLOP) in two GEMM launches.
Kernel linear_backward() {
  Kernel b = linear_forward();
  b.phase = Phase::kBackward;
  b.matmul_flops *= 2;
  b.launches = 2;
  return b;
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
  // Backward: output gradient 6 B x 1000 x 2000 = 12 MB, weight 3 B x 8e6 = 24 MB -> 36 us;
  // dgrad + wgrad, 16 us each at fp8.
  CHECK(kernel_time(linear_backward(), d, DType::kFp8).total_s == doctest::Approx(32e-6 + 2e-6 + 36e-6 + 4e-6));
}

TEST_CASE("fp8: a recomputed GEMM casts what its forward casts") {
  // The forward's casts (kernel_cost.cpp): input 6 B x 4e6 + weight 5 B x 8e6 = 64 MB at
  // 1 TB/s and 4 launches, the GEMM 16 us + 1 us: the recomputation pays the same, not the
  // backward's output-gradient and weight casts (36 MB).
  const DeviceSpec d = round_device();
  Kernel k = linear_forward();
  k.phase = Phase::kRecompute;
  CHECK(kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(17e-6 + 64e-6 + 4e-6));
  // A gradient gathered in FP8 changes nothing there.
  k.fp8_grad_shard = 0.125;
  CHECK(kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(17e-6 + 64e-6 + 4e-6));
}

TEST_CASE("fp8: a GEMM whose input arrives cast (tensor-parallel fp8 all-gather) saves exactly the input's cast") {
  // The 1000 x 4000 input: torchao's tensorwise input cast moves 6 B an element in 2 of the
  // forward's 4 cast kernels (kernel_cost.cpp); at 1 TB/s with 1 us launches:
  // 6 * 4e6 / 1e12 s + 2 us = 26 us.
  const DeviceSpec d = round_device();
  Kernel k = linear_forward();
  const double full = kernel_time(k, d, DType::kFp8).total_s;
  k.fp8_input_precast = true;
  CHECK(full - kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(26e-6).epsilon(1e-9));
}

TEST_CASE("fp8: a GEMM fed or followed by an FP8 tensor-parallel gather copies the gathered operand for its weight gradient") {
  // linear_backward: m = 1000 tokens, k = 4000 in, n = 2000 out; at 1 TB/s with 1 us launches.
  // Plain tensorwise backward casts: output gradient 6 B x 2e6 = 12 MB, weight 3 B x 8e6 =
  // 24 MB; 4 launches.
  const DeviceSpec d = round_device();
  Kernel k = linear_backward();
  const double plain = kernel_time(k, d, DType::kFp8).total_s;
  // Input gathered in FP8 (row-major only): the weight gradient wants it column-major,
  // torchao's preprocess_addmm copies it: read and write 1 B x 4e6 = 8 MB, one launch more.
  k.fp8_input_precast = true;
  CHECK(kernel_time(k, d, DType::kFp8).total_s - plain == doctest::Approx(8e-6 + 1e-6).epsilon(1e-9));
  // Output gradient gathered in FP8 after a cast on a 1/8 shard: amax and cast 5 B x 2e6 / 8
  // = 1.25 MB, and the row-major copy of its transpose 2 B x 2e6 = 4 MB, in place of the
  // 12 MB cast: 6.75 us less, one launch more.
  k.fp8_input_precast = false;
  k.fp8_grad_shard = 1.0 / 8;
  CHECK(kernel_time(k, d, DType::kFp8).total_s - plain == doctest::Approx(-6.75e-6 + 1e-6).epsilon(1e-9));
}

TEST_CASE("fp8: a weight gathered in FP8 (FSDP float8 all-gather) is not cast, its backward copies it transposed") {
  // linear_forward: 1000 x 4000 input, 4000 x 2000 weight; at 1 TB/s with 1 us launches.
  const DeviceSpec d = round_device();
  Kernel k = linear_forward();
  const double plain = kernel_time(k, d, DType::kFp8).total_s;
  k.fp8_weight_precast = true;
  // Forward: the weight's amax and cast, 5 B x 8e6 = 40 MB and 2 launches, are gone.
  CHECK(plain - kernel_time(k, d, DType::kFp8).total_s == doctest::Approx(40e-6 + 2e-6).epsilon(1e-9));
  // Input and weight both arriving cast: no cast at all, and a finite time (the GEMM alone).
  k.fp8_input_precast = true;
  const KernelTime t = kernel_time(k, d, DType::kFp8);
  CHECK(t.cast_s == 0);
  CHECK(t.total_s == doctest::Approx(17e-6));
  // Backward: the weight's 3 B x 8e6 = 24 MB cast becomes the column-major copy of the
  // gathered FP8 weight, 2 B x 8e6 = 16 MB.
  Kernel b = linear_backward();
  const double back = kernel_time(b, d, DType::kFp8).total_s;
  b.fp8_weight_precast = true;
  CHECK(back - kernel_time(b, d, DType::kFp8).total_s == doctest::Approx(8e-6).epsilon(1e-9));
}

TEST_CASE("fp8: torchao's rowwise recipe casts along both dims and runs its own GEMM curve") {
  DeviceSpec d = round_device();
  d.matmul_fp8_rowwise = {0.25, 0};
  const Kernel k = linear_forward();
  const KernelTime rw = kernel_time(k, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kRowwise);
  // GEMM: 1.6e10 / (2000e12 * 0.25) = 32 us + 1 us launch. Casts (kernel_cost.cpp): input
  // 5 x 3.125 = 15.625 B x 4e6 = 62.5 MB, weight 3 x 1.8 = 5.4 B x 8e6 = 43.2 MB: 105.7 us at
  // 1 TB/s, + 2 launches.
  CHECK(rw.total_s == doctest::Approx(33e-6 + 105.7e-6 + 2e-6));
  // Backward: input 3 x 3.125 = 9.375 B x 4e6 = 37.5 MB, weight 7 x 1.8 = 12.6 B x 8e6 =
  // 100.8 MB, output gradient 8 x 1.25 = 10 B x 2e6 = 20 MB: 158.3 us, + 5 launches; the two
  // GEMMs 64 us + 2 launches.
  const Kernel b = linear_backward();
  CHECK(kernel_time(b, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kRowwise).total_s ==
        doctest::Approx(66e-6 + 158.3e-6 + 5e-6));
  // Without a rowwise curve the device's fp8 curve (0.5) runs the GEMM: 16 us + 1 us.
  d.matmul_fp8_rowwise = {0, 0};
  CHECK(kernel_time(k, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kRowwise).total_s ==
        doctest::Approx(17e-6 + 105.7e-6 + 2e-6));
  // bf16 training ignores the recipe.
  CHECK(kernel_time(k, d, DType::kBf16, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kRowwise).total_s ==
        doctest::Approx(21e-6));
}

TEST_CASE("fp8: Transformer Engine's recipes cast activations once and weights per iteration") {
  const DeviceSpec d = round_device();
  const Kernel k = linear_forward();
  // Delayed scaling: one cast-transpose of the input, 4 B x 1000 x 4000 = 16 MB = 16 us at
  // 1 TB/s, 1 launch; no weight cast beside the GEMM (17 us with its launch).
  CHECK(kernel_time(k, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kDelayed).total_s ==
        doctest::Approx(17e-6 + 16e-6 + 1e-6));
  // Current scaling reads the input once more for its amax: 6 B -> 24 us, in 3 launches (TE's
  // Float8CurrentScalingQuantizer::quantize: amax, scale from amax, cast).
  CHECK(kernel_time(k, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kCurrent).total_s ==
        doctest::Approx(17e-6 + 24e-6 + 3e-6));
  // Backward: the output gradient, 4 B x 1000 x 2000 = 8 MB = 8 us; GEMMs 32 us + 2 launches.
  CHECK(kernel_time(linear_backward(), d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kDelayed).total_s ==
        doctest::Approx(34e-6 + 8e-6 + 1e-6));
}

TEST_CASE("fp8: a grouped expert GEMM is quantized per expert under current scaling") {
  // TE's GroupedLinear splits its input by expert and quantizes each split: delayed scaling in
  // one fused multi-tensor cast-transpose, current scaling with amax, scale and cast per split.
  const DeviceSpec d = round_device();
  Kernel g = linear_forward();
  g.gemm_batch = 8, g.gemm_m = 125;  // 8 local experts of 125 rows: the same 1000 x 4000 input
  // GEMM 1.6e10 / (2000e12 x 0.5) = 16 us + 1 launch. Delayed: 4 B x 4e6 = 16 us, 1 launch.
  CHECK(kernel_time(g, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kDelayed).total_s ==
        doctest::Approx(17e-6 + 16e-6 + 1e-6));
  // Current: 6 B x 4e6 = 24 us, and 3 kernels x 8 experts = 24 launches of 1 us.
  CHECK(kernel_time(g, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kCurrent).total_s ==
        doctest::Approx(17e-6 + 24e-6 + 24e-6));
  // The backward quantizes the output gradient per expert the same way: 6 B x 125 x 8 x 2000 =
  // 12 us, 24 launches, beside its two GEMMs (32 us + 2 launches).
  Kernel gb = linear_backward();
  gb.gemm_batch = 8, gb.gemm_m = 125;
  CHECK(kernel_time(gb, d, DType::kFp8, AttentionKernel::kFlash2, 1.0, Fp8Scaling::kCurrent).total_s ==
        doctest::Approx(34e-6 + 12e-6 + 24e-6));
}

TEST_CASE("fp8: Transformer Engine casts a rank's linear weights once per iteration") {
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 8;
  const ModelSpec m = read_model(JsonNode(parse_json_text(
      R"({"family": "decoder", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 32000})",
      "m.json"), "m.json", "model"));
  for (const Fp8Scaling scaling : {Fp8Scaling::kDelayed, Fp8Scaling::kCurrent, Fp8Scaling::kTensorwise}) {
    Strategy s;
    s.dp = 8, s.global_batch = 64, s.micro_batch = 1;
    s.dtype = DType::kFp8;
    s.fp8_scaling = scaling;
    const Expected<Plan> plan = lower(m, s, hw);
    REQUIRE(plan.has_value());
    const std::vector<IterOp>& tail = plan->iteration.tail.at(0);
    const auto cast = std::find_if(tail.begin(), tail.end(),
                                   [](const IterOp& op) { return op.kind == IterOpKind::kFp8WeightCast; });
    if (scaling == Fp8Scaling::kTensorwise) {  // torchao casts beside every GEMM instead
      CHECK(cast == tail.end());
      continue;
    }
    REQUIRE(cast != tail.end());
    // The 4 layers' weights, not the embedding or the output projection: 12 h^2 + 13 h each
    // (GPT: QKV 3h^2 + 3h, projection h^2 + h, MLP 8h^2 + 5h, two norms 4h) = 12,596,224 x 4.
    const double linear = 4.0 * (12.0 * 1024 * 1024 + 13 * 1024);
    CHECK(cast->bytes == doctest::Approx(linear * (scaling == Fp8Scaling::kCurrent ? 6 : 4)));
  }
}

TEST_CASE("fp8: fp8_scaling is read, written back, and refused without fp8 training") {
  const Json j = parse_json_text(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "rowwise"})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fp8_scaling == Fp8Scaling::kRowwise);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  const Json bf16 = parse_json_text(R"({"global_batch": 8, "fp8_scaling": "rowwise"})", "s.json");
  CHECK_THROWS_WITH_AS(read_strategy(JsonNode(bf16, "s.json", "strategy")),
                       doctest::Contains("s.json: strategy.fp8_scaling: \"rowwise\" applies to FP8 "
                                         "training only; set dtype to \"fp8\""),
                       InputError);
  const Json odd = parse_json_text(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "blockwise"})", "s.json");
  CHECK_THROWS_WITH_AS(read_strategy(JsonNode(odd, "s.json", "strategy")),
                       doctest::Contains("strategy.fp8_scaling"), InputError);
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

TEST_CASE("attention: fused attention runs at the curve of its kernel") {
  DeviceSpec d = round_device_with_cudnn();
  Kernel fa = testing::attention_kernel(1.2e10, 0);
  constexpr auto fa2 = AttentionKernel::kFlash2, fa3 = AttentionKernel::kFlash3,
                 cudnn = AttentionKernel::kCudnn;
  // FA2: 1.2e10 / (1000e12 * 0.4) = 30 us; FA3: / 0.6 = 20 us; cuDNN: / 0.5 = 24 us; + 1 us
  // launch.
  CHECK(kernel_time(fa, d, DType::kBf16, fa2).total_s == doctest::Approx(31e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, fa3).total_s == doctest::Approx(21e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, cudnn).total_s == doctest::Approx(25e-6));
  // Under fp8 training attention stays bf16: same time.
  CHECK(kernel_time(fa, d, DType::kFp8, fa3).total_s == doctest::Approx(21e-6));
  fa.phase = Phase::kBackward;  // backward curves: 0.3, 0.5 and 0.4
  CHECK(kernel_time(fa, d, DType::kBf16, fa2).total_s == doctest::Approx(41e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, fa3).total_s == doctest::Approx(25e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, cudnn).total_s == doctest::Approx(31e-6));
  // No cuDNN curve: cuDNN falls back to FA3; no FA3 on the device (A100) either: to FA2; no
  // curves at all: the GEMM curve.
  // Recomputation reruns the forward kernel: the forward curves (FA2 30 us + 1 us).
  fa.phase = Phase::kRecompute;
  CHECK(kernel_time(fa, d, DType::kBf16, fa2).total_s == doctest::Approx(31e-6));
  fa.phase = Phase::kBackward;
  d.cudnn = {};
  CHECK(kernel_time(fa, d, DType::kBf16, cudnn).total_s == doctest::Approx(25e-6));
  d.flash3 = {};
  CHECK(kernel_time(fa, d, DType::kBf16, fa3).total_s == doctest::Approx(41e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, cudnn).total_s == doctest::Approx(41e-6));
  d.flash2 = {};
  CHECK(kernel_time(fa, d, DType::kBf16, fa3).total_s == doctest::Approx(1.2e10 / 800e12 + 1e-6));
}

TEST_CASE("attention: a fused kernel's softmax is inside its measured rate, not timed again") {
  // The attention curves are published TFLOPS: the matmul FLOP over the whole kernel's time,
  // its exponentials, row maxima and sums included. The round device's FA2 forward (0.4 of
  // 1000 TFLOP/s): 1.2e10 FLOP in 30 us + 1 us launch, whatever softmax work the kernel
  // carries (1e9 FLOP would take 100 us more on 10 TFLOP/s of vector units).
  DeviceSpec d = round_device();
  d.vector_flops = 10e12;
  Kernel fa = testing::attention_kernel(1.2e10, 0);
  fa.other_flops = 1e9;
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s == doctest::Approx(31e-6));
  fa.phase = Phase::kBackward;  // 1.2e10 / (0.3 x 1000e12) = 40 us + 1 us
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s == doctest::Approx(41e-6));
  // A device without attention curves runs it at the GEMM curve (0.8: 15 us), which has no
  // softmax in it: the vector units' 100 us are paid on top (+ 1 us launch).
  d.flash2 = {}, d.flash3 = {};
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s == doctest::Approx(116e-6));

  // End to end on the catalog H100, at the short-loop clock the FlashAttention-3 paper measured
  // (sustained_clock 1): a Llama 3 8B layer at 16K tokens (head dim 128, causal) lowers to one
  // FA2 kernel that runs at the paper's 335 TFLOPS (Fig. 5, causal, 16k) within the curve's 5%
  // fit, forward; and 0.329 x 989 x 16384 / (16384 + 665) = 313 backward (the causal backward
  // flash-attn's README benchmark implies: tests/analytical/test_attention_generations.cpp).
  // Timing the softmax on the vector units again had made the forward 311.
  ModelSpec m = model_preset("llama3-8b");
  m.transformer.seq_len = 16384;
  Strategy s;
  s.global_batch = 1;
  fusion_preset("all", &s.fusion);
  s.fusion.attention_kernel = AttentionKernel::kFlash2;
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 1;
  hw.device.sustained_clock = 1;
  const Expected<Plan> plan = lower(m, s, hw);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  auto tflops = [&](const std::vector<Kernel>& ks) {
    for (const Kernel& k : ks) {
      if (k.cls != OpClass::kFlashAttention) continue;
      const KernelTime t = kernel_time(k, hw.device, DType::kBf16, AttentionKernel::kFlash2);
      return k.matmul_flops / (t.total_s - hw.device.kernel_overhead_s * k.launches) / 1e12;
    }
    FAIL("no fused attention kernel");
    return 0.0;
  };
  CHECK(std::abs(tflops(plan->layer->forward) / 335 - 1) < 0.05);
  CHECK(tflops(plan->layer->backward) == doctest::Approx(0.329 * 989 * 16384 / (16384 + 665)).epsilon(0.01));
}

TEST_CASE("attention: the first FlashAttention runs at half FlashAttention-2's speed without a benchmark") {
  // FA2 paper (arXiv 2307.08691): "around 2x speedup compared to FlashAttention". The round
  // device's FA2 forward is 0.4 of 1000 TFLOP/s: 1.2e10 FLOP in 30 us; FA1 at 0.2: 60 us
  // (+ 1 us launch each). Backward 0.3: 40 us and 80 us. (A device with a side-by-side FA1
  // benchmark takes its ratio: test_attention_generations.cpp.) The FA3 and cuDNN curves are never
  // FA1's, even where the device has them.
  DeviceSpec d = round_device_with_cudnn();
  Kernel fa = testing::attention_kernel(1.2e10, 0);
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash2).total_s == doctest::Approx(31e-6));
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash1).total_s == doctest::Approx(61e-6));
  fa.phase = Phase::kBackward;
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash1).total_s == doctest::Approx(81e-6));
  // With the sustained clock (0.8) on top: 1.2e10 / (1000e12 * 0.3 * 0.5 * 0.8) = 100 us.
  d.sustained_clock = 0.8;
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash1).total_s == doctest::Approx(101e-6));
  // No attention curves at all: half the GEMM curve's 0.8: 1.2e10 / 400e12 = 30 us.
  d.sustained_clock = 1;
  d.flash2 = {};
  d.flash3 = {};
  d.cudnn = {};
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash1).total_s == doctest::Approx(31e-6));
  // The JSON names it, also as flash_attention_version 1.
  auto strategy = strategy_with_fusion;
  const Strategy s = strategy(R"({"preset": "all", "attention_kernel": "flash1"})");
  CHECK(s.fusion.attention_kernel == AttentionKernel::kFlash1);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(strategy(R"({"flash_attention_version": 1})").fusion.attention_kernel == AttentionKernel::kFlash1);
  CHECK_THROWS_WITH_AS(strategy(R"({"flash_attention_version": 1, "attention_kernel": "flash2"})"),
                       doctest::Contains("strategy.fusion.flash_attention_version: 1 names another kernel"),
                       InputError);
}

TEST_CASE("attention: attention_kernel is read, written back, and agrees with the older key") {
  auto strategy = strategy_with_fusion;
  const Strategy s = strategy(R"({"preset": "all", "attention_kernel": "cudnn"})");
  CHECK(s.fusion.attention_kernel == AttentionKernel::kCudnn);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(strategy(R"({"flash_attention_version": 3})").fusion.attention_kernel == AttentionKernel::kFlash3);
  CHECK(strategy(R"({"flash_attention_version": 2, "attention_kernel": "flash2"})").fusion.attention_kernel ==
        AttentionKernel::kFlash2);
  CHECK(strategy("{}").fusion.attention_kernel == AttentionKernel::kFlash2);
  CHECK_THROWS_WITH_AS(strategy(R"({"flash_attention_version": 3, "attention_kernel": "cudnn"})"),
                       doctest::Contains("s.json: strategy.fusion.flash_attention_version: 3 names "
                                         "another kernel than attention_kernel"),
                       InputError);
  CHECK_THROWS_WITH_AS(strategy(R"({"attention_kernel": "flash4"})"),
                       doctest::Contains("strategy.fusion.attention_kernel: \"flash4\""), InputError);
}

TEST_CASE("attention: the catalog's A100 has FA2 curves only, H100 and H200 FA2, FA3, cuDNN") {
  CHECK(catalog_device("A100-SXM4-80GB").flash2.present());
  CHECK_FALSE(catalog_device("A100-SXM4-80GB").flash3.present());
  CHECK_FALSE(catalog_device("A100-SXM4-80GB").cudnn.present());
  CHECK(catalog_device("H200-SXM-141GB").cudnn == catalog_device("H100-SXM5-80GB").cudnn);
  const DeviceSpec h = catalog_device("H100-SXM5-80GB");
  CHECK(h.cudnn.present());
  CHECK(h.flash3.forward.max_fraction > h.flash2.forward.max_fraction);
  CHECK(h.matmul_fp8.max_fraction < h.matmul.max_fraction);  // fp8 GEMMs reach less of peak
}

TEST_CASE("attention: efficiency by the keys a row attends, causal masking and head dim") {
  // plateau 0.6 (causal 0.5), half the plateau at 200 keys (causal 800); head dim 64 at 0.75.
  const AttentionPass a{0.6, 200, 0.5, 800, {{64, 0.75}}};
  CHECK(a.at(200, false, 128) == doctest::Approx(0.6 * 200 / 400));
  CHECK(a.at(800, true, 128) == doctest::Approx(0.5 * 800 / 1600));
  CHECK(a.at(0, false, 128) == doctest::Approx(0.6));  // unknown keys: the plateau
  CHECK(a.plateau(true, 128) == doctest::Approx(0.5));
  // Head dim: 0.75 at 64, 1 at 128 (implied), linear in log2 between, held beyond the ends.
  CHECK(a.plateau(false, 64) == doctest::Approx(0.45));
  CHECK(a.plateau(false, 32) == doctest::Approx(0.45));
  CHECK(a.plateau(false, std::pow(2.0, 6.5)) == doctest::Approx(0.6 * 0.875));
  CHECK(a.plateau(false, 256) == doctest::Approx(0.6));
  // Absent causal figures fall back to the non-causal ones.
  const AttentionPass b{0.6, 200, 0, 0, {}};
  CHECK(b.at(200, true, 128) == doctest::Approx(0.3));

  // A kernel: 1.2e10 FLOP of causal attention over 800 keys on the round device's FA3.
  DeviceSpec d = round_device();
  d.flash3.forward = a;
  Kernel fa;
  fa.cls = OpClass::kFlashAttention;
  fa.phase = Phase::kForward;
  fa.matmul_flops = 1.2e10;
  fa.attention_keys = 800, fa.attention_causal = true, fa.attention_head_dim = 128;
  // 1.2e10 / (1000e12 * 0.25) = 48 us, + 1 us launch.
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash3).total_s == doctest::Approx(49e-6));
}

TEST_CASE("attention: the H100 curves reproduce the FlashAttention-3 paper's figures") {
  // Shah et al. 2024 (arXiv 2407.08608) Figs. 5-6, H100 SXM5, head dim 128, TFLOPS: each
  // fitted curve within 5% of the figure's bar at the shortest, a middle and the longest
  // sequence.
  const DeviceSpec h = catalog_device("H100-SXM5-80GB");
  auto tflops = [&](const AttentionPass& p, double keys, bool causal) {
    return p.at(keys, causal, 128) * 989;
  };
  struct Bar {
    const AttentionPass* pass;
    bool causal;
    double keys, measured;
  };
  const Bar bars[] = {
      {&h.flash2.forward, false, 512, 309}, {&h.flash2.forward, false, 16384, 370},
      {&h.flash2.forward, true, 512, 191},  {&h.flash2.forward, true, 2048, 298},
      {&h.flash2.forward, true, 16384, 335}, {&h.flash3.forward, false, 2048, 625},
      {&h.flash3.forward, true, 512, 292},  {&h.flash3.forward, true, 16384, 616},
      {&h.flash2.backward, false, 512, 214}, {&h.flash2.backward, false, 16384, 322},
      {&h.flash3.backward, false, 512, 316}, {&h.flash3.backward, false, 4096, 542},
      // The same figures' cuDNN bars (the kernel Transformer Engine runs on Hopper).
      {&h.cudnn.forward, false, 512, 497},  {&h.cudnn.forward, false, 16384, 595},
      {&h.cudnn.forward, true, 512, 315},   {&h.cudnn.forward, true, 4096, 518},
      {&h.cudnn.forward, true, 16384, 539}, {&h.cudnn.backward, false, 512, 305},
      {&h.cudnn.backward, false, 4096, 499}, {&h.cudnn.backward, false, 16384, 516},
  };
  for (const Bar& b : bars) {
    CAPTURE(b.keys);
    CAPTURE(b.causal);
    CHECK(std::abs(tflops(*b.pass, b.keys, b.causal) / b.measured - 1) < 0.05);
  }
  // cuDNN's causal plateau sits below FA3's (539 vs 616 TFLOPS at 16k): the curves differ.
  CHECK(h.cudnn.forward.plateau(true, 128) < 0.9 * h.flash3.forward.plateau(true, 128));
  // Head dim 64 runs FA3 at about three quarters of the head-dim-128 plateau (497 vs 648).
  CHECK(h.flash3.forward.plateau(false, 64) / h.flash3.forward.plateau(false, 128) ==
        doctest::Approx(497.0 / 648).epsilon(0.02));
}

TEST_CASE("attention: cuDNN's causal backward keeps the measured share of its non-causal speed") {
  // NVIDIA's cudnn-frontend benchmark (benchmark/benchmark_results.csv at b740542, May 2024,
  // cuDNN 9.1 on H200, 16 heads of 128, batch x sequence = 16k) times both masks of the
  // backward at one length; causal over non-causal, TFLOPS:
  //   4k 438.45 / 535.06 = 0.819, 8k 461.89 / 536.95 = 0.860, 16k 488.56 / 546.53 = 0.894,
  //   32k 504.14 / 546.31 = 0.923, 64k 508.07 / 549.29 = 0.925.
  // The causal curve over the paper's non-causal one must give those shares within 1.5%. The
  // assumption it replaced (the forward's causal/non-causal plateau and half-key ratios) gave
  // 0.748 at 4k and 0.816 at 8k.
  for (const char* name : {"H100-SXM5-80GB", "H200-SXM-141GB"}) {
    CAPTURE(name);
    const AttentionPass& b = catalog_device(name).cudnn.backward;
    const double shares[][2] = {{4096, 0.8194}, {8192, 0.8602}, {16384, 0.8939},
                                {32768, 0.9228}, {65536, 0.9250}};
    for (const auto& [keys, measured] : shares) {
      CAPTURE(keys);
      CHECK(b.at(keys, true, 128) / b.at(keys, false, 128) == doctest::Approx(measured).epsilon(0.015));
    }
    // cuDNN 9.19 on H200 (the same repository's results/h200_919_only_cudnn, Llama 3.1's 64 query
    // and 8 K/V heads, batch 1) at 2k, outside the fitted lengths: 370 / 504 = 0.734.
    CHECK(b.at(2048, true, 128) / b.at(2048, false, 128) == doctest::Approx(370.0 / 504).epsilon(0.02));
  }
}

TEST_CASE("attention: lowering records the keys per launch, the masking and the head dim") {
  ModelSpec m = model_preset("llama3-8b");  // seq 8192, head dim 128, causal
  HardwareModel hw = catalog_cluster("dgx_h100");
  auto attention = [&](int cp, CpComm comm) {
    Strategy s;
    s.cp = cp, s.cp_comm = comm, s.global_batch = 1;
    fusion_preset("all", &s.fusion);
    hw.num_devices = cp;
    const Expected<Plan> plan = lower(m, s, hw);
    REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
    for (const Kernel& k : plan->layer->forward) {
      if (k.cls == OpClass::kFlashAttention) return k;
    }
    FAIL("no fused attention kernel");
    return Kernel{};
  };
  const Kernel whole = attention(1, CpComm::kRing);
  CHECK(whole.attention_keys == 8192);
  CHECK(whole.attention_causal);
  CHECK(whole.attention_head_dim == 128);
  // Ring attention: one launch per K/V block of s / cp keys, unmasked (load-balanced chunks).
  const Kernel ring = attention(4, CpComm::kRing);
  CHECK(ring.attention_keys == 2048);
  CHECK_FALSE(ring.attention_causal);
  // Ulysses: all s keys of heads / cp, causal.
  const Kernel ulysses = attention(4, CpComm::kAllToAll);
  CHECK(ulysses.attention_keys == 8192);
  CHECK(ulysses.attention_causal);
}

TEST_CASE("attention: a device file with the old FLOP-sized attention curve is refused by name") {
  const std::string text = R"({"preset": "H100-SXM5-80GB", "efficiency": {"flash2": {"forward":
      {"max_fraction": 0.36, "half_size": "20GFLOP"}}}})";
  const std::string what = testing::input_error_message(
      [&] { read_device(JsonNode(parse_json_text(text, "dev.json"), "dev.json", "")); });
  CAPTURE(what);
  CHECK(what.find("dev.json") != std::string::npos);
  CHECK(what.find("half_size") != std::string::npos);
  CHECK(what.find("half_keys") != std::string::npos);
}

TEST_CASE("attention: the short-loop attention curves run at the device's sustained clock") {
  // The round device's FA3 forward: plateau 0.6, half at 200 keys. 1.2e10 FLOP over 200 keys
  // runs at 0.3 of 1000 TFLOP/s = 40 us (+ 1 us launch); at a sustained clock of 0.8 of the
  // short-loop one, at 0.24 of peak: 50 us (+ 1 us). A GEMM is a sustained figure already.
  DeviceSpec d = round_device();
  d.flash3.forward = AttentionPass{0.6, 200, 0, 0, {}};
  d.flash3.backward = d.flash3.forward;
  const Kernel fa = testing::attention_kernel(1.2e10, 200);
  Kernel gemm;
  gemm.cls = OpClass::kMatmul;
  gemm.matmul_flops = 1.2e10;
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash3).total_s == doctest::Approx(41e-6));
  const double gemm_s = kernel_time(gemm, d, DType::kBf16, AttentionKernel::kFlash3).total_s;
  d.sustained_clock = 0.8;
  CHECK(kernel_time(fa, d, DType::kBf16, AttentionKernel::kFlash3).total_s == doctest::Approx(51e-6));
  CHECK(kernel_time(gemm, d, DType::kBf16, AttentionKernel::kFlash3).total_s == doctest::Approx(gemm_s));

  // The catalog: H100 and H200 hold 720 of the 798 TFLOPS their short GEMM loops reach
  // (0.902); A100's longest GEMMs run as fast as its short ones (1).
  CHECK(catalog_device("H100-SXM5-80GB").sustained_clock == doctest::Approx(720.0 / 798).epsilon(0.001));
  CHECK(catalog_device("H200-SXM-141GB").sustained_clock == doctest::Approx(720.0 / 798).epsilon(0.001));
  CHECK(catalog_device("A100-SXM4-80GB").sustained_clock == 1.0);

  // Read, written back, and refused out of range with the rule.
  const DeviceSpec read = read_device(JsonNode(
      parse_json_text(R"({"preset": "H100-SXM5-80GB", "sustained_clock": 0.85})", "dev.json"), "dev.json", ""));
  CHECK(read.sustained_clock == 0.85);
  CHECK(to_json(read).at("sustained_clock").get<double>() == 0.85);
  const std::string what = testing::input_error_message([&] {
    read_device(JsonNode(parse_json_text(R"({"preset": "H100-SXM5-80GB", "sustained_clock": 1.2})", "dev.json"),
                         "dev.json", ""));
  });
  CAPTURE(what);
  CHECK(what.find("dev.json") != std::string::npos);
  CHECK(what.find("sustained_clock") != std::string::npos);
  CHECK(what.find("between 0.5 and 1") != std::string::npos);
}

TEST_CASE("gemm: wave quantization stretches a GEMM's FLOP, not its fixed cost") {
  // 1e15 FLOP/s, plateau 0.8, half the plateau at 1e9 FLOP, 132 SMs, no launch cost.
  DeviceSpec d = testing::simple_device();
  d.matmul = {0.8, 1e9};
  d.kernel_overhead_s = 0;
  d.compute_units = 132;
  Kernel k;
  k.cls = OpClass::kMatmul;
  k.phase = Phase::kForward;
  // 1024^3: 128 x 128 tiles are 64 tiles on 132 SMs, one wave at 0.93 x 64/132 = 0.45091
  // (256 x 128: 32 tiles, 0.24242). 2 x 1024^3 FLOP at 0.8e15 x 0.45091, plus the fixed cost
  // 1e9 / 0.8e15 = 1.25 us: 5.9531 + 1.25 = 7.2031 us (stretching the fixed cost too gave
  // 8.7252 us). Compared in microseconds: Approx's default scale would make a tolerance of
  // microseconds absolute.
  k.gemm_m = 1024, k.gemm_n = 1024, k.gemm_k = 1024;
  k.matmul_flops = 2.0 * 1024 * 1024 * 1024;
  const double wave = 0.93 * 64 / 132;
  auto us = [&] { return kernel_time(k, d, DType::kBf16).total_s * 1e6; };
  CHECK(us() == doctest::Approx(k.matmul_flops / (0.8e15 * wave) * 1e6 + 1.25));
  CHECK(us() == doctest::Approx(7.2031).epsilon(1e-4));
  // A router's skinny GEMM, 4096 tokens x 8 experts x 4096: 32 tiles of 128 x 128 whose columns
  // are 8/128 useful: 0.93 x 0.0625 x 32/132 = 0.014091; its 0.268 GFLOP take 23.813 us, plus
  // one fixed cost (1.25 us): 25.063 us, not 23.813 + 1.25 / 0.014091 = 112.5 us.
  k.gemm_m = 4096, k.gemm_n = 8, k.gemm_k = 4096;
  k.matmul_flops = 2.0 * 4096 * 8 * 4096;
  const double skinny = 0.93 * 0.0625 * 32 / 132;
  CHECK(us() == doctest::Approx(k.matmul_flops / (0.8e15 * skinny) * 1e6 + 1.25));
  CHECK(us() == doctest::Approx(25.063).epsilon(1e-4));
}
