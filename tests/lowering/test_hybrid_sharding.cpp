// Hybrid sharding (HSDP, issue 15): ZeRO/FSDP states sharded over a shard group smaller than the
// data-parallel group and replicated across the groups, worked out on the small GPT of
// tests/support (4 layers, hidden 1024, 16 heads, seq 512, vocab 32000).
#include <doctest/doctest.h>

#include <algorithm>

#include "sim/cost/memory_model.h"
#include "strategies/lowering/lower.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Strategy zero3(int shard_group, int global_batch) {
  Strategy s;
  s.zero_stage = 3, s.shard_group = shard_group, s.global_batch = global_batch;
  fusion_preset("all", &s.fusion);
  return s;
}

std::vector<IterOp> ops_of(const StepProgram& step, IterOpKind kind) {
  std::vector<IterOp> out;
  for (const IterOp& op : step.ops) {
    if (op.kind == kind) out.push_back(op);
  }
  return out;
}

}  // namespace

TEST_CASE("hsdp: states per device with shard group g equal ZeRO-3 over g ranks") {
  const ModelSpec m = testing::small_gpt(4);
  // 16 devices in 4 shard groups of 4, against 4 devices of plain ZeRO-3; the same micro-batch
  // per device (global batch 16 vs 4).
  const Plan hsdp = testing::lower_on_dgx_a100(m, zero3(4, 16), 16);
  const Plan zero = testing::lower_on_dgx_a100(m, zero3(0, 4), 4);
  CHECK(hsdp.dp == 16);
  CHECK(hsdp.shard == 4);
  CHECK(hsdp.replicas() == 4);
  const MemoryBreakdown a = rank_memory(hsdp, {1})[0], b = rank_memory(zero, {1})[0];
  CHECK(a.weights_B == doctest::Approx(b.weights_B));
  CHECK(a.gradients_B == doctest::Approx(b.gradients_B));
  CHECK(a.optimizer_B == doctest::Approx(b.optimizer_B));
  CHECK(a.activations_B == doctest::Approx(b.activations_B));
  // And 4x what full sharding over 16 holds of the optimizer states.
  const Plan full = testing::lower_on_dgx_a100(m, zero3(0, 16), 16);
  CHECK(a.optimizer_B == doctest::Approx(4 * rank_memory(full, {1})[0].optimizer_B));
}

TEST_CASE("hsdp: gathers and reduce-scatters inside the shard group, an all-reduce across replicas") {
  const Plan p = testing::lower_on_dgx_a100(testing::small_gpt(4), zero3(4, 16), 16);
  // Shard groups are 4 consecutive dp ranks (one node of 8 holds 2 of them); replicas 4 apart,
  // 2 per node.
  CHECK(p.shard_group.size == 4);
  CHECK(p.shard_group.ranks_per_node == 4);
  CHECK(p.replica_group.size == 4);
  CHECK(p.replica_group.ranks_per_node == 2);
  const StageProgram& st = p.iteration.stages[0];
  const double params = p.stages[0].params;
  for (const IterOp& op : ops_of(st.forward, IterOpKind::kZeroGather)) CHECK(op.group == GroupKind::kShard);
  const std::vector<IterOp> reduce = ops_of(st.backward, IterOpKind::kZeroReduceScatter);
  REQUIRE(reduce.size() == 2);
  CHECK(reduce[0].group == GroupKind::kShard);
  CHECK(reduce[0].comm == CommKind::kReduceScatter);
  CHECK(reduce[0].bytes == doctest::Approx(params * 2));  // bf16 gradients of the stage
  CHECK(reduce[1].group == GroupKind::kReplica);
  CHECK(reduce[1].comm == CommKind::kAllReduce);
  CHECK(reduce[1].bytes == doctest::Approx(params * 2 / 4));  // this rank's shard of them
  // Without hybrid sharding the same ops span the whole data-parallel group.
  const Plan flat = testing::lower_on_dgx_a100(testing::small_gpt(4), zero3(0, 16), 16);
  const std::vector<IterOp> flat_reduce = ops_of(flat.iteration.stages[0].backward, IterOpKind::kZeroReduceScatter);
  REQUIRE(flat_reduce.size() == 1);
  CHECK(flat_reduce[0].group == GroupKind::kData);
}

TEST_CASE("hsdp: a shard group that does not divide the data-parallel ranks is refused") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 16;
  Expected<Plan> p = lower(testing::small_gpt(4), zero3(3, 16), hw);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().detail == "shard_group=3 does not divide the data-parallel ranks dp*cp=16");
  Strategy ddp = zero3(4, 16);
  ddp.zero_stage = 0;
  Expected<Plan> q = lower(testing::small_gpt(4), ddp, hw);
  REQUIRE_FALSE(q.has_value());
  CHECK(q.error().detail == "shard_group=4 shards ZeRO/FSDP states; zero_stage is 0");
}

// ZeRO-3 under pipeline parallelism as PyTorch's pipelining runs FSDP2 stages
// (Strategy::zero3_reshard): the stage's parameters stay gathered and its gradients whole, in
// the reduction dtype, from the first micro-batch to the last backward; one reduce-scatter and
// one gather per iteration. Worked on the small GPT (4 layers) over pp 2 x dp 4, 8 devices.
TEST_CASE("zero3 per iteration: a pp stage keeps its parameters gathered and gradients whole") {
  const ModelSpec m = testing::small_gpt(4);
  Strategy s = zero3(0, 16);
  s.pp = 2, s.grad_reduce_fp32 = true, s.overlap_dp = true;
  const Plan resident = testing::lower_on_dgx_a100(m, s, 8);  // auto: per iteration, pp > 1
  s.zero3_reshard = Zero3Reshard::kPerMicroBatch;
  const Plan per_mb = testing::lower_on_dgx_a100(m, s, 8);
  CHECK(resident.zero3_resident);
  CHECK(resident.zero_stage == 1);
  CHECK_FALSE(per_mb.zero3_resident);
  CHECK(per_mb.zero_stage == 3);
  REQUIRE(resident.dp == 4);
  const double params = resident.iteration.rank_params[0];  // stage 0 on one device
  const MemoryBreakdown a = rank_memory(resident, {1, 1})[0];
  const MemoryBreakdown b = rank_memory(per_mb, {1, 1})[0];
  // Whole bf16 parameters (2 B) and float32 gradients (4 B) of the stage; the optimizer's
  // float32 master and moments (12 B) stay sharded over the 4 dp ranks.
  CHECK(a.weights_B == doctest::Approx(2 * params));
  CHECK(a.gradients_B == doctest::Approx(4 * params));
  CHECK(a.optimizer_B == doctest::Approx(12 * params / 4));
  CHECK(b.gradients_B == doctest::Approx(4 * params / 4));
  CHECK(b.optimizer_B == doctest::Approx(a.optimizer_B));
  // No collective inside the micro-batch steps; the rank's tail reduce-scatters the float32
  // gradients (after the last backward, not beside it) and gathers the bf16 parameters.
  const StageProgram& st = resident.iteration.stages[0];
  CHECK(ops_of(st.forward, IterOpKind::kZeroGather).empty());
  CHECK(ops_of(st.backward, IterOpKind::kZeroGather).empty());
  CHECK(ops_of(st.backward, IterOpKind::kZeroReduceScatter).empty());
  CHECK_FALSE(ops_of(per_mb.iteration.stages[0].backward, IterOpKind::kZeroReduceScatter).empty());
  int reduces = 0, gathers = 0;
  for (const IterOp& op : resident.iteration.tail[0]) {
    if (op.kind == IterOpKind::kGradientReduce) {
      ++reduces;
      CHECK(op.comm == CommKind::kReduceScatter);
      CHECK(op.bytes == doctest::Approx(4 * params));
      CHECK_FALSE(op.overlaps_last_backward);
    }
    if (op.kind == IterOpKind::kParameterGather) {
      ++gathers;
      CHECK(op.bytes == doctest::Approx(2 * params));
    }
  }
  CHECK(reduces == 1);
  CHECK(gathers == 1);
  // Without pp, auto keeps ZeRO-3's per-micro-batch gathers.
  s.pp = 1, s.zero3_reshard = Zero3Reshard::kAuto;
  CHECK_FALSE(testing::lower_on_dgx_a100(m, s, 4).zero3_resident);
}
