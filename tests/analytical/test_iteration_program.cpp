// The iteration program (strategies/lowering/iteration.h): which ops each strategy implies,
// worked out by hand, and their closed-form timing in the analytical engine.
#include <doctest/doctest.h>

#include <algorithm>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/stage_costs.h"
#include "sim/cost/step_timing.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

// GPT-style decoder, 8 layers of hidden 1024, 16 heads, seq 512, vocab 32000 (tied).
Plan lowered(const Strategy& s, int devices) {
  return testing::lower_on_dgx_a100(testing::small_gpt(8), s, devices);
}

Strategy strategy(int tp, int pp, int zero, bool overlap_dp, int gb = 8) {
  Strategy s;
  s.tp = tp, s.pp = pp, s.zero_stage = zero, s.overlap_dp = overlap_dp;
  s.micro_batch = 1, s.global_batch = gb;
  // These cases work out ZeRO-3's per-micro-batch gathers, also under pp (where its default
  // gathers once per iteration).
  s.zero3_reshard = Zero3Reshard::kPerMicroBatch;
  fusion_preset("megatron", &s.fusion);
  return s;
}

std::vector<IterOpKind> kinds(const std::vector<IterOp>& ops) {
  std::vector<IterOpKind> k;
  for (const IterOp& op : ops) k.push_back(op.kind);
  return k;
}

}  // namespace

TEST_CASE("iteration program: ZeRO-3 with prefetch gathers the first layer, then the rest beside the compute") {
  // pp 2 over 8 devices, dp 4: stage 0 holds layers 0-3 (+ embedding), one gather per layer.
  const Plan plan = lowered(strategy(1, 2, 3, true), 8);
  const StepProgram& f = plan.iteration.stages[0].forward;
  using K = IterOpKind;
  CHECK(kinds(f.ops) == std::vector<K>{K::kZeroGather, K::kZeroGather, K::kForward,
                                       K::kSendActivation});
  // The embedding is FSDP's root unit: gathered with the first layer before the forward.
  const double e = plan.weight_bytes_per_param;
  const double layer = plan.layer->params, embedding = plan.embedding->params;
  CHECK(plan.stages[0].params == doctest::Approx(4 * layer + embedding));
  CHECK(f.ops[0].bytes == doctest::Approx((embedding + layer) * e));
  CHECK(f.ops[0].repeats == 1);
  CHECK(f.ops[1].bytes == doctest::Approx(3 * layer * e));
  CHECK(f.ops[1].repeats == 3);
  // The backward re-gathers the layers only: the root stays gathered from its forward.
  const StepProgram& b0 = plan.iteration.stages[0].backward;
  CHECK(b0.ops[0].bytes == doctest::Approx(layer * e));
  CHECK(b0.ops[1].bytes == doctest::Approx(3 * layer * e));
  // Its reduce-scatter: layers 3..1 beside the backward, then layer 0 with the embedding,
  // whose gradient is the last one done.
  const double ge = plan.grad_bytes_per_param;
  REQUIRE(b0.ops[3].kind == IterOpKind::kZeroReduceScatter);
  CHECK(b0.ops[3].bytes == doctest::Approx(3 * layer * ge));
  CHECK(b0.ops[4].bytes == doctest::Approx((embedding + layer) * ge));
  CHECK(f.ops[2].deps[0] == 0);  // the compute waits for the first layer's gather only
  CHECK(f.ops[3].blocking);      // Megatron's p2p blocks the sender
  // Backward of the last stage: gathers, recompute-free backward, then the reduce-scatter of
  // layers 1.. beside the compute and the first layer's after it, then the gradient send.
  const StepProgram& b = plan.iteration.stages[1].backward;
  CHECK(kinds(b.ops) == std::vector<K>{K::kZeroGather, K::kZeroGather, K::kBackward,
                                       K::kZeroReduceScatter, K::kZeroReduceScatter,
                                       K::kSendGradient});
  CHECK(b.ops[4].deps[0] == 2);
  // ZeRO-3 reduces every micro-batch: no gradient bucket, no parameter gather at the end.
  for (const auto& tail : plan.iteration.tail) {
    for (const IterOp& op : tail) {
      CHECK(op.kind != K::kGradientReduce);
      CHECK(op.kind != K::kParameterGather);
    }
  }
}

TEST_CASE("iteration program: the step timing is the prefetch closed form G1 + max(C', G_rest)") {
  // One stage of L = 4 layers (and the embedding, FSDP's root unit), gathers G: with prefetch
  // the forward takes G1 + max(C', G_rest), G1 the first layer's and the root's gather, G_rest
  // the other three layers', where the compute beside them is slowed (s = overlap_slowdown: it
  // runs at 1/s while they run): C' = C + min((s-1) C, (1-1/s) G_rest). Without prefetch: G + C.
  const Plan plan = lowered(strategy(1, 2, 3, true), 8);
  const StepProgram& f = plan.iteration.stages[0].forward;
  const double g_first = comm_op_s(f.ops[0], plan), g_rest = comm_op_s(f.ops[1], plan);
  const double g = g_first + g_rest;
  // The first gather moves the embedding (the root unit) with layer 0; the rest are three
  // equal gathers of one layer each, timed here from the collective model directly.
  const double e = plan.weight_bytes_per_param;
  CHECK(f.ops[0].bytes == doctest::Approx((plan.embedding->params + plan.layer->params) * e));
  const double one_layer = collective_time(CommKind::kAllGather, plan.layer->params * e,
                                           plan.iteration.group(f.ops[1].group), plan.hardware,
                                           f.ops[1].algorithm).time_s;
  CHECK(g_rest == doctest::Approx(3 * one_layer));
  CHECK(g_first > one_layer);
  const double s = plan.hardware.device.overlap_slowdown;
  REQUIRE(s > 1);
  for (const double c : {g / 10, g, 10 * g}) {
    const StepTiming t = time_step(f, ComputeDurations{c, 0, 0}, plan);
    CAPTURE(c);
    const double slowed = c + std::min((s - 1) * c, (1 - 1 / s) * g_rest);
    CHECK(t.span_s == doctest::Approx(g_first + std::max(slowed, g_rest)));
    CHECK(t.compute_s == doctest::Approx(c));
    CHECK(t.zero_total_s == doctest::Approx(g));
    // The blocking send starts when the step is over and ends one transfer later.
    CHECK(t.send_end_s == doctest::Approx(t.span_s + comm_op_s(f.ops[3], plan)));
  }
  const Plan serial = lowered(strategy(1, 2, 3, false), 8);
  const StepProgram& fs = serial.iteration.stages[0].forward;
  REQUIRE(fs.ops.size() == 3);
  const double gs = comm_op_s(fs.ops[0], serial);
  CHECK(gs == doctest::Approx(g));
  CHECK(time_step(fs, ComputeDurations{1e-3, 0, 0}, serial).span_s ==
        doctest::Approx(gs + 1e-3));
}

TEST_CASE("iteration program: DDP gradient buckets and the tied-embedding sync per rank") {
  // dp 4, pp 2, ZeRO 0: each rank all-reduces its gradients in ceil(grads / 40M params) buckets.
  Strategy s = strategy(1, 2, 0, true);
  s.dp_bucket_B = 4e6;  // 4 MB buckets: several per rank
  const Plan plan = lowered(s, 8);
  for (int r = 0; r < 2; ++r) {
    const std::vector<IterOp>& tail = plan.iteration.tail[r];
    REQUIRE(tail.size() == 3);  // bucketed all-reduce, embedding sync, optimizer step
    const double grads = plan.iteration.rank_params[r] * 2;  // bf16 gradients
    CHECK(tail[0].kind == IterOpKind::kGradientReduce);
    CHECK(tail[0].comm == CommKind::kAllReduce);
    CHECK(tail[0].bytes == doctest::Approx(grads));
    CHECK(tail[0].repeats == static_cast<int>(std::ceil(grads / 4e6)));
    CHECK(tail[0].overlaps_last_backward);
    // Tied embeddings with pp > 1: the first and the last stage all-reduce V h / tp gradients.
    CHECK(tail[1].kind == IterOpKind::kEmbeddingSync);
    CHECK(tail[1].bytes == doctest::Approx(32000.0 * 1024 * 2));
    CHECK(tail[1].algorithm == CollectiveAlgorithm::kRing);
    // Adam, mixed precision: 2 x 12 B of states + 2 B gradient + 2 B weight per parameter.
    CHECK(tail[2].kind == IterOpKind::kOptimizerStep);
    CHECK(tail[2].bytes == doctest::Approx(plan.iteration.rank_params[r] * 28));
  }
  // The buckets' limits: B buckets of time t over a last backward L. Buckets that keep the
  // comm stream busy from the first one on (L = 0: all ready at once; L = t: the first ready at
  // t/B, the rest queue) end at L/B + B t; sparse ones (L = 100 B t) stretch the backward by
  // d = (1 - 1/s)(B - 1) t and leave d + t exposed.
  const IterOp& op = plan.iteration.tail[0][0];
  const int buckets = op.repeats;
  const double t = comm_op_s(op, plan) / buckets;
  CHECK(t == doctest::Approx(collective_time(CommKind::kAllReduce, op.bytes / buckets,
                                             plan.dp_group, plan.hardware, s.collective)
                                 .time_s));
  const double slow = plan.hardware.device.overlap_slowdown;
  for (const double last : {0.0, t}) {
    const BucketedReduce r = bucketed_reduce(op, plan, last);
    CAPTURE(last);
    CHECK(r.total_s == doctest::Approx(buckets * t));
    CHECK(r.exposed_s == doctest::Approx(last / buckets + buckets * t - last));
    CHECK(r.stretch_s == doctest::Approx(std::min((slow - 1) * last * (buckets - 1) / buckets,
                                                  (1 - 1 / slow) * (buckets - 1) * t)));
  }
  const BucketedReduce sparse = bucketed_reduce(op, plan, 100 * t * buckets);
  const double d = (1 - 1 / slow) * (buckets - 1) * t;
  CHECK(sparse.stretch_s == doctest::Approx(d));
  CHECK(sparse.exposed_s == doctest::Approx(d + t));
  // ZeRO-1: reduce-scatter, then the gather of the updated shards.
  const Plan z1 = lowered(strategy(1, 2, 1, false), 8);
  using K = IterOpKind;
  CHECK(kinds(z1.iteration.tail[0]) ==
        std::vector<K>{K::kGradientReduce, K::kParameterGather, K::kEmbeddingSync,
                       K::kOptimizerStep});
  CHECK(z1.iteration.tail[0][0].comm == CommKind::kReduceScatter);
  CHECK_FALSE(z1.iteration.tail[0][0].overlaps_last_backward);
  // The optimizer step of ZeRO >= 1 updates a 1/dp shard.
  CHECK(z1.iteration.tail[0][3].bytes == doctest::Approx(z1.iteration.rank_params[0] * 28 / 4));
}

TEST_CASE("iteration program: the analytical engine's end of iteration is the tail's cost") {
  // One rank (pp 1, dp 8), no overlap: iteration = pipeline + B t + optimizer pass.
  Strategy s = strategy(1, 1, 0, false);
  const Plan plan = lowered(s, 8);
  const Prediction p = predict_analytical(plan);
  const std::vector<IterOp>& tail = plan.iteration.tail[0];
  REQUIRE(tail.size() == 2);
  const double reduce = comm_op_s(tail[0], plan);
  const double step = memory_pass_s(plan.hardware.device, tail[1].bytes);
  CHECK(p.iteration_s == doctest::Approx(p.pipeline_s + reduce + step));
  CHECK(p.optimizer_s == doctest::Approx(step));
}

TEST_CASE("ZeRO with dp = 1 carries a warning in the prediction's notes") {
  Strategy s = strategy(8, 1, 2, false);  // tp 8 on 8 devices: dp = 1
  const Plan plan = lowered(s, 8);
  REQUIRE(plan.dp == 1);
  const Prediction p = predict_analytical(plan);
  bool warned = false;
  for (const std::string& n : p.notes) {
    warned |= n == "warning: ZeRO stage 2 with dp = 1 shards nothing (ZeRO shards over the "
                   "data-parallel group); its memory and communication are those of stage 0";
  }
  CHECK(warned);
}

TEST_CASE("iteration program: the ZeRO row reports the bytes its collectives move") {
  // pp 2, dp 4, global batch 8: m = 2 micro-batches. Rank 0 (stage 0) gathers its weights W in
  // the forward, its layers' weights L again in the backward (the embedding, FSDP's root unit,
  // stays gathered) and reduce-scatters its gradients G each micro-batch: m (W + L + G) bytes
  // of collective buffers per device.
  const Plan plan = lowered(strategy(1, 2, 3, true), 8);
  const Prediction p = predict_analytical(plan);
  const double w = plan.stages[0].params * plan.weight_bytes_per_param;
  const double l = (plan.stages[0].params - plan.embedding->params) * plan.weight_bytes_per_param;
  const double g = plan.stages[0].params * plan.grad_bytes_per_param;
  const auto zero = std::find_if(p.comms.begin(), p.comms.end(),
                                 [](const CommStat& c) { return c.category == CommCategory::kZero; });
  REQUIRE(zero != p.comms.end());
  CHECK(std::string(zero->what) == "zero per-micro-batch collectives");
  CHECK(zero->bytes == doctest::Approx(2 * (w + l + g)));
}
