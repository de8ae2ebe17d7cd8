// Strategy::fp8_amax_reduction: Transformer Engine's delayed scaling all-reduces the rank's
// amaxes (MAX) at the end of every chunk's forward and of its backward, over the stage's
// tp x cp x dp ranks (Megatron-Core's get_amax_reduction_group; TE >= 1.6 all_reduce with
// async_op=False) or over the tensor-parallel ranks only, and the compute stream waits for it.
// Worked on a small GPT (hidden 1024, 4 layers) on one DGX H100 node (8 GPUs).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/json_reader.h"
#include "sim/cost/collective_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

// tp 2, dp 2, pp 2 with two chunks a rank (one layer each): 8 micro-batches of one sample.
Strategy delayed(Fp8AmaxReduction r, int pp = 2, int interleave = 2) {
  Strategy s;
  s.tp = 2, s.pp = pp, s.interleave = interleave;
  s.global_batch = 16, s.micro_batch = 1;
  s.dtype = DType::kFp8;
  s.fp8_scaling = Fp8Scaling::kDelayed;
  s.fp8_amax_reduction = r;
  if (interleave > 1) s.schedule = ScheduleKind::kInterleaved1F1B;
  return s;
}

Plan lowered(const Strategy& s, int devices = 8) {
  return testing::lower_on("dgx_h100", testing::small_gpt(4), s, devices);
}

// The amax reductions of one step, in program order.
std::vector<IterOp> amax_ops(const StepProgram& step) {
  std::vector<IterOp> out;
  for (const IterOp& op : step.ops) {
    if (op.kind == IterOpKind::kFp8AmaxReduce) out.push_back(op);
  }
  return out;
}

const CommStat* amax_stat(const Prediction& p) {
  for (const CommStat& c : p.comms) {
    if (c.category == CommCategory::kFp8Amax) return &c;
  }
  return nullptr;
}

Strategy read(const std::string& text) {
  return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
}

}  // namespace

TEST_CASE("fp8 amax reduction: read, written back only when not the stage, and only for delayed scaling") {
  const Strategy s = read(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "delayed",
                              "fp8_amax_reduction": "tensor"})");
  CHECK(s.fp8_amax_reduction == Fp8AmaxReduction::kTensor);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(to_json(s)["fp8_amax_reduction"] == "tensor");
  CHECK(read(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "delayed"})").fp8_amax_reduction ==
        Fp8AmaxReduction::kStage);
  CHECK_FALSE(to_json(delayed(Fp8AmaxReduction::kStage)).contains("fp8_amax_reduction"));

  std::string what = testing::input_error_message([] {
    read(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "current", "fp8_amax_reduction": "stage"})");
  });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.fp8_amax_reduction") != std::string::npos);
  CHECK(what.find("applies to Transformer Engine's delayed scaling only; set fp8_scaling to \"delayed\"") !=
        std::string::npos);
  what = testing::input_error_message([] {
    read(R"({"global_batch": 8, "dtype": "fp8", "fp8_scaling": "delayed", "fp8_amax_reduction": "dp"})");
  });
  CHECK(what.find("s.json: strategy.fp8_amax_reduction") != std::string::npos);
  CHECK(what.find("stage") != std::string::npos);
  CHECK(what.find("tensor") != std::string::npos);
}

TEST_CASE("fp8 amax reduction: one all-reduce after each chunk's forward and backward, the send after it") {
  const Plan p = lowered(delayed(Fp8AmaxReduction::kStage));
  // The stage: tp 2 x dp 2 = 4 consecutive ranks, one node.
  const CommGroup stage = p.iteration.group(GroupKind::kStage);
  CHECK(stage.size == 4);
  CHECK(stage.ranks_per_node == 4);
  // Rank 0 holds two chunks of one layer each: 2 layers x 4 FP8 GEMMs (qkv, the attention's
  // output projection, fc1, fc2), every module of the rank in each reduction (TE >= 1.6
  // registers a module once, for life): 8 x 3 amaxes x 4 B = 96 B forward, 8 x 2 x 4 B = 64 B
  // backward.
  for (int vs : {0, 2}) {  // rank 0's chunks
    CAPTURE(vs);
    const StageProgram& prog = p.iteration.stages[vs];
    const std::vector<IterOp> f = amax_ops(prog.forward), b = amax_ops(prog.backward);
    REQUIRE(f.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(f[0].bytes == doctest::Approx(96));
    CHECK(b[0].bytes == doctest::Approx(64));
    CHECK(f[0].group == GroupKind::kStage);
    CHECK(f[0].comm == CommKind::kAllReduce);
    CHECK(f[0].stream == Stream::kComm);
    // The forward's activation send waits for the reduction, which waits for the compute.
    const auto& ops = prog.forward.ops;
    const auto at = [&](IterOpKind k) {
      return static_cast<int>(std::find_if(ops.begin(), ops.end(), [&](const IterOp& o) { return o.kind == k; }) -
                              ops.begin());
    };
    CHECK(ops[at(IterOpKind::kFp8AmaxReduce)].deps[0] == at(IterOpKind::kForward));
    CHECK(ops[at(IterOpKind::kSendActivation)].deps[0] == at(IterOpKind::kFp8AmaxReduce));
  }
  // Recomputation enters no fp8_autocast region: still one reduction a backward.
  Strategy full = delayed(Fp8AmaxReduction::kStage);
  full.recompute = Recompute::kFull;
  CHECK(amax_ops(lowered(full).iteration.stages[0].backward).size() == 1);

  // The tensor-parallel variant spans the 2 TP ranks.
  CHECK(amax_ops(lowered(delayed(Fp8AmaxReduction::kTensor)).iteration.stages[0].forward)[0].group ==
        GroupKind::kTensor);
  // None: no reduction, and none for current scaling, bf16, inference or a single device.
  CHECK(amax_ops(lowered(delayed(Fp8AmaxReduction::kNone)).iteration.stages[0].forward).empty());
  Strategy current = delayed(Fp8AmaxReduction::kStage);
  current.fp8_scaling = Fp8Scaling::kCurrent;
  CHECK(amax_ops(lowered(current).iteration.stages[0].forward).empty());
  Strategy bf16 = delayed(Fp8AmaxReduction::kStage);
  bf16.dtype = DType::kBf16, bf16.fp8_scaling = Fp8Scaling::kTensorwise;
  CHECK(amax_ops(lowered(bf16).iteration.stages[0].forward).empty());
  Strategy inference = delayed(Fp8AmaxReduction::kStage, 1, 1);
  inference.workload = Workload::kInference;
  CHECK(amax_ops(lowered(inference).iteration.stages[0].forward).empty());
  Strategy alone = delayed(Fp8AmaxReduction::kStage, 1, 1);
  alone.tp = 1, alone.global_batch = 2;
  CHECK(amax_ops(lowered(alone, 1).iteration.stages[0].forward).empty());
}

TEST_CASE("fp8 amax reduction: latency-bound, exposed, and added to every step") {
  // One node: a 4-rank all-reduce of 96 or 64 B is a double binary tree at NVLink latency,
  // 2 log2(4) (alpha + 2 chunk/B) + 2 S/B ~ 4 alpha (the bytes add 0.4 ns of 450 GB/s; a
  // ring's 2 (n - 1) = 6 alphas are slower), after the cat of the amaxes and before the fused
  // scale update: two kernels of the device's fixed cost k. Rank 0 runs 8 micro-batches x 2
  // chunks x 2 directions = 32 of them.
  const Plan p = lowered(delayed(Fp8AmaxReduction::kStage));
  const double alpha = p.hardware.node.device_link.latency_s;
  const double k = p.hardware.device.kernel_overhead_s;
  REQUIRE(alpha > 0);
  REQUIRE(k > 0);
  const Prediction with = predict_analytical(p);
  const CommStat* c = amax_stat(with);
  REQUIRE(c != nullptr);
  CHECK(c->group_size == 4);
  CHECK(c->total_s == doctest::Approx(32 * (4 * alpha + 2 * k)).epsilon(0.01));
  CHECK(c->exposed_s == doctest::Approx(c->total_s));
  CHECK(c->bytes == doctest::Approx(8 * 2 * (96 + 64)));
  CHECK(amax_stat(predict_analytical(lowered(delayed(Fp8AmaxReduction::kNone)))) == nullptr);

  // Without pipelining every step is on the critical path: the iteration is longer by the
  // reductions, m x (t(192 B) + t(128 B) + 4 k) with m = 4 micro-batches. The gradient sync waits
  // for the last backward (overlap_dp off), so nothing hides them.
  Strategy one = delayed(Fp8AmaxReduction::kStage, 1, 1);
  one.overlap_dp = false;
  Strategy none = one;
  none.fp8_amax_reduction = Fp8AmaxReduction::kNone;
  const Plan flat = lowered(one);
  // dp 4 now: the stage is still tp 2 x dp 4 = 8 ranks; 4 layers x 4 GEMMs on the rank.
  CHECK(flat.iteration.group(GroupKind::kStage).size == 8);
  const double t = [&](double bytes) {
    return collective_time(CommKind::kAllReduce, bytes, flat.iteration.group(GroupKind::kStage),
                           flat.hardware, CollectiveAlgorithm::kAuto).time_s;
  }(16 * 12) + collective_time(CommKind::kAllReduce, 16 * 8, flat.iteration.group(GroupKind::kStage),
                               flat.hardware, CollectiveAlgorithm::kAuto).time_s;
  // 8 ranks: 2 log2(8) = 6 alphas each way.
  CHECK(t == doctest::Approx(2 * 6 * alpha).epsilon(0.01));
  const double per_micro_batch = t + 2 * 2 * k;  // each reduction's cat and scale update
  const double m = flat.micro_batches;
  CHECK(m == 4);
  CHECK(predict_analytical(flat).iteration_s - predict_analytical(lowered(none)).iteration_s ==
        doctest::Approx(m * per_micro_batch).epsilon(1e-6));

  // The TP-only variant over the 2 TP ranks: 2 log2(2) = 2 alphas a reduction.
  Strategy tensor = one;
  tensor.fp8_amax_reduction = Fp8AmaxReduction::kTensor;
  const Prediction tensor_only = predict_analytical(lowered(tensor));
  const CommStat* tp = amax_stat(tensor_only);
  REQUIRE(tp != nullptr);
  CHECK(tp->group_size == 2);
  CHECK(tp->total_s == doctest::Approx(m * 2 * (2 * alpha + 2 * k)).epsilon(0.01));
}

}  // namespace stratasim
