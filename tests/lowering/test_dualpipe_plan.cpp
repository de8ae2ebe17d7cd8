// DualPipe lowered end to end (issue 13): two chains of pp stages over the same ranks in
// opposite directions, each holding the whole model (DeepSeek-V3 report, Sec. 3.2.1: "2x"
// parameters per rank). Worked on the small GPT of tests/support (8 layers, hidden 1024,
// seq 512, vocab 32000, tied embeddings) with pp = 4 and 8 micro-batches (4 per direction),
// checked against the 1F1B plan of the same model: DualPipe's rank r holds exactly 1F1B's
// stages r and pp - 1 - r.
#include <doctest/doctest.h>

#include <algorithm>

#include "sim/cost/memory_model.h"
#include "strategies/lowering/lower.h"
#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Strategy pipeline(ScheduleKind kind, int global_batch) {
  Strategy s;
  s.pp = 4, s.global_batch = global_batch, s.schedule = kind;
  fusion_preset("megatron", &s.fusion);
  return s;
}

bool has(const StepProgram& step, IterOpKind kind) {
  return std::any_of(step.ops.begin(), step.ops.end(),
                     [&](const IterOp& op) { return op.kind == kind; });
}

const IterOp* find(const std::vector<IterOp>& ops, IterOpKind kind) {
  for (const IterOp& op : ops) {
    if (op.kind == kind) return &op;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("dualpipe plan: virtual stage p + s holds stage s's layers on rank p - 1 - s") {
  const Plan d = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::kDualPipe, 8), 4);
  const Plan f = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::k1F1B, 8), 4);
  REQUIRE(d.stages.size() == 8);
  CHECK(d.chunks == 2);
  CHECK(d.micro_batches == 8);
  CHECK(d.micro_batches_per_stage() == 4);
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    const VirtualStage& forward = d.stages[s];
    const VirtualStage& reverse = d.stages[4 + s];
    CHECK(forward.rank == s);
    CHECK(reverse.rank == 3 - s);
    CHECK(forward.chunk == 0);
    CHECK(reverse.chunk == 1);
    // 8 layers over 4 positions: 2 each, the same split as 1F1B's.
    CHECK(forward.first_layer == 2 * s);
    CHECK(reverse.first_layer == 2 * s);
    CHECK(forward.layers == 2);
    CHECK(reverse.layers == 2);
    CHECK(forward.has_embedding == (s == 0));
    CHECK(reverse.has_embedding == (s == 0));
    CHECK(forward.has_head == (s == 3));
    CHECK(reverse.has_head == (s == 3));
    CHECK(forward.params == doctest::Approx(f.stages[s].params));
    CHECK(reverse.params == doctest::Approx(f.stages[s].params));
  }
  // Rank r: 1F1B's stages r and 3 - r.
  for (int r = 0; r < 4; ++r) {
    CHECK(d.iteration.rank_params[r] ==
          doctest::Approx(f.iteration.rank_params[r] + f.iteration.rank_params[3 - r]));
  }
}

TEST_CASE("dualpipe plan: no message crosses between the two chains, the reverse one flows down") {
  const Plan d = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::kDualPipe, 8), 4);
  const auto& st = d.iteration.stages;
  // Forward chain 0 -> 1 -> 2 -> 3 (ranks 0..3), reverse chain 4 -> 5 -> 6 -> 7 (ranks 3..0).
  CHECK(has(st[0].forward, IterOpKind::kSendActivation));
  CHECK_FALSE(has(st[3].forward, IterOpKind::kSendActivation));  // end of the forward chain
  CHECK_FALSE(has(st[4].backward, IterOpKind::kSendGradient));   // start of the reverse chain
  CHECK(has(st[4].forward, IterOpKind::kSendActivation));
  CHECK_FALSE(has(st[7].forward, IterOpKind::kSendActivation));
  CHECK(has(st[7].backward, IterOpKind::kSendGradient));
  CHECK_FALSE(has(st[0].backward, IterOpKind::kSendGradient));
  const StageMap map = d.stage_map();
  CHECK(map.next_stage(4) == 5);
  CHECK(map.rank_of(5) == 2);  // vs 4 on rank 3 sends to rank 2
  CHECK(map.next_stage(3) == -1);
  CHECK(map.prev_stage(4) == -1);
}

TEST_CASE("dualpipe plan: mirror ranks sum their gradients, tied embeddings need no sync of their own") {
  const Plan d = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::kDualPipe, 8), 4);
  const Plan f = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::k1F1B, 8), 4);
  CHECK(d.iteration.group(GroupKind::kPipelineMirror).size == 2);
  CHECK(d.iteration.group(GroupKind::kPipelineMirror).ranks_per_node == 2);  // 4 devices, 1 node
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const std::vector<IterOp>& tail = d.iteration.tail[r];
    const IterOp* mirror = find(tail, IterOpKind::kGradientReduce);
    REQUIRE(mirror != nullptr);
    CHECK(mirror->group == GroupKind::kPipelineMirror);
    CHECK(mirror->comm == CommKind::kAllReduce);
    // dp = 1, ZeRO 0: the whole rank's gradients, 2 bytes each (bf16).
    CHECK(mirror->bytes == doctest::Approx(2 * d.iteration.rank_params[r]));
    CHECK(find(tail, IterOpKind::kEmbeddingSync) == nullptr);
  }
  // 1F1B: the first and the last stage all-reduce the tied embedding's gradient instead.
  CHECK(find(f.iteration.tail[0], IterOpKind::kEmbeddingSync) != nullptr);
  CHECK(find(f.iteration.tail[0], IterOpKind::kGradientReduce) == nullptr);
}

TEST_CASE("dualpipe plan: memory holds both stages' states and p + 1 chunk activations") {
  const Plan d = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::kDualPipe, 8), 4);
  const Plan f = testing::lower_on_dgx_a100(testing::small_gpt(8), pipeline(ScheduleKind::k1F1B, 8), 4);
  const std::vector<int> in_flight = peak_in_flight(ScheduleKind::kDualPipe, 4, 8, 2);
  CHECK(*std::max_element(in_flight.begin(), in_flight.end()) == 5);  // PP + 1
  const std::vector<MemoryBreakdown> dm = rank_memory(d, in_flight);
  const std::vector<MemoryBreakdown> fm = rank_memory(f, {1, 1, 1, 1});
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(dm[r].weights_B == doctest::Approx(fm[r].weights_B + fm[3 - r].weights_B));
    CHECK(dm[r].optimizer_B == doctest::Approx(fm[r].optimizer_B + fm[3 - r].optimizer_B));
    // Each chunk's micro-batches hold their own stage's activations (rank r runs stage r and,
    // for the other direction, stage 7 - r: the embedding's and the head's on ranks 0 and 3):
    // the most the op order holds at once, walked here forward by forward.
    const double bytes[2] = {d.stages[r].activation_B, d.stages[7 - r].activation_B};
    const PipelineSchedule order = make_schedule(ScheduleKind::kDualPipe, 4, 8, 2);
    int held[2] = {0, 0};
    double peak = 0;
    for (const PipeOp& op : order.per_rank[r]) {
      if (op.kind == PipeOpKind::kForward) ++held[op.chunk];
      if (op.kind == (order.split_backward ? PipeOpKind::kWeight : PipeOpKind::kBackward)) --held[op.chunk];
      peak = std::max(peak, held[0] * bytes[0] + held[1] * bytes[1]);
    }
    CHECK(dm[r].activations_B == doctest::Approx(peak));
    // Equal stages (ranks 1 and 2): the peak count times one stage's, as before.
    if (r == 1 || r == 2) CHECK(dm[r].activations_B == doctest::Approx(in_flight[r] * bytes[0]));
  }
}

TEST_CASE("dualpipe plan: illegal shapes are named with the field to change") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 4;
  const ModelSpec m = testing::small_gpt(8);
  Expected<Plan> odd = lower(m, pipeline(ScheduleKind::kDualPipe, 9), hw);
  REQUIRE_FALSE(odd.has_value());
  CHECK(odd.error().detail ==
        "DualPipe feeds half the micro-batches from each end and needs an even number (m=9)");
  Expected<Plan> few = lower(m, pipeline(ScheduleKind::kDualPipe, 6), hw);
  REQUIRE_FALSE(few.has_value());
  CHECK(few.error().detail ==
        "DualPipe needs at least pp micro-batches in each direction, 2 pp in all (m=6, pp=4)");
  Strategy three = pipeline(ScheduleKind::kDualPipe, 9);
  three.pp = 3;
  hw.num_devices = 3;
  Expected<Plan> uneven = lower(testing::small_gpt(9), three, hw);
  REQUIRE_FALSE(uneven.has_value());
  CHECK(uneven.error().detail == "DualPipe needs an even pp (pp=3)");
  Strategy chunks = pipeline(ScheduleKind::kDualPipe, 8);
  chunks.interleave = 3;
  hw.num_devices = 4;
  Expected<Plan> v3 = lower(testing::small_gpt(24), chunks, hw);
  REQUIRE_FALSE(v3.has_value());
  CHECK(v3.error().detail ==
        "DualPipe runs 2 chunks per rank, one per direction; leave interleave at 1 (interleave=3)");
}

TEST_CASE("zb-v plan: a V of 2p stages, the turn and the loss stay on their ranks") {
  Strategy s = pipeline(ScheduleKind::kZeroBubbleV, 8);
  const Plan v = testing::lower_on_dgx_a100(testing::small_gpt(8), s, 4);
  REQUIRE(v.stages.size() == 8);
  CHECK(v.chunks == 2);
  CHECK(v.micro_batches_per_stage() == 8);
  for (int i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(v.stages[i].first_layer == i);  // 8 layers over 8 stages, in chain order
    CHECK(v.stages[i].layers == 1);
    CHECK(v.stages[i].rank == (i < 4 ? i : 7 - i));
  }
  CHECK(v.stages[0].has_embedding);
  CHECK(v.stages[7].has_head);  // both on rank 0
  const auto& st = v.iteration.stages;
  CHECK_FALSE(has(st[3].forward, IterOpKind::kSendActivation));  // stage 3 -> 4: rank 3 itself
  CHECK_FALSE(has(st[4].backward, IterOpKind::kSendGradient));
  CHECK(has(st[4].forward, IterOpKind::kSendActivation));  // 4 -> 5: rank 3 -> rank 2
  CHECK(has(st[2].forward, IterOpKind::kSendActivation));
  // Tied embeddings: embedding and head on one rank, no all-reduce between ranks.
  for (int r = 0; r < 4; ++r) CHECK(find(v.iteration.tail[r], IterOpKind::kEmbeddingSync) == nullptr);
  // Memory: 1F1B's, 2p chunk activations at rank 0 (p whole micro-batches).
  const std::vector<int> in_flight = peak_in_flight(ScheduleKind::kZeroBubbleV, 4, 8, 2);
  CHECK(in_flight[0] == 8);
}
