// Context parallelism (issue 15): the sequence split over cp ranks with ring attention, worked
// out by hand on a small GQA decoder.
#include <doctest/doctest.h>

#include <algorithm>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/collective_cost.h"
#include "sim/core/json_reader.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

using namespace stratasim;
using testing::kernel;

namespace {

// 4 layers, hidden 1024, 16 heads of 64 with 4 K/V heads (kv = 256), seq 512, vocab 32000.
ModelSpec gqa_model() {
  ModelSpec m = testing::small_gpt(4);
  m.transformer.kv_heads = 4;
  return m;
}

Strategy cp_strategy(int tp, int cp) {
  Strategy s;
  s.tp = tp, s.cp = cp, s.global_batch = 8, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);  // flash attention
  return s;
}

}  // namespace

TEST_CASE("context parallel: tokens, ranks and groups of tp 2 x cp 4 on 16 A100") {
  const Plan p = testing::lower_on_dgx_a100(gqa_model(), cp_strategy(2, 4), 16);
  // 16 devices = tp 2 x cp 4 x dp 2. Gradients are shared by dp x cp = 8 ranks; micro-batches
  // come from the 2 data replicas: 8 / (1 x 2) = 4.
  CHECK(p.cp == 4);
  CHECK(p.dp == 8);
  CHECK(p.data_parallel() == 2);
  CHECK(p.micro_batches == 4);
  CHECK(p.dp_group.size == 8);
  // Rank order tp, cp: the 4 cp ranks sit 2 apart, all in one 8-GPU node.
  CHECK(p.cp_group.size == 4);
  CHECK(p.cp_group.ranks_per_node == 4);
  // Each rank holds 512 / 4 = 128 tokens: the qkv GEMM has 128 rows.
  const Kernel& qkv = kernel(p.layer->forward, *p.layer, "qkv");
  CHECK(qkv.gemm_m == 128);
  // The activation sent between pipeline stages would be 128 x 1024 x 2 B / tp 2.
  CHECK(p.p2p_bytes == doctest::Approx(128.0 * 1024 * 2 / 2));
}

TEST_CASE("context parallel: ring attention moves K and V around the cp ring, twice in the backward") {
  const Plan one = testing::lower_on_dgx_a100(gqa_model(), cp_strategy(2, 1), 4);
  const Plan p = testing::lower_on_dgx_a100(gqa_model(), cp_strategy(2, 4), 16);
  const Block& b = *p.layer;
  // K and V of the whole sequence on one tp rank: 2 x (1 x 512 tokens) x 256 / 2 x 2 B.
  const double kv = 2.0 * 512 * 256 / 2 * 2;  // 262,144 B
  const Kernel& f = kernel(b.forward, b, "cp_ring_kv");
  CHECK(f.cls == OpClass::kCollective);
  CHECK(f.comm == CommKind::kAllGather);  // each rank receives (cp - 1)/cp of it: 196,608 B
  CHECK(f.group == GroupKind::kContext);
  CHECK(f.comm_bytes == doctest::Approx(kv));
  const Kernel& back = kernel(b.backward, b, "cp_ring_kv");
  CHECK(back.comm == CommKind::kReduceScatter);  // K, V again and the dK, dV partial sums
  CHECK(back.comm_bytes == doctest::Approx(2 * kv));
  CHECK(kernel(one.layer->forward, *one.layer, "flash_attention").matmul_flops ==
        doctest::Approx(4 * kernel(b.forward, b, "flash_attention").matmul_flops));
  // One attention kernel per arriving block.
  CHECK(kernel(b.forward, b, "flash_attention").launches == 4);
  // Saved activations scale with the tokens a rank holds.
  CHECK(p.layer->saved_activation_B == doctest::Approx(one.layer->saved_activation_B / 4));
}

TEST_CASE("context parallel: the exchange hides behind the attention unless it is longer") {
  // Inside one node the exchange is far shorter than the attention beside it: only the
  // interference (1 - 1/s of it, s the device's overlap slowdown) shows. Across nodes on a
  // 100 MB/s network it is longer: what exceeds the attention is exposed.
  auto exposed = [](HardwareModel hw, int devices) {
    hw.num_devices = devices;
    Expected<Plan> lowered = lower(gqa_model(), cp_strategy(1, 8), hw);
    REQUIRE(lowered.has_value());
    const Plan& p = *lowered;
    const std::vector<KernelTiming> t = kernel_timings(p.layer->forward, p);
    size_t ring = 0, fa = 0;
    for (size_t i = 0; i < p.layer->forward.size(); ++i) {
      const std::string_view name = p.layer->graph.ops[p.layer->forward[i].first_op].name;
      if (name == "cp_ring_kv") ring = i;
      if (name == "flash_attention") fa = i;
    }
    CHECK(fa == ring + 1);
    const double s = p.hardware.device.overlap_slowdown;
    const double expected = std::max(t[ring].total_s - t[fa].total_s, (1 - 1 / s) * t[ring].total_s);
    CHECK(t[ring].exposed_s == doctest::Approx(expected));
    return std::pair{t[ring].total_s, t[fa].total_s};
  };
  const auto [fast, attention] = exposed(catalog_cluster("dgx_a100"), 8);
  CHECK(fast < attention);
  HardwareModel slow = catalog_cluster("dgx_a100");
  slow.node.devices = 1;  // one GPU per node with one 100 MB/s NIC: the ring crosses it
  slow.node.nics = 1;
  slow.node.nic.bandwidth_Bps = 1e8;
  const auto [crossing, attention2] = exposed(slow, 8);
  CHECK(crossing > attention2);
}

TEST_CASE("context parallel: what it needs is said with the rule") {
  Strategy s = cp_strategy(1, 3);  // 2 x 3 = 6 does not divide 512
  Expected<Plan> p = lower(gqa_model(), s, [] {
    HardwareModel hw = catalog_cluster("dgx_a100");
    hw.num_devices = 6;
    return hw;
  }());
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().reason == InfeasibleReason::kContextParallel);
  CHECK(p.error().detail == "2*cp=6 does not divide seq_len=512 (load-balanced causal chunks)");
  CHECK(p.error().field == "cp");
  s = cp_strategy(1, 2);
  s.fusion.flash_attention = false;
  Expected<Plan> q = lower(gqa_model(), s, catalog_cluster("dgx_a100"));
  REQUIRE_FALSE(q.has_value());
  CHECK(q.error().detail ==
        "context parallelism runs ring attention on FlashAttention kernels; set fusion.flash_attention");
  s = cp_strategy(1, 4);  // 8 devices: tp 1 x cp 4 x dp 2, and the device count names cp
  s.dp = 4;
  Expected<Plan> r = lower(gqa_model(), s, catalog_cluster("dgx_a100"));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().detail == "tp*pp*cp*dp=1*1*4*4=16 differs from devices=8");
}

TEST_CASE("context parallel: Ulysses trades the sequence split for a head split with two all-to-alls") {
  // 16 heads of 64 with 8 K/V heads (kv = 512), tp 2 x cp 4 (a2a): each rank holds 128
  // tokens of q (1024 / 2 wide) and of k and v (512 / 2 each): 128 x (512 + 512) x 2 B =
  // 262,144 B go through the all-to-all before the attention (3/4 of them leave the rank),
  // 128 x 512 x 2 B = 131,072 B after it; the backward mirrors both.
  ModelSpec m = gqa_model();
  m.transformer.kv_heads = 8;
  Strategy s = cp_strategy(2, 4);
  s.cp_comm = CpComm::kAllToAll;
  const Plan p = testing::lower_on_dgx_a100(m, s, 16);
  const Block& b = *p.layer;
  const Kernel& in = kernel(b.forward, b, "cp_a2a_qkv");
  const Kernel& out = kernel(b.forward, b, "cp_a2a_out");
  CHECK(in.comm == CommKind::kAllToAll);
  CHECK(in.group == GroupKind::kContext);
  CHECK(in.comm_bytes == doctest::Approx(128.0 * (512 + 512) * 2));
  CHECK(out.comm_bytes == doctest::Approx(128.0 * 512 * 2));
  CHECK(kernel(b.backward, b, "cp_a2a_qkv").comm == CommKind::kAllToAll);
  CHECK_FALSE(in.overlaps_attention);  // on the critical path: all of it is exposed
  const std::vector<KernelTiming> t = kernel_timings(b.forward, p);
  for (size_t i = 0; i < b.forward.size(); ++i) {
    if (b.forward[i].group == GroupKind::kContext) CHECK(t[i].exposed_s == t[i].total_s);
  }
  // The attention runs whole on its heads: one launch, the same FLOPs as the ring's four.
  const Plan ring = testing::lower_on_dgx_a100(m, cp_strategy(2, 4), 16);
  CHECK(kernel(b.forward, b, "flash_attention").launches == 1);
  CHECK(kernel(b.forward, b, "flash_attention").matmul_flops ==
        doctest::Approx(kernel(ring.layer->forward, *ring.layer, "flash_attention").matmul_flops));
  // With 4 K/V heads, tp 2 x cp 4 = 8 ranks cannot each take whole K/V heads.
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 16;
  Expected<Plan> bad = lower(gqa_model(), s, hw);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "Ulysses (cp_comm a2a) splits heads over tp*cp=8, which must divide heads=16 and kv_heads=4");
  CHECK(bad.error().field == "cp_comm");
}

TEST_CASE("context parallel: all-gather (Llama 3 and Transformer Engine all_gather) gathers K and V on the critical path") {
  // Llama 3 Herd (Dubey et al. 2024) Sec. 3.3.2; Transformer Engine's
  // AttnFuncWithCPAndKVAllGather. tp 2 x cp 4 on the GQA model: the whole sequence's K and V on
  // one tp rank, 2 x 512 tokens x 256 / 2 x 2 B = 262,144 B, gathered before the attention
  // (3/4 of it from the other ranks) and exposed in full; the backward gathers them again and
  // reduce-scatters dK, dV: 524,288 B on the wire, as the ring's backward.
  Strategy s = cp_strategy(2, 4);
  s.cp_comm = CpComm::kAllGather;
  const Plan p = testing::lower_on_dgx_a100(gqa_model(), s, 16);
  const Plan ring = testing::lower_on_dgx_a100(gqa_model(), cp_strategy(2, 4), 16);
  const Block& b = *p.layer;
  const double kv = 2.0 * 512 * 256 / 2 * 2;
  const Kernel& f = kernel(b.forward, b, "cp_kv_all_gather");
  CHECK(f.comm == CommKind::kAllGather);
  CHECK(f.group == GroupKind::kContext);
  CHECK(f.comm_bytes == doctest::Approx(kv));
  CHECK_FALSE(f.overlaps_attention);
  CHECK(kernel(b.backward, b, "cp_kv_all_gather").comm_bytes == doctest::Approx(2 * kv));
  const std::vector<KernelTiming> t = kernel_timings(b.forward, p);
  for (size_t i = 0; i < b.forward.size(); ++i) {
    if (b.forward[i].group == GroupKind::kContext) CHECK(t[i].exposed_s == t[i].total_s);
  }
  // The gathered chunks reordered into sequence order: K and V read and written once (2 kv)
  // forward; backward 8 kv (reorder again, zero dK dV, add the chunks' gradients, reorder back).
  const Kernel& reorder = kernel(b.forward, b, "cp_kv_reorder");
  CHECK(reorder.bytes == doctest::Approx(2 * kv));
  CHECK(kernel(b.backward, b, "cp_kv_reorder").bytes == doctest::Approx(8 * kv));
  // The same attention FLOPs as the ring's, in two launches (one per local chunk) whose rows
  // attend s / 2 = 256 keys on average, unmasked but the diagonal; no per-step merge.
  const Kernel& fa = kernel(b.forward, b, "flash_attention");
  const Kernel& ring_fa = kernel(ring.layer->forward, *ring.layer, "flash_attention");
  CHECK(fa.matmul_flops == doctest::Approx(ring_fa.matmul_flops));
  CHECK(fa.launches == 2);
  CHECK(fa.attention_keys == 256);
  CHECK_FALSE(fa.attention_causal);
  CHECK(std::none_of(b.forward.begin(), b.forward.end(), [&](const Kernel& k) {
    return b.graph.ops[k.first_op].name == "cp_merge";
  }));
  // Nothing gathered is saved; the gathered and reordered K, V are live while it runs.
  CHECK(p.layer->saved_activation_B == doctest::Approx(ring.layer->saved_activation_B));
  CHECK(p.layer->peak_transient_B >= 2 * kv);
  // Exposed where the ring hides behind the attention: inside one node the all-gather adds
  // its whole time, the ring only its interference, for the same bytes.
  const BlockCost ca = block_cost(*p.layer, p), cr = block_cost(*ring.layer, ring);
  CHECK(ca.cp_bytes == doctest::Approx(cr.cp_bytes));
  CHECK(ca.cp_exposed_s == doctest::Approx(ca.cp_total_s));
  CHECK(cr.cp_exposed_s < 0.5 * cr.cp_total_s);
  // The report names each exchange.
  auto cp_row = [](const Prediction& pr) {
    for (const auto& c : pr.comms) {
      if (c.category == CommCategory::kContextParallel) return std::string(c.what);
    }
    return std::string();
  };
  CHECK(cp_row(predict_analytical(p)) == "cp K/V all-gather, dK/dV reduce-scatter");
  CHECK(cp_row(predict_analytical(ring)) == "cp ring attention K/V exchange");
}

TEST_CASE("context parallel: PyTorch's all-gather rotation gathers K and V beside the first step only") {
  // PyTorch's _AllGatherRotater (TorchTitan's default rotate method): the ring's steps and
  // merges, but K and V of every rank all-gathered once before the first (diagonal) step and
  // awaited at the second, so the gather hides behind 1/cp of the attention; the backward
  // gathers K, V again the same way and passes the dK, dV partial sums around the ring beside
  // the steps. tp 1 x cp 8 on the GQA model, PyTorch's fp32 merges: K and V of the whole
  // sequence 2 x 512 x 256 x 2 B = 524,288 B gathered forward and again backward, dK and dV
  // in fp32 twice that: 3 x 524,288 B in the backward, as the ring's.
  Strategy s = cp_strategy(1, 8);
  s.cp_merge = CpMerge::kEagerFp32;
  const Plan ring = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  s.cp_rotate = CpRotate::kAllGather;
  const Plan p = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  const Block& b = *p.layer;
  const double kv = 2.0 * 512 * 256 * 2;
  const Kernel& f = kernel(b.forward, b, "cp_kv_gather_rotate");
  CHECK(f.comm == CommKind::kAllGather);
  CHECK(f.comm_bytes == doctest::Approx(kv));
  CHECK(f.overlap_window == doctest::Approx(1.0 / 8));
  CHECK(std::none_of(b.forward.begin(), b.forward.end(),
                     [&](const Kernel& k) { return b.graph.ops[k.first_op].name == "cp_ring_dkv"; }));
  CHECK(kernel(b.backward, b, "cp_kv_gather_rotate").comm_bytes == doctest::Approx(kv));
  CHECK(kernel(b.backward, b, "cp_ring_dkv").comm_bytes == doctest::Approx(2 * kv));
  const BlockCost cg = block_cost(b, p), cr = block_cost(*ring.layer, ring);
  CHECK(cg.cp_bytes == doctest::Approx(cr.cp_bytes));
  // The same attention and merges as the ring's.
  CHECK(kernel(b.forward, b, "flash_attention").launches == 8);
  CHECK(kernel(b.forward, b, "cp_merge").bytes == doctest::Approx(kernel(ring.layer->forward, *ring.layer, "cp_merge").bytes));
  // Forward: exposed beyond an eighth of the attention, max(t - m/8, (1 - 1/s) t).
  const std::vector<KernelTiming> t = kernel_timings(b.forward, p);
  size_t ag = 0, fa = 0;
  for (size_t i = 0; i < b.forward.size(); ++i) {
    const std::string_view name = b.graph.ops[b.forward[i].first_op].name;
    if (name == "cp_kv_gather_rotate") ag = i;
    if (name == "flash_attention") fa = i;
  }
  const double slow = 1 - 1 / p.hardware.device.overlap_slowdown;
  CHECK(t[ag].exposed_s == doctest::Approx(std::max(t[ag].total_s - t[fa].total_s / 8, slow * t[ag].total_s)));
  // Backward: the gather beside an eighth of the attention's backward, dK/dV beside all of it
  // (past the gather next to it).
  const std::vector<KernelTiming> tb = kernel_timings(b.backward, p);
  size_t bag = 0, bdkv = 0, bfa = 0;
  for (size_t i = 0; i < b.backward.size(); ++i) {
    if (b.backward[i].phase != Phase::kBackward) continue;
    const std::string_view name = b.graph.ops[b.backward[i].first_op].name;
    if (name == "cp_kv_gather_rotate") bag = i;
    if (name == "cp_ring_dkv") bdkv = i;
    if (name == "flash_attention") bfa = i;
  }
  CHECK(tb[bag].exposed_s == doctest::Approx(std::max(tb[bag].total_s - tb[bfa].total_s / 8, slow * tb[bag].total_s)));
  CHECK(tb[bdkv].exposed_s == doctest::Approx(std::max(tb[bdkv].total_s - tb[bfa].total_s, slow * tb[bdkv].total_s)));
  // Across nodes on a slow network the gather, hidden behind less, exposes more than the ring.
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.node.devices = 1, hw.node.nics = 1, hw.node.nic.bandwidth_Bps = 2e9, hw.num_devices = 8;
  Strategy passed = s;
  passed.cp_rotate = CpRotate::kPass;
  const Expected<Plan> slow_gather = lower(gqa_model(), s, hw), slow_ring = lower(gqa_model(), passed, hw);
  REQUIRE(slow_gather.has_value());
  REQUIRE(slow_ring.has_value());
  CHECK(block_cost(*slow_gather->layer, *slow_gather).cp_exposed_s >
        block_cost(*slow_ring->layer, *slow_ring).cp_exposed_s);
}

TEST_CASE("context parallel: the ring's K/V blocks and merge buffers are live beside the recomputed layer") {
  // tp 1 x cp 8 on the GQA model, micro-batch 1: n = 512 / 8 = 64 tokens on a rank, E = 64 x
  // 1024 = 65,536 query elements, E_kv = 64 x (256 + 256) = 32,768 K and V elements, the
  // whole sequence's K, V S = 8 x 32,768 x 2 B = 524,288 B.
  auto workspace = [](const Plan& p, std::string_view name) {
    for (const LayerOp& op : p.layer->graph.ops) {
      if (op.name == name) return op.workspace_B;
    }
    return -1.0;
  };
  Strategy s = cp_strategy(1, 8);
  // Transformer Engine (p2p_comm_buffers and out_per_step, a list of cp each): forward
  // S + (8 + 1) E x 2 B = 524,288 + 1,179,648; the backward's double buffers of K, V and
  // dK, dV with dq, dq_, dkv_, (5 E_kv + 2 E) x 2 B = 589,824, is smaller.
  const Plan te = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  CHECK(workspace(te, "flash_attention") == doctest::Approx(1703936));
  CHECK(workspace(te, "cp_ring_kv") == 0);
  CHECK(te.layer->peak_transient_B == doctest::Approx(1703936));  // nothing recomputed
  // PyTorch, all-to-all rotation: a received block beside the step's concatenation, 2 E_kv x
  // 2 B = 131,072, and the larger of the forward's fp32 merge buffers (12 E = 786,432) and the
  // backward's fp32 accumulators, 16-bit step gradients and fp32 dK, dV passed (4 x 98,304 +
  // 2 x 98,304 + 12 x 32,768 = 983,040): 1,114,112 B.
  s.cp_merge = CpMerge::kEagerFp32;
  const Plan passed = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  CHECK(workspace(passed, "flash_attention") == doctest::Approx(1114112));
  // All-gather rotation: the gathered S beside the step's concatenation (65,536), 589,824,
  // plus 983,040.
  s.cp_rotate = CpRotate::kAllGather;
  const Plan gathered = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  CHECK(workspace(gathered, "flash_attention") == doctest::Approx(1572864));
  CHECK(workspace(gathered, "cp_kv_gather_rotate") == 0);
  // Under full recomputation the ring runs beside what the recomputation rebuilt up to the
  // attention. At cp 16 (n = 32 tokens, E = 32,768, E_kv = 16,384) the gathered rotation's
  // buffers, 524,288 + 32,768 + 4 x 49,152 + 2 x 49,152 + 12 x 16,384 = 1,048,576 B, outweigh
  // the whole rebuilt layer, so the peak lies strictly between them and their sum (taking the
  // larger of the two, the peak would be the buffers alone).
  s.recompute = Recompute::kFull;
  s.cp = 16;
  const Plan full = testing::lower_on_dgx_a100(gqa_model(), s, 16);
  REQUIRE(workspace(full, "flash_attention") == doctest::Approx(1048576));
  const double rebuilt =
      saved_activation_bytes(full.layer->graph, Recompute::kNone) - full.layer->saved_activation_B;
  REQUIRE(rebuilt > 0);
  REQUIRE(rebuilt < 1048576);
  CHECK(full.layer->peak_transient_B > 1048576 * 1.01);
  CHECK(full.layer->peak_transient_B < 1048576 + rebuilt);
  // Inference holds the forward's buffers only: the merge's 12 E fp32 B beside the gathered
  // and concatenated K, V, 557,056 + 393,216 B.
  s.recompute = Recompute::kNone;
  s.workload = Workload::kInference;
  s.zero_stage = 0;
  const Plan served = testing::lower_on_dgx_a100(gqa_model(), s, 16);
  CHECK(workspace(served, "flash_attention") == doctest::Approx(950272));
}

TEST_CASE("context parallel: cp_rotate is read, written back, and needs the ring") {
  const Strategy s = read_strategy(JsonNode(parse_json_text(
      R"({"global_batch": 8, "cp": 2, "cp_rotate": "allgather"})", "s.json"), "s.json", "strategy"));
  CHECK(s.cp_rotate == CpRotate::kAllGather);
  CHECK(to_json(s).at("cp_rotate") == "all_gather");
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  const std::string what = testing::input_error_message([] {
    read_strategy(JsonNode(parse_json_text(R"({"global_batch": 8, "cp": 2, "cp_comm": "a2a", "cp_rotate": "all_gather"})",
                                           "s.json"), "s.json", "strategy"));
  });
  CAPTURE(what);
  CHECK(what.find("s.json") != std::string::npos);
  CHECK(what.find("cp_rotate") != std::string::npos);
  CHECK(what.find("has no ring to rotate") != std::string::npos);
}

TEST_CASE("context parallel: cp_overlap false waits for every exchange where it is issued") {
  // PyTorch's ring traced by torch.compile (TorchTitan compiles each block with fullgraph): a
  // traced functional collective returns wait_tensor() at once and Inductor moves no wait, so
  // each exchange runs alone before the step that reads it. tp 1 x cp 8 on the GQA model,
  // PyTorch's fp32 merges and all-gather rotation: with the overlap each exchange shows
  // max(t - m, (1 - 1/s) t) beside the attention m (the test above); without, all of t, and
  // the attention beside it runs at full speed. The traffic is the same.
  Strategy s = cp_strategy(1, 8);
  s.cp_merge = CpMerge::kEagerFp32;
  s.cp_rotate = CpRotate::kAllGather;
  const Plan overlapped = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  s.cp_overlap = false;
  const Plan waited = testing::lower_on_dgx_a100(gqa_model(), s, 8);
  const Block& b = *waited.layer;
  for (const std::vector<Kernel>* list : {&b.forward, &b.backward}) {
    const std::vector<KernelTiming> t = kernel_timings(*list, waited);
    int exchanges = 0;
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].group != GroupKind::kContext || (*list)[i].cls != OpClass::kCollective) continue;
      ++exchanges;
      CHECK_FALSE((*list)[i].overlaps_attention);
      CHECK(t[i].exposed_s == doctest::Approx(t[i].total_s));
    }
    CHECK(exchanges >= 1);
  }
  const BlockCost w = block_cost(b, waited), o = block_cost(*overlapped.layer, overlapped);
  CHECK(w.cp_bytes == doctest::Approx(o.cp_bytes));
  CHECK(w.cp_total_s == doctest::Approx(o.cp_total_s));
  CHECK(w.cp_exposed_s == doctest::Approx(w.cp_total_s));
  CHECK(o.cp_exposed_s < o.cp_total_s);
  // The layer takes exactly the exchange time the overlap had hidden, the attention's
  // interference included: no other kernel changes.
  CHECK(w.forward_s + w.backward_s ==
        doctest::Approx(o.forward_s + o.backward_s + (w.cp_exposed_s - o.cp_exposed_s)));
}

TEST_CASE("context parallel: cp_overlap is read, written back only when false, and must be a bool") {
  const Strategy s = read_strategy(JsonNode(parse_json_text(
      R"({"global_batch": 8, "cp": 2, "cp_overlap": false})", "s.json"), "s.json", "strategy"));
  CHECK_FALSE(s.cp_overlap);
  CHECK(to_json(s).at("cp_overlap") == false);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  Strategy d;
  d.global_batch = 8;
  CHECK(d.cp_overlap);
  CHECK_FALSE(to_json(d).contains("cp_overlap"));
  const std::string what = testing::input_error_message([] {
    read_strategy(JsonNode(parse_json_text(R"({"global_batch": 8, "cp": 2, "cp_overlap": "no"})", "s.json"),
                           "s.json", "strategy"));
  });
  CAPTURE(what);
  CHECK(what.find("s.json") != std::string::npos);
  CHECK(what.find("cp_overlap") != std::string::npos);
}
