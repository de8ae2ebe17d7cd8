// FlashAttention-1 against FlashAttention-2 as a device's side-by-side benchmark measured them
// (DeviceSpec::flash1), and FlashAttention-2's causal backward as flash-attn's own forward +
// backward benchmark implies it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/simple_device.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

// 1000 TFLOP/s bf16, flat FA2 curves (forward 0.4, backward 0.3), 1 us a launch, and an FA1
// benchmark: head dim 64 causal at 50 and 80 of FA2's 100 TFLOP/s at 1K and 4K keys, head dim
// 128 causal 40 of 100 at both, and head dim 64 non-causal 60 of 100 at 2K only.
DeviceSpec benchmarked_device() {
  DeviceSpec d = testing::simple_device();
  d.flash2 = {{0.4, 0}, {0.3, 0}};
  d.flash1.series = {{64, true, {{{1024, 50, 100}}, {{4096, 80, 100}}}},
                     {128, true, {{{1024, 40, 100}}, {{4096, 40, 100}}}},
                     {64, false, {{{2048, 60, 100}}}}};
  return d;
}

// A fused attention kernel's FA1 time over its FA2 time, launches aside.
double flash1_slowdown(const Kernel& k, const DeviceSpec& d) {
  const double launch = d.kernel_overhead_s * k.launches;
  return (kernel_time(k, d, DType::kBf16, AttentionKernel::kFlash1).total_s - launch) /
         (kernel_time(k, d, DType::kBf16, AttentionKernel::kFlash2).total_s - launch);
}

Kernel attention(double keys, bool causal, double head_dim) {
  Kernel k = testing::attention_kernel(1.2e10, keys, causal);
  k.attention_head_dim = head_dim;
  return k;
}

}  // namespace

TEST_CASE("attention: FlashAttention-1's speed is its benchmark's ratio to FlashAttention-2") {
  const DeviceSpec d = benchmarked_device();
  // Head dim 64, causal, 2K keys: halfway in log2 between 1K (0.5) and 4K (0.8): 0.65. The
  // forward's 1.2e10 FLOP at 0.4 of 1000 TFLOP/s take 30 us on FA2, 30 / 0.65 = 46.15 us on FA1.
  CHECK(flash1_slowdown(attention(2048, true, 64), d) == doctest::Approx(1 / 0.65));
  CHECK(kernel_time(attention(2048, true, 64), d, DType::kBf16, AttentionKernel::kFlash1).total_s ==
        doctest::Approx(30e-6 / 0.65 + 1e-6));
  // Held at the measured lengths' ends: 0.5 below 1K, 0.8 above 4K.
  CHECK(flash1_slowdown(attention(512, true, 64), d) == doctest::Approx(1 / 0.5));
  CHECK(flash1_slowdown(attention(32768, true, 64), d) == doctest::Approx(1 / 0.8));
  // Head dim 128: 0.4; the ratio between 64 and 128 in log2 (2^6.5 = 90.5): (0.65 + 0.4) / 2 =
  // 0.525. Neither has a kernel of that width (kernel_head_dim): FA1 runs head dim 128's, at
  // 0.4 of FA2 on 128 / 90.5 times the FLOP, FA2 its 96-wide one on 96 / 90.5 times: FA1 over
  // FA2 = (128 / 0.4) / 96 = 3.33 (FA2's curve is flat).
  CHECK(flash1_slowdown(attention(2048, true, 128), d) == doctest::Approx(1 / 0.4));
  CHECK(d.flash1.at(2048, true, std::pow(2, 6.5)) == doctest::Approx(0.525));
  CHECK(flash1_slowdown(attention(2048, true, std::pow(2, 6.5)), d) ==
        doctest::Approx(128 / (0.4 * 96)));
  // Non-causal has only head dim 64 at 2K: 0.6 whatever the length and head dim.
  CHECK(flash1_slowdown(attention(8192, false, 128), d) == doctest::Approx(1 / 0.6));
  // The backward takes the same ratio (the benchmark times both passes together).
  Kernel back = attention(2048, true, 64);
  back.phase = Phase::kBackward;
  CHECK(flash1_slowdown(back, d) == doctest::Approx(1 / 0.65));
  // A mask the benchmark lacks takes the other mask's series.
  DeviceSpec causal_only = d;
  causal_only.flash1.series.pop_back();
  CHECK(flash1_slowdown(attention(4096, false, 128), causal_only) == doctest::Approx(1 / 0.4));
  // Without a benchmark, the FA2 paper's "around 2x": half.
  DeviceSpec none = d;
  none.flash1 = {};
  CHECK(flash1_slowdown(attention(2048, true, 64), none) == doctest::Approx(2.0));
}

TEST_CASE("attention: the catalog's FlashAttention-1 benchmarks are flash-attn's README bars") {
  // FA2 paper Fig. 4 as flash-attn's README shows it (forward + backward TFLOP/s): A100, head
  // dim 64, causal, 2K: FA1 77, FA2 140; head dim 128, causal, 16K: 83 and 189. H100 (its own
  // figure), head dim 128, non-causal, 8K: 137 and 335.
  const DeviceSpec a100 = catalog_device("A100-SXM4-80GB");
  CHECK(flash1_slowdown(attention(2048, true, 64), a100) == doctest::Approx(140.0 / 77));
  CHECK(flash1_slowdown(attention(16384, true, 128), a100) == doctest::Approx(189.0 / 83));
  CHECK(flash1_slowdown(attention(8192, false, 128), catalog_device("H100-SXM5-80GB")) ==
        doctest::Approx(335.0 / 137));
  CHECK(catalog_device("A100-SXM4-40GB").flash1 == a100.flash1);
  CHECK(catalog_device("H200-SXM-141GB").flash1 == catalog_device("H100-SXM5-80GB").flash1);
}

TEST_CASE("attention: FlashAttention's Triton version runs at its own measured ratio, else half") {
  // The FA2 paper's A100 figure times the Triton version beside FA2 (forward + backward): head
  // dim 128, causal, 2K: 68 against 155 TFLOP/s; head dim 64, non-causal, 8K: 100 against 175.
  // FlashAttention-1 at the first point is 69: the two kernels are costed apart.
  const DeviceSpec a100 = catalog_device("A100-SXM4-80GB");
  auto slowdown = [](const Kernel& k, const DeviceSpec& d) {
    const double launch = d.kernel_overhead_s * k.launches;
    return (kernel_time(k, d, DType::kBf16, AttentionKernel::kFlashTriton).total_s - launch) /
           (kernel_time(k, d, DType::kBf16, AttentionKernel::kFlash2).total_s - launch);
  };
  CHECK(slowdown(attention(2048, true, 128), a100) == doctest::Approx(155.0 / 68));
  CHECK(slowdown(attention(8192, false, 64), a100) == doctest::Approx(175.0 / 100));
  CHECK(flash1_slowdown(attention(2048, true, 128), a100) == doctest::Approx(155.0 / 69));
  // No Triton benchmark on H100: half FA2's speed, as its docstring has it ("overall Triton
  // forward + backward is slightly slower than CUDA forward + backward", FA1 at half FA2).
  const DeviceSpec h100 = catalog_device("H100-SXM5-80GB");
  CHECK_FALSE(h100.flash_triton.present());
  CHECK(slowdown(attention(2048, true, 128), h100) == doctest::Approx(2.0));
  // The strategy names it.
  const Json j = parse_json_text(R"({"global_batch": 8, "fusion": {"preset": "all", "attention_kernel": "flash_triton"}})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fusion.attention_kernel == AttentionKernel::kFlashTriton);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
}

TEST_CASE("attention: a device's FlashAttention-1 benchmark is read, written back and checked") {
  auto read = [](const std::string& flash1) {
    const std::string text = R"({"preset": "A100-SXM4-80GB", "efficiency": {"flash1": )" + flash1 + "}}";
    return read_device(JsonNode(parse_json_text(text, "dev.json"), "dev.json", ""));
  };
  const DeviceSpec d = read(R"({"96": {"causal": [[1024, 30, 60], [2048, 40, 80]]}})");
  REQUIRE(d.flash1.series.size() == 1);
  CHECK(d.flash1.series[0].head_dim == 96);
  CHECK(d.flash1.at(1448, true, 96) == doctest::Approx(0.5));
  CHECK(read_device(JsonNode(to_json(d), "rt", "")) == d);
  CHECK(read_device(JsonNode(to_json(catalog_device("H100-SXM5-80GB")), "rt", "")) ==
        catalog_device("H100-SXM5-80GB"));
  CHECK(read_device(JsonNode(to_json(catalog_device("A100-SXM4-80GB")), "rt", "")) ==
        catalog_device("A100-SXM4-80GB"));

  auto refused = [&](const std::string& flash1) {
    return testing::input_error_message([&] { read(flash1); });
  };
  std::string what = refused(R"({"64": {"causal": [[2048, 30, 60], [1024, 40, 80]]}})");
  CAPTURE(what);
  CHECK(what.find("dev.json") != std::string::npos);
  CHECK(what.find("efficiency.flash1.64.causal[1][0]") != std::string::npos);
  CHECK(what.find("must exceed the previous row's length") != std::string::npos);
  what = refused(R"({"64": {"causal": [[2048, 30]]}})");
  CHECK(what.find("must be [sequence length, kernel TFLOP/s, FA2 TFLOP/s]") != std::string::npos);
  what = refused(R"({"sixty-four": {"causal": [[2048, 30, 60]]}})");
  CHECK(what.find("keys must be head dimensions") != std::string::npos);
  what = refused(R"({"64": {"masked": [[2048, 30, 60]]}})");
  CHECK(what.find("masked") != std::string::npos);
  what = refused(R"({"64": {"causal": [[2048, 0, 60]]}})");
  CHECK(what.find("must be a positive TFLOP/s figure") != std::string::npos);
}

TEST_CASE("attention: FlashAttention-2's causal backward on H100 is what its README benchmark leaves") {
  // flash-attn's README (H100 SXM5, head dim 128, causal, 16K): forward + backward 328 TFLOP/s,
  // its non-causal bar 338 where the FA3 paper's forward 370 and backward 322 give together
  // 3.5 / (1/370 + 2.5/322) = 334.4: a campaign factor 0.989. The FA3 paper's causal forward
  // is 335, so the causal backward is 2.5 / (3.5 / (328 x 0.989) - 1/335) = 320.5 TFLOP/s.
  // The catalog curve at the short-loop clock: 0.329 x 989 x 16384 / (16384 + 665) = 312.7,
  // within 3% of it (the old assumption, the forward's causal ratios, gave 288: 10% short).
  DeviceSpec h100 = catalog_device("H100-SXM5-80GB");
  h100.sustained_clock = 1;
  Kernel back = attention(16384, true, 128);
  back.phase = Phase::kBackward;
  const double s = kernel_time(back, h100, DType::kBf16, AttentionKernel::kFlash2).total_s -
                   h100.kernel_overhead_s;
  const double backward_tflops = back.matmul_flops / s / 1e12;
  CHECK(backward_tflops == doctest::Approx(0.329 * 989 * 16384 / (16384 + 665)).epsilon(0.002));
  CHECK(std::abs(backward_tflops / 320.5 - 1) < 0.03);
  // The A100 curve borrows these shapes; the FA2 paper's A100 bars (not used for them) say
  // forward + backward 155 TFLOP/s at 2K causal head dim 128: forward 0.68 x 2048 / (2048 +
  // 405) = 0.5677 and backward 0.622 x 2048 / (2048 + 665) = 0.4695 of 312 give together
  // 3.5 / (1/0.5677 + 2.5/0.4695) x 312 = 154.1 (the old backward: 132.7, -14%).
  const DeviceSpec a100 = catalog_device("A100-SXM4-80GB");
  Kernel fwd = attention(2048, true, 128);
  back = fwd;
  back.phase = Phase::kBackward;
  const double fwd_s = kernel_time(fwd, a100, DType::kBf16, AttentionKernel::kFlash2).total_s - a100.kernel_overhead_s;
  const double back_s = kernel_time(back, a100, DType::kBf16, AttentionKernel::kFlash2).total_s - a100.kernel_overhead_s;
  const double together = 3.5 * fwd.matmul_flops / (fwd_s + 2.5 * back_s) / 1e12;
  CHECK(together == doctest::Approx(154.1).epsilon(0.005));
  CHECK(std::abs(together / 155 - 1) < 0.02);
}

TEST_CASE("attention: FlashAttention 1, 2 and Triton run a head on the next kernel width up") {
  // flash-attn 0.2 (fmha_api.cpp at 4a6eaa9f) has kernels of head dim 32, 64 and 128; the
  // Triton version pads to a power of two. A head of 96 costs what a head of 128 does on the
  // same rows: the 96-wide kernel's FLOP (3/4 of the 128-wide one's) take the same time.
  const DeviceSpec d = benchmarked_device();
  for (AttentionKernel kernel : {AttentionKernel::kFlash1, AttentionKernel::kFlashTriton}) {
    const Kernel wide = attention(2048, true, 128);
    Kernel narrow = attention(2048, true, 96);
    narrow.matmul_flops = wide.matmul_flops * 96 / 128;
    CHECK(kernel_time(narrow, d, DType::kBf16, kernel).total_s ==
          doctest::Approx(kernel_time(wide, d, DType::kBf16, kernel).total_s));
  }
  // Triton: 48 runs as 64 (FA1's 64 too). FA1 and FA2 both run 16 as 32: FA1 over FA2 is the
  // ratio alone, held at head dim 64's (0.65 at 2K).
  Kernel k48 = attention(2048, true, 48), k64 = attention(2048, true, 64);
  k48.matmul_flops = k64.matmul_flops * 48 / 64;
  CHECK(kernel_time(k48, d, DType::kBf16, AttentionKernel::kFlashTriton).total_s ==
        doctest::Approx(kernel_time(k64, d, DType::kBf16, AttentionKernel::kFlashTriton).total_s));
  CHECK(flash1_slowdown(attention(2048, true, 16), d) == doctest::Approx(1 / 0.65));
  // FlashAttention-2 has a 96-wide kernel: no padding. On the flat forward curve (0.4) the
  // 96-wide FLOP take 3/4 of the 128-wide time.
  Kernel narrow = attention(2048, true, 96);
  narrow.matmul_flops = 1.2e10 * 96 / 128;
  CHECK(kernel_time(narrow, d, DType::kBf16, AttentionKernel::kFlash2).total_s ==
        doctest::Approx(0.9e10 / (1e15 * 0.4) + 1e-6));
  // A head of 80 (GPT-3 2.7B's) runs FlashAttention-2's 96-wide kernel: the 80-wide FLOP take
  // the 96-wide time, 0.9e10 / 0.4 of 1000 TFLOP/s = 22.5 us (+ 1 us launch).
  Kernel k80 = attention(2048, true, 80);
  k80.matmul_flops = 1.2e10 * 80 / 128;
  CHECK(kernel_time(k80, d, DType::kBf16, AttentionKernel::kFlash2).total_s ==
        doctest::Approx(0.9e10 / (1e15 * 0.4) + 1e-6));
}
