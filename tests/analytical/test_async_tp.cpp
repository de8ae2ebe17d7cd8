// Strategy::tp_overlap = micro_pipeline (sim/cost/block_cost.cpp): PyTorch's async TP fuses an
// all-gather with the matmuls that read it and a reduce-scatter with the single matmul that
// produces it, each as tp steps of 1/tp of the GEMM. Worked from the lowered kernels of a small
// GPT layer (hidden 1024, seq 512, micro-batch 32) at tp 4 with sequence parallelism.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

Plan tp_plan(bool sp, bool overlap, TpOverlap how) {
  Strategy s;
  s.tp = 4;
  s.global_batch = 32, s.micro_batch = 32;
  s.sequence_parallel = sp;
  s.overlap_tp = overlap;
  s.tp_overlap = how;
  return testing::lower_on_dgx_a100(testing::small_gpt(2), s, 4);
}

// The index of the kernel whose first op is `name`.
size_t index_of(const std::vector<Kernel>& ks, const Block& b, const std::string& name) {
  const Kernel& k = testing::kernel(ks, b, name);
  return static_cast<size_t>(&k - ks.data());
}

// The reduce-scatter right after qkv's backward (three matmuls: q, k, v); ks.size() if none.
size_t qkv_input_grad_scatter(const std::vector<Kernel>& ks) {
  size_t at = ks.size();
  for (size_t i = 1; i < ks.size(); ++i) {
    if (ks[i].cls == OpClass::kCollective && ks[i].comm == CommKind::kReduceScatter &&
        ks[i - 1].mm_calls == 3) {
      at = i;
    }
  }
  return at;
}

}  // namespace

TEST_CASE("async TP: an all-gather runs as tp steps beside 1/tp of the GEMM that reads it") {
  const Plan p = tp_plan(true, true, TpOverlap::kMicroPipeline);
  const Block& b = *p.layer;
  const std::vector<Kernel>& ks = b.forward;
  const std::vector<KernelTiming> t = kernel_timings(ks, p);
  const size_t ag = index_of(ks, b, "sp_all_gather1");
  REQUIRE(ks[ag + 1].cls == OpClass::kMatmul);  // the qkv GEMM reads the gathered input
  CHECK(ks[ag + 1].mm_calls == 3);               // wq, wk, wv: one all-gather feeds all three
  // By hand: step GEMM c = the qkv kernel on a quarter of its rows; the pair takes
  // c + 3 max(c s, t / 3); the all-gather adds that less the whole GEMM M.
  Kernel step = ks[ag + 1];
  step.gemm_m /= 4, step.matmul_flops /= 4, step.other_flops /= 4, step.bytes /= 4;
  const double slowest = t[ag + 1].total_s /
                         kernel_time(ks[ag + 1], p.hardware.device, p.strategy.dtype).total_s;
  const double c = kernel_time(step, p.hardware.device, p.strategy.dtype, AttentionKernel::kFlash2, slowest).total_s;
  const double s = p.hardware.device.overlap_slowdown, comm = t[ag].total_s, m = t[ag + 1].total_s;
  CHECK(c > m / 4);  // a quarter of the GEMM runs at a lower efficiency than the whole
  CHECK(t[ag].exposed_s == doctest::Approx(c + 3 * std::max(c * s, comm / 3) - m));
  CHECK(t[ag].exposed_s < t[ag].total_s);
  // A GEMM too small to decompose profitably: the steps cost more than the transfer they hide.
  const Plan tiny = [] {
    Strategy s;
    s.tp = 4, s.global_batch = 8, s.micro_batch = 1, s.sequence_parallel = true;
    s.overlap_tp = true, s.tp_overlap = TpOverlap::kMicroPipeline;
    return testing::lower_on_dgx_a100(testing::small_gpt(2), s, 4);
  }();
  const std::vector<KernelTiming> tt = kernel_timings(tiny.layer->forward, tiny);
  CHECK(tt[ag].exposed_s > tt[ag].total_s);
  // The reduce-scatter after the attention projection (one matmul) is decomposed too.
  const size_t rs = index_of(ks, b, "tp_reduce1");
  REQUIRE(ks[rs - 1].cls == OpClass::kMatmul);
  CHECK(ks[rs - 1].mm_calls == 1);
  CHECK(t[rs].exposed_s < t[rs].total_s);
}

TEST_CASE("async TP: the reduce-scatter of q, k, v's summed input gradients stays exposed") {
  const Plan mp = tp_plan(true, true, TpOverlap::kMicroPipeline);
  const Plan ub = tp_plan(true, true, TpOverlap::kUserbuffers);
  const Block& b = *mp.layer;
  const std::vector<Kernel>& ks = b.backward;
  // The backward of the all-gather before qkv: a reduce-scatter right after qkv's backward,
  // whose input is dq Wq + dk Wk + dv Wv (three matmuls and their sum: no match for the pass).
  const size_t rs = qkv_input_grad_scatter(ks);
  REQUIRE(rs < ks.size());
  const std::vector<KernelTiming> t = kernel_timings(ks, mp);
  CHECK(t[rs].exposed_s == doctest::Approx(t[rs].total_s));
  // Transformer Engine's userbuffers hide it behind that GEMM (the same kernel in its list).
  const std::vector<Kernel>& uks = ub.layer->backward;
  const std::vector<KernelTiming> u = kernel_timings(uks, ub);
  const size_t urs = qkv_input_grad_scatter(uks);
  REQUIRE(urs < uks.size());
  CHECK(u[urs].exposed_s < u[urs].total_s);
  // Without SP the all-reduces are no match either: nothing hidden.
  const Plan ar = tp_plan(false, true, TpOverlap::kMicroPipeline);
  const std::vector<KernelTiming> a = kernel_timings(ar.layer->forward, ar);
  for (size_t i = 0; i < ar.layer->forward.size(); ++i) {
    if (ar.layer->forward[i].cls != OpClass::kCollective) continue;
    CAPTURE(i);
    CHECK(a[i].exposed_s == doctest::Approx(a[i].total_s));
  }
}

TEST_CASE("Megatron's asynchronous input-gradient all-reduce hides behind the weight gradient") {
  auto plan = [](bool sp, bool async) {
    Strategy s;
    s.tp = 4, s.global_batch = 32, s.micro_batch = 32, s.sequence_parallel = sp;
    s.async_tp_grad_reduce = async;
    return testing::lower_on_dgx_a100(testing::small_gpt(2), s, 4);
  };
  for (const bool sp : {false, true}) {
    CAPTURE(sp);
    const Plan off = plan(sp, false), on = plan(sp, true);
    const Block& b = *on.layer;
    const std::vector<Kernel>& ks = b.backward;
    // Without SP: f's all-reduce of the input gradient right after qkv's backward; with SP the
    // reduce-scatter there (the backward of the all-gather before qkv).
    size_t c = ks.size();
    for (size_t i = 1; i < ks.size(); ++i) {
      if (ks[i].cls == OpClass::kCollective && ks[i - 1].cls == OpClass::kMatmul &&
          b.graph.ops[ks[i - 1].first_op].name == "qkv") {
        c = i;
      }
    }
    REQUIRE(c < ks.size());
    CHECK(ks[c].comm == (sp ? CommKind::kReduceScatter : CommKind::kAllReduce));
    const std::vector<KernelTiming> t0 = kernel_timings(off.layer->backward, off);
    const std::vector<KernelTiming> t1 = kernel_timings(ks, on);
    CHECK(t0[c].exposed_s == doctest::Approx(t0[c].total_s));
    // By hand: the weight gradient is half of qkv's backward FLOP, so half its time W; the
    // all-reduce t adds max(t - W, (1 - 1/s) t).
    const double w = t1[c - 1].total_s / 2, total = t1[c].total_s;
    const double s = on.hardware.device.overlap_slowdown;
    CHECK(t1[c].exposed_s == doctest::Approx(std::max(total - w, (1 - 1 / s) * total)));
    CHECK(t1[c].exposed_s < total);
    // The forward collectives stay exposed.
    const std::vector<KernelTiming> f = kernel_timings(b.forward, on);
    for (size_t i = 0; i < b.forward.size(); ++i) {
      if (b.forward[i].cls == OpClass::kCollective) CHECK(f[i].exposed_s == doctest::Approx(f[i].total_s));
    }
  }
}

TEST_CASE("async TP: FP8 operands are cast once, before the fused op, not in every step") {
  // The same layer on DGX H100 in FP8 (tensorwise): the fused ops take cast operands
  // (symm_mem fused_all_gather_scaled_matmul / fused_scaled_matmul_reduce_scatter), so the
  // pair is casts + c + 3 max(c s, t / 3) with c the quarter GEMM without casts.
  Strategy st;
  st.tp = 4, st.global_batch = 32, st.micro_batch = 32, st.sequence_parallel = true;
  st.overlap_tp = true, st.tp_overlap = TpOverlap::kMicroPipeline;
  st.dtype = DType::kFp8;
  const Plan p = testing::lower_on("dgx_h100", testing::small_gpt(2), st, 4);
  const Block& b = *p.layer;
  const std::vector<Kernel>& ks = b.forward;
  const std::vector<KernelTiming> t = kernel_timings(ks, p);
  const size_t rs = index_of(ks, b, "tp_reduce1");
  const Kernel& gemm = ks[rs - 1];
  REQUIRE(gemm.fp8_eligible);
  const DeviceSpec& d = p.hardware.device;
  const double slowest = t[rs - 1].total_s / kernel_time(gemm, d, DType::kFp8).total_s;
  const KernelTime whole = kernel_time(gemm, d, DType::kFp8, AttentionKernel::kFlash2, slowest);
  REQUIRE(whole.cast_s > 0);
  Kernel step = gemm;
  step.gemm_m /= 4, step.matmul_flops /= 4, step.other_flops /= 4, step.bytes /= 4;
  const KernelTime part = kernel_time(step, d, DType::kFp8, AttentionKernel::kFlash2, slowest);
  const double c = part.total_s - part.cast_s;
  const double s = d.overlap_slowdown, comm = t[rs].total_s;
  CHECK(t[rs].exposed_s == doctest::Approx(std::max(0.0, whole.cast_s + c + 3 * std::max(c * s, comm / 3) - whole.total_s)));
  // Charging the weight's cast in each of the 4 steps would cost 3 more casts of it.
  CHECK(part.cast_s > 0.5 * whole.cast_s);
}

TEST_CASE("async TP: the fused reduce-scatter sums the tp partials with a reduction kernel of its own") {
  const Plan mp = tp_plan(true, true, TpOverlap::kMicroPipeline);
  const Block& b = *mp.layer;
  // n = 32 x 512 = 16384 tokens, h = 1024, 2 B: the stacked partials n h e = 32 MiB read,
  // the rank's shard n/4 h e = 8 MiB written; one per row-parallel layer, forward only.
  int sums = 0;
  for (const Kernel& k : b.forward) {
    if (b.graph.ops[k.first_op].name != "tp_rs_reduce") continue;
    ++sums;
    CHECK(k.bytes == doctest::Approx(16384.0 * 1024 * 2 * (1 + 0.25)));
  }
  CHECK(sums == 2);
  for (const Kernel& k : b.backward) CHECK(b.graph.ops[k.first_op].name != "tp_rs_reduce");
  // NCCL's reduce-scatter reduces inside its own kernel: no such op without the micro-pipeline.
  const Plan plain = tp_plan(true, true, TpOverlap::kUserbuffers);
  for (const Kernel& k : plain.layer->forward) CHECK(plain.layer->graph.ops[k.first_op].name != "tp_rs_reduce");
}

TEST_CASE("async TP: tp_overlap is read and written back") {
  const Json j = parse_json_text(
      R"({"global_batch": 8, "tp": 2, "overlap_tp": true, "tp_overlap": "micro_pipeline",
          "async_tp_grad_reduce": true})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.tp_overlap == TpOverlap::kMicroPipeline);
  CHECK(s.async_tp_grad_reduce);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  const Json odd = parse_json_text(R"({"global_batch": 8, "tp_overlap": "flux"})", "s.json");
  CHECK_THROWS_WITH_AS(read_strategy(JsonNode(odd, "s.json", "strategy")),
                       doctest::Contains("s.json: strategy.tp_overlap: \"flux\""), InputError);
}

}  // namespace stratasim
