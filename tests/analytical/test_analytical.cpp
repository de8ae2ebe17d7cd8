#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/stage_costs.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/transformer_layer.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

HardwareModel cluster(int devices, const char* name = "dgx_a100") {
  HardwareModel hw = catalog_cluster(name);
  hw.num_devices = devices;
  return hw;
}

Prediction predict(const ModelSpec& m, const Strategy& s, int devices) {
  Expected<Plan> p = lower(m, s, cluster(devices));
  REQUIRE(p.has_value());
  return predict_analytical(*p);
}

Strategy megatron(int tp, int pp, int gb, int mb) {
  Strategy s;
  s.tp = tp, s.pp = pp, s.global_batch = gb, s.micro_batch = mb;
  return s;
}

}  // namespace

TEST_CASE("collectives: ring all-reduce is 2(n-1)/n * S/B + 2(n-1) * alpha") {
  const LinkLevel link{100e9, 5e-6};
  // n = 8, S = 1 GB: 2*7/8 * 1e9/1e11 = 0.0175 s; latency 14 * 5us = 70 us.
  CHECK(ring_all_reduce_s(1e9, 8, link) == doctest::Approx(0.0175 + 70e-6));
  // All-gather: (n-1)/n * S/B + (n-1) * alpha.
  CHECK(ring_gather_s(1e9, 8, link) == doctest::Approx(0.00875 + 35e-6));
  CHECK(ring_all_reduce_s(1e9, 1, link) == 0);
  // Within one DGX A100 node the ring runs at NVLink3 x efficiency, times the size factor
  // of nvlink3's size_efficiency at 1 GB = 953.7 MiB, between 512 MiB (0.963) and 1 GiB
  // (0.988), log-linear: 0.963 + 0.025 ln(953.7/512)/ln 2 = 0.98543.
  const HardwareModel hw = cluster(8);
  const CommGroup g{GroupKind::kTensor, 8, 8};
  const double B = 300e9 * hw.node.device_link.efficiency * 0.98543;
  const double a = hw.node.device_link.latency_s;
  CHECK(collective_time(CommKind::kAllReduce, 1e9, g, hw, CollectiveAlgorithm::kRing).time_s ==
        doctest::Approx(2.0 * 7 / 8 * 1e9 / B + 14 * a).epsilon(1e-4));
}

TEST_CASE("collectives: below NCCL's plateau the bandwidth follows the link's size curve") {
  // nvlink3 (A100) from nccl-tests: 16 MiB at 0.526 of the plateau, so a 16 MiB all-reduce
  // over 8 GPUs takes 14 alpha + 1.75 x 16 MiB / (231 GB/s x 0.526) = 28 + 241.6 = 269.6 us,
  // which is 1.75 x 16 MiB / 109.2 GB/s, the measured busbw (mechanism_facts.md, 4a).
  const HardwareModel hw = cluster(8);
  const CommGroup g{GroupKind::kTensor, 8, 8};
  const double S = 16.0 * (1 << 20);
  const double t = collective_time(CommKind::kAllReduce, S, g, hw, CollectiveAlgorithm::kRing).time_s;
  CHECK(t == doctest::Approx(1.75 * S / 109.22e9).epsilon(0.01));
  // Log-linear between the points, flat outside them.
  const LinkSpec& l = hw.node.device_link;
  CHECK(size_efficiency_at(l, 1) == doctest::Approx(0.35));
  CHECK(size_efficiency_at(l, 1e12) == doctest::Approx(1.0));
  CHECK(size_efficiency_at(l, std::sqrt(16.0 * 32.0) * (1 << 20)) ==
        doctest::Approx((0.526 + 0.612) / 2));
  // A link without a curve is at its plateau for every size.
  CHECK(size_efficiency_at(LinkSpec{}, 1e6) == 1.0);
}

TEST_CASE("collectives: auto picks the fastest of ring, tree and hierarchical across nodes") {
  const HardwareModel hw = cluster(64);
  for (int k : {1, 2, 8}) {
    const CommGroup dp{GroupKind::kData, 64, k};
    const double ring = collective_time(CommKind::kAllReduce, 4e9, dp, hw, CollectiveAlgorithm::kRing).time_s;
    const double tree = collective_time(CommKind::kAllReduce, 4e9, dp, hw, CollectiveAlgorithm::kTree).time_s;
    const double hier =
        collective_time(CommKind::kAllReduce, 4e9, dp, hw, CollectiveAlgorithm::kHierarchical).time_s;
    const auto best = collective_time(CommKind::kAllReduce, 4e9, dp, hw, CollectiveAlgorithm::kAuto);
    CHECK(best.time_s == std::min({ring, tree, hier}));
  }
}

TEST_CASE("collectives: an all-gather or reduce-scatter across nodes runs as NCCL's ring, never hierarchically") {
  // NCCL's tuner admits only RING (PAT for one GPU per node, NVLS/CollNet with SHARP switches)
  // for AllGather and ReduceScatter across nodes (src/graph/tuning.cc). A small gather over 512
  // ranks is latency-bound: the two-level algorithm (7 NVLink steps, then 63 across nodes) is
  // about twice as quick on paper as the ring's 511 steps, and auto must still take the ring. An
  // all-reduce takes the fastest, two-level included.
  const HardwareModel hw = cluster(512);
  const CommGroup dp{GroupKind::kData, 512, 8};
  for (CommKind kind : {CommKind::kAllGather, CommKind::kReduceScatter}) {
    const double ring = collective_time(kind, 1e8, dp, hw, CollectiveAlgorithm::kRing).time_s;
    const double hier = collective_time(kind, 1e8, dp, hw, CollectiveAlgorithm::kHierarchical).time_s;
    REQUIRE(hier < 0.6 * ring);
    const auto best = collective_time(kind, 1e8, dp, hw, CollectiveAlgorithm::kAuto);
    CHECK(best.algorithm == CollectiveAlgorithm::kRing);
    CHECK(best.time_s == ring);
  }
  const double hier = collective_time(CommKind::kAllReduce, 1e8, dp, hw, CollectiveAlgorithm::kHierarchical).time_s;
  const double ring = collective_time(CommKind::kAllReduce, 1e8, dp, hw, CollectiveAlgorithm::kRing).time_s;
  const double tree = collective_time(CommKind::kAllReduce, 1e8, dp, hw, CollectiveAlgorithm::kTree).time_s;
  CHECK(collective_time(CommKind::kAllReduce, 1e8, dp, hw, CollectiveAlgorithm::kAuto).time_s ==
        std::min({ring, tree, hier}));
}

TEST_CASE("collectives: a flat ring crosses each node once, its crossing edge gets k / 8 of the NICs") {
  // DGX A100: 8 NICs of 200 Gb/s (25 GB/s) per node, at the NIC's efficiency e; 8 devices.
  // A 64-rank ring visiting each node's k = 8 members in a row leaves a node by one edge: with
  // every device of the node in it, that edge has the node's 8 x 25 e GB/s (NCCL's rings cross
  // on all NICs at once). With k = 1 member per node (tp = 8), 8 such rings leave every node:
  // 25 e GB/s each. The ring runs at its slowest edge: min(NVLink, crossing edge); at 4 GB the
  // IB curve is at its plateau. Latency: 2 (n - 1) hops of the slower link's alpha
  // (IB: NIC 3 us + one switch hop, against NVLink's).
  const HardwareModel hw = cluster(512);
  const LinkSpec& nic = hw.node.nic;
  const LinkSpec& nv = hw.node.device_link;
  const double S = 4e9;
  const double node_Bps = 8 * 25e9 * nic.efficiency;
  const double alpha = std::max(nv.latency_s, nic.latency_s + hw.network.switch_latency_s *
                                                                 (2.0 * (hw.network.levels - 1) + 1));
  auto ring = [&](int size, int k) {
    return collective_time(CommKind::kAllReduce, S, CommGroup{GroupKind::kData, size, k}, hw,
                           CollectiveAlgorithm::kRing)
        .time_s;
  };
  const double edge8 = std::min(nv.bandwidth_Bps * nv.efficiency, node_Bps) *
                       size_efficiency_at(node_Bps < nv.bandwidth_Bps * nv.efficiency ? nic : nv, S);
  CHECK(ring(64, 8) == doctest::Approx(2.0 * 63 / 64 * S / edge8 + 2 * 63 * alpha).epsilon(1e-9));
  const double edge1 = node_Bps / 8 * size_efficiency_at(nic, S);
  CHECK(ring(64, 1) == doctest::Approx(2.0 * 63 / 64 * S / edge1 + 2 * 63 * alpha).epsilon(1e-9));
  // Two members per node: 4 rings leave every node, 2 x 25 e GB/s each.
  CHECK(ring(64, 2) == doctest::Approx(2.0 * 63 / 64 * S / (2 * edge1) + 2 * 63 * alpha).epsilon(1e-9));
}

TEST_CASE("flops: Narayanan Eq. 3, 96 B s l h^2 (1 + s/6h + V/16lh), with full recomputation") {
  // A GPT small enough to evaluate quickly: l=8, h=1024, a=16, s=1024, V=32000, B=64.
  ModelSpec m;
  m.transformer = TransformerSpec{.layers = 8, .hidden = 1024, .heads = 16, .seq_len = 1024,
                                  .vocab = 32000};
  Strategy s = megatron(2, 2, 64, 2);
  s.recompute = Recompute::kFull;
  const Prediction p = predict(m, s, 8);
  const double B = 64, S = 1024, l = 8, h = 1024, V = 32000;
  const double with_recompute = 96 * B * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h));
  const double model_flops = 72 * B * S * l * h * h * (1 + S / (6 * h) + V / (12 * l * h));
  CHECK(p.hardware_flops == doctest::Approx(with_recompute).epsilon(1e-9));
  CHECK(p.model_flops == doctest::Approx(model_flops).epsilon(1e-9));
  s.recompute = Recompute::kNone;
  const Prediction q = predict(m, s, 8);
  CHECK(q.hardware_flops == doctest::Approx(model_flops).epsilon(1e-9));
}

TEST_CASE("memory: ZeRO model states for 7.5B on 64 GPUs are 120 / 31.4 / 16.6 / 1.9 GB") {
  // Rajbhandari et al. SC20, Figure 1: psi = 7.5e9, K = 12, N_d = 64.
  // Stage 0: 16 psi = 120 GB; stage 1: 4 psi + 12 psi/64 = 31.41 GB;
  // stage 2: 2 psi + 14 psi/64 = 16.64 GB; stage 3: 16 psi/64 = 1.875 GB.
  const double expected[] = {120.0, 31.40625, 16.640625, 1.875};
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryBreakdown m = model_state_memory(7.5e9, 64, stage, StateBytes{});
    CHECK((m.weights_B + m.gradients_B + m.optimizer_B) / 1e9 == doctest::Approx(expected[stage]));
  }
}

TEST_CASE("memory: allocated, reserved and nvidia-smi views, and the one that must fit") {
  // BERT-large, dp 64, ZeRO 0 on A100-80GB: the A100 catalog keeps reserved_memory 2 GiB off the
  // model, of which 273.75 MiB is the CUDA context (pytorch/pytorch#86509: PyTorch's lazily
  // loaded context, outside its caching allocator). allocated = the six tensor components;
  // reserved = allocated + (2 GiB - 273.75 MiB) + the eager loss's fragmentation; device =
  // reserved + 273.75 MiB. The loss is eager (no fused_loss): its bf16 logits leave a 2 B hole
  // per logit that none of its fp32 gradients fits (test_allocator_replay.cpp), and with no
  // recomputation its working set is the rank's largest.
  const ModelSpec bert = model_preset("bert-large");
  Strategy s = megatron(1, 1, 512, 8);
  const Prediction p = predict(bert, s, 64);
  REQUIRE(p.rank_memory.size() == 1);
  const MemoryBreakdown& m = p.rank_memory[0];
  const double tensors = m.weights_B + m.gradients_B + m.optimizer_B + m.activations_B +
                         m.transient_B + m.buffers_B;
  const double logits = double(s.micro_batch) * bert.transformer.seq_len * bert.transformer.vocab;
  CHECK(m.context_B == 273.75 * kMiB);
  CHECK(m.workspace_B == doctest::Approx(2 * kGiB - 273.75 * kMiB));
  CHECK(m.fragmentation_B == doctest::Approx(2 * logits));
  CHECK(p.peak_allocated_B == doctest::Approx(tensors));
  CHECK(p.peak_reserved_B == doctest::Approx(tensors + 2 * kGiB - 273.75 * kMiB + 2 * logits));
  CHECK(p.peak_memory_B == doctest::Approx(tensors + 2 * kGiB + 2 * logits));
  // The device view is the one compared with the capacity: a device whose memory holds the
  // reserved view but not the context does not fit.
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 64;
  hw.device.memory_B = p.peak_reserved_B + 0.5 * m.context_B;
  Plan tight = *lower(bert, s, hw);
  CHECK_FALSE(predict_analytical(tight).fits);
  hw.device.memory_B = p.peak_memory_B;
  CHECK(predict_analytical(*lower(bert, s, hw)).fits);
}

TEST_CASE("memory: per-device memory falls as TP grows and as the ZeRO stage grows") {
  const ModelSpec gpt3 = model_preset("gpt3-175b");
  double previous = 1e30;
  for (int tp : {1, 2, 4, 8}) {
    Strategy s = megatron(tp, 8, 512, 1);
    s.recompute = Recompute::kFull;
    const double peak = predict(gpt3, s, 64 * tp).peak_memory_B;
    CAPTURE(tp);
    CHECK(peak < previous);
    previous = peak;
  }
  const ModelSpec bert = model_preset("bert-large");
  previous = 1e30;
  for (int zero = 0; zero <= 3; ++zero) {
    Strategy s = megatron(1, 1, 512, 8);
    s.zero_stage = zero;
    const double peak = predict(bert, s, 64).peak_memory_B;
    CAPTURE(zero);
    CHECK(peak < previous);
    previous = peak;
  }
}

TEST_CASE("pipeline: bubble fraction falls as micro-batches grow and tracks (p-1)/(m+p-1)") {
  const ModelSpec gpt3 = model_preset("gpt3-175b");
  double previous = 1;
  for (int m : {8, 16, 32, 64, 128}) {
    Strategy s = megatron(8, 8, m, 1);
    s.recompute = Recompute::kFull;
    const Prediction p = predict(gpt3, s, 64);
    const double closed_form = 7.0 / (m + 7.0);
    CAPTURE(m);
    CHECK(p.bubble_fraction < previous);
    // Stages differ a little (embedding on the first, head on the last), so the schedule's
    // bubble is close to, not equal to, the uniform closed form.
    CHECK(p.bubble_fraction == doctest::Approx(closed_form).epsilon(0.25));
    previous = p.bubble_fraction;
  }
}

TEST_CASE("fusion: fusing elementwise chains never increases a layer's time") {
  const TransformerSpec t = model_preset("llama2-70b").transformer;
  const HardwareModel hw = cluster(8);
  auto layer_time = [&](const FusionPlan& f) {
    LayerGraph g = build_transformer_layer(t, LayerShape{.micro_batch = 1, .tp = 8, .fusion = f});
    double total = 0;
    for (const Kernel& k : fuse_kernels(g, Recompute::kNone)) {
      if (k.cls != OpClass::kCollective) total += kernel_time(k, hw.device, DType::kBf16).total_s;
    }
    return total;
  };
  const double none = layer_time(FusionPlan{});
  double previous = none;
  for (const char* preset : {"epilogues", "megatron", "all"}) {
    FusionPlan f;
    REQUIRE(fusion_preset(preset, &f));
    const double t_fused = layer_time(f);
    CAPTURE(preset);
    CHECK(t_fused <= previous);
    previous = t_fused;
  }
  CHECK(previous < none);
}

TEST_CASE("engine: throughput identities hold") {
  Strategy s = megatron(8, 8, 1536, 1);
  s.recompute = Recompute::kFull;
  const Prediction p = predict(model_preset("gpt3-175b"), s, 1024);
  CHECK(p.tokens_per_s == doctest::Approx(1536.0 * 2048 / p.iteration_s));
  CHECK(p.mfu == doctest::Approx(p.model_flops / (p.iteration_s * 1024 * 312e12)));
  CHECK(p.iteration_s >= p.pipeline_s);
  CHECK(p.fits);
  CHECK(p.rank_memory.size() == 8);
}

TEST_CASE("engine: memoized block costs equal a fresh computation, per hardware") {
  Strategy s = megatron(8, 8, 1536, 1);
  const ModelSpec m = model_preset("gpt3-175b");
  HardwareModel slow = cluster(1024);
  slow.node.device_link.bandwidth_Bps /= 4;  // same blocks, different hardware numbers
  Expected<Plan> fast_plan = lower(m, s, cluster(1024));
  Expected<Plan> slow_plan = lower(m, s, slow);
  REQUIRE(fast_plan.has_value());
  REQUIRE(slow_plan.has_value());
  const Prediction fast1 = predict_analytical(*fast_plan);
  const Prediction slow1 = predict_analytical(*slow_plan);
  const Prediction fast2 = predict_analytical(*fast_plan);
  CHECK(fast1.iteration_s == fast2.iteration_s);
  CHECK(slow1.iteration_s > fast1.iteration_s);  // not served the fast hardware's cost
  const BlockCost direct = block_cost(*slow_plan->layer, *slow_plan);
  CHECK(slow1.forward_s >= 12 * direct.forward_s);  // 12 layers per stage
}

TEST_CASE("timeline: with full recomputation each backward starts with its recomputed forward") {
  ModelSpec m;
  m.transformer = TransformerSpec{.layers = 8, .hidden = 1024, .heads = 16, .seq_len = 1024,
                                  .vocab = 32000};
  Strategy s = megatron(2, 2, 16, 2);  // dp 2, m = 16 / (2 * 2) = 4 micro-batches
  s.recompute = Recompute::kFull;
  Expected<Plan> plan = lower(m, s, cluster(8));
  REQUIRE(plan.has_value());
  const Prediction p = predict_analytical(*plan, EngineOptions{.timeline = true});
  const StageCosts costs = stage_costs(*plan);
  int recomputes = 0, backwards = 0;
  for (size_t i = 0; i < p.timeline.size(); ++i) {
    const TimelineEvent& e = p.timeline[i];
    if (e.kind == EventKind::kRecompute) {
      ++recomputes;
      // Full recomputation reruns the stage's forward without its p2p: its length is the
      // stage's recompute time, and the backward of the same micro-batch follows at once.
      CHECK(e.end_s - e.start_s == doctest::Approx(costs.stages[e.device].recompute_s));
      REQUIRE(i + 1 < p.timeline.size());
      CHECK(p.timeline[i + 1].kind == EventKind::kBackward);
      CHECK(p.timeline[i + 1].micro_batch == e.micro_batch);
      CHECK(p.timeline[i + 1].start_s == e.end_s);
    }
    if (e.kind == EventKind::kBackward) ++backwards;
  }
  CHECK(recomputes == 2 * 4);  // p ranks x m micro-batches
  CHECK(backwards == 2 * 4);
  CHECK(costs.stages[0].recompute_s > 0);

  s.recompute = Recompute::kNone;
  Expected<Plan> plain = lower(m, s, cluster(8));
  REQUIRE(plain.has_value());
  for (const TimelineEvent& e : predict_analytical(*plain, EngineOptions{.timeline = true}).timeline) {
    CHECK(e.kind != EventKind::kRecompute);
  }
}

TEST_CASE("timeline: sends on the communication lane, then gradient sync, embedding sync, optimizer") {
  // tp 2, pp 2, dp 2 on 8 devices, m = 4 micro-batches, blocking sends. Rank 0 sends m
  // activations after its forwards, rank 1 m gradients after its backwards: each send is the
  // last stage_costs().transfer_s of its op, with the plan's p2p_bytes. After the pipeline each
  // rank's tail: its DP gradient sync (all of its bytes), the tied-embedding all-reduce (the
  // first and last stages), then the optimizer step; the last event of the slowest rank ends
  // at the iteration time.
  ModelSpec m;
  m.transformer = TransformerSpec{.layers = 8, .hidden = 1024, .heads = 16, .seq_len = 1024,
                                  .vocab = 32000};
  const Strategy s = megatron(2, 2, 16, 2);
  Expected<Plan> plan = lower(m, s, cluster(8));
  REQUIRE(plan.has_value());
  const Prediction p = predict_analytical(*plan, EngineOptions{.timeline = true});
  const StageCosts costs = stage_costs(*plan);
  int act = 0, grad = 0, syncs = 0, embeddings = 0, optimizers = 0;
  double end = 0, dp_bytes = 0;
  for (const TimelineEvent& e : p.timeline) {
    end = std::max(end, e.end_s);
    if (e.kind == EventKind::kComm && e.micro_batch >= 0) {
      CHECK(e.end_s - e.start_s == doctest::Approx(costs.transfer_s[0]));
      CHECK(e.bytes == plan->p2p_bytes);
      // The send ends with the op that sends it (blocking): a forward on rank 0, a backward on 1.
      bool ends_op = false;
      for (const TimelineEvent& op : p.timeline) {
        ends_op |= op.device == e.device && op.micro_batch == e.micro_batch &&
                   op.kind == (e.device == 0 ? EventKind::kForward : EventKind::kBackward) &&
                   op.end_s == e.end_s;
      }
      CHECK(ends_op);
      (e.device == 0 ? act : grad) += 1;
    }
    if (e.name == "dp gradient sync") ++syncs, dp_bytes += e.bytes;
    embeddings += e.name == "embedding all-reduce";
    if (e.kind == EventKind::kOptimizer) {
      ++optimizers;
      CHECK(e.end_s - e.start_s == doctest::Approx(p.optimizer_s).epsilon(0.2));
    }
  }
  CHECK(act == 4);
  CHECK(grad == 4);
  CHECK(syncs == 2);
  CHECK(embeddings == 2);
  CHECK(optimizers == 2);
  CHECK(end == doctest::Approx(p.iteration_s));
  for (const CommStat& c : p.comms) {
    if (c.category == CommCategory::kDataParallel) CHECK(dp_bytes == doctest::Approx(2 * c.bytes).epsilon(0.05));
  }
}
