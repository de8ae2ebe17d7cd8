// Mixture of experts with expert parallelism (issue 15), worked out by hand on a small MoE
// decoder: 4 layers, hidden 1024, 16 heads (no GQA), RMSNorm, SwiGLU, no biases, 8 experts of
// width 512, top-2, seq 512, vocab 32000 (tied, learned positions).
#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "sim/analytical/analytical_engine.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/memory_model.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "sim/core/json_reader.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/simple_device.h"
#include "tests/support/small_plans.h"

using namespace stratasim;
using testing::kernel;

namespace {

// A strategy object read from JSON text as a scenario's "strategy" ("s.json").
Strategy read_text(const std::string& text) {
  return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
}

// A forward-only all-gather over the expert group, `name`, of `bytes` gathered: once in the
// forward, before the dispatch it sizes, and not in the backward.
void check_gather_before_dispatch(const Block& b, std::string_view name, double bytes) {
  CAPTURE(name);
  const Kernel& g = kernel(b.forward, b, name);
  CHECK(g.cls == OpClass::kCollective);
  CHECK(g.comm == CommKind::kAllGather);
  CHECK(g.group == GroupKind::kExpert);
  CHECK(g.comm_bytes == doctest::Approx(bytes));
  auto named = [&](const Kernel& k) { return b.graph.ops[k.first_op].name == name; };
  CHECK(std::count_if(b.forward.begin(), b.forward.end(), named) == 1);
  CHECK(std::none_of(b.backward.begin(), b.backward.end(), named));
  auto at = [&](std::string_view n) {
    return std::find_if(b.forward.begin(), b.forward.end(),
                        [&](const Kernel& k) { return b.graph.ops[k.first_op].name == n; }) -
           b.forward.begin();
  };
  CHECK(at(name) < at("ep_dispatch"));
}

ModelSpec moe_model() {
  ModelSpec m = testing::small_gpt(4);
  TransformerSpec& t = m.transformer;
  t.activation = Activation::kSwiGLU, t.norm = NormKind::kRMSNorm, t.linear_bias = false;
  t.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 512};
  return m;
}

Strategy moe_strategy(int tp, int ep) {
  Strategy s;
  s.tp = tp, s.ep = ep, s.global_batch = 16, s.micro_batch = 1, s.zero_stage = 1;
  s.sequence_parallel = tp > 1;
  fusion_preset("all", &s.fusion);
  return s;
}

// One expert: gate and up (2 x 1024 x 512) and down (512 x 1024) = 1,572,864 parameters.
constexpr double kExpert = 3.0 * 1024 * 512;
// Attention q, k, v (1024 x 3072) and output (1024 x 1024) + two RMSNorm gains (2 x 1024).
constexpr double kAttention = 1024.0 * 3072 + 1024.0 * 1024 + 2 * 1024;
constexpr double kRouter = 1024.0 * 8;

}  // namespace

TEST_CASE("moe: parameters of a layer, total and active per token") {
  const TransformerSpec t = moe_model().transformer;
  CHECK(expert_layer_params(t) == doctest::Approx(8 * kExpert));               // 12,582,912
  CHECK(layer_params(t) == doctest::Approx(kAttention + kRouter + 8 * kExpert));  // 16,787,456
  CHECK(active_layer_params(t) == doctest::Approx(kAttention + kRouter + 2 * kExpert));
  // Shared experts (DeepSeekMoE) are dense: 1 of width 256 adds 3 x 1024 x 256 everywhere.
  TransformerSpec shared = t;
  shared.moe.shared_experts = 1, shared.moe.shared_ffn_hidden = 256;
  CHECK(layer_params(shared) - layer_params(t) == doctest::Approx(3.0 * 1024 * 256));
  CHECK(active_layer_params(shared) - active_layer_params(t) == doctest::Approx(3.0 * 1024 * 256));
}

TEST_CASE("moe: ep 4 on 8 GPUs: experts per rank, groups and the expert-data replicas") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  // 8 experts over ep 4: 2 whole experts per rank; attention and router unsplit (tp 1).
  CHECK(p.layer->expert_params == doctest::Approx(2 * kExpert));
  CHECK(p.layer->params == doctest::Approx(kAttention + kRouter + 2 * kExpert));
  // tp 1 x dp 8 = 8 ranks per stage: ep groups of 4 consecutive ranks, 8 / 4 = 2 ranks hold
  // the same experts, 4 apart (both in the one 8-GPU node).
  CHECK(p.ep_group.size == 4);
  CHECK(p.ep_group.ranks_per_node == 4);
  CHECK(p.edp == 2);
  CHECK(p.edp_group.size == 2);
  CHECK(p.edp_group.ranks_per_node == 2);
}

TEST_CASE("moe: dispatch and combine all-to-all bytes per token, grouped GEMM rows") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  const Block& b = *p.layer;
  // 512 tokens x top-2 = 1024 copies of 1024 elements x 2 B: 2,097,152 B each way, i.e.
  // top_k x hidden x 2 B = 4096 B per token per all-to-all.
  const double bytes = 512.0 * 2 * 1024 * 2;
  for (std::string_view name : {"ep_dispatch", "ep_combine"}) {
    const Kernel& f = kernel(b.forward, b, name);
    CHECK(f.cls == OpClass::kCollective);
    CHECK(f.comm == CommKind::kAllToAll);
    CHECK(f.group == GroupKind::kExpert);
    CHECK(f.comm_bytes == doctest::Approx(bytes));
    const Kernel& back = kernel(b.backward, b, name);  // the gradients travel the same way back
    CHECK(back.comm == CommKind::kAllToAll);
    CHECK(back.comm_bytes == doctest::Approx(bytes));
  }
  // Balanced: a rank receives the 1024 copies it sends, over its 2 experts: 512 rows each.
  const Kernel& fc1 = kernel(b.forward, b, "expert_fc1");
  CHECK(fc1.gemm_batch == 2);
  CHECK(fc1.gemm_m == 512);
  CHECK(fc1.gemm_n == 1024);  // gate and up of width 512
  CHECK(fc1.gemm_k == 1024);
  CHECK(fc1.matmul_flops == doctest::Approx(2.0 * 1024 * 1024 * 1024));
  CHECK(fc1.model_flops == doctest::Approx(2.0 * 1024 * 1024 * 1024));
}

TEST_CASE("moe: the most loaded rank sets the pace, a capacity factor pads every expert") {
  ModelSpec skewed = moe_model();
  skewed.transformer.moe.load_imbalance = 1.5;
  const Plan even = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  const Plan p = testing::lower_on_dgx_a100(skewed, moe_strategy(1, 4), 8);
  const Kernel& fc2 = kernel(p.layer->forward, *p.layer, "expert_fc2");
  const Kernel& fc2_even = kernel(even.layer->forward, *even.layer, "expert_fc2");
  CHECK(fc2.matmul_flops == doctest::Approx(1.5 * fc2_even.matmul_flops));
  CHECK(fc2.model_flops == doctest::Approx(fc2_even.model_flops));  // MFU counts routed tokens
  CHECK(kernel(p.layer->forward, *p.layer, "ep_dispatch").comm_bytes ==
        doctest::Approx(1.5 * 512 * 2 * 1024 * 2));
  ModelSpec capped = skewed;
  capped.transformer.moe.capacity_factor = 1.25;  // GShard: capacity wins over the imbalance
  const Plan c = testing::lower_on_dgx_a100(capped, moe_strategy(1, 4), 8);
  CHECK(kernel(c.layer->forward, *c.layer, "expert_fc1").gemm_m == doctest::Approx(1.25 * 512));
}

TEST_CASE("moe: with tp 2 each rank routes its sequence-parallel shard") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(2, 8), 8);
  // 512 / 2 = 256 tokens per rank; ep 8 over tp 2 x dp 4 = 8 ranks; one expert per rank.
  CHECK(kernel(p.layer->forward, *p.layer, "ep_dispatch").comm_bytes ==
        doctest::Approx(256.0 * 2 * 1024 * 2));
  CHECK(p.edp == 1);
  CHECK(p.layer->expert_params == doctest::Approx(kExpert));
  // Attention split over tp 2, experts whole: (attention + router) / 2 + 1 expert.
  CHECK(p.layer->params == doctest::Approx((kAttention + kRouter) / 2 + kExpert));
}

TEST_CASE("moe: strategies that cannot run say why") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 8;
  auto refused = [&](const ModelSpec& m, const Strategy& s) {
    Expected<Plan> p = lower(m, s, hw);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().reason == InfeasibleReason::kExpertParallel);
    return p.error().detail;
  };
  CHECK(refused(moe_model(), moe_strategy(1, 3)) == "ep=3 does not divide experts=8");
  CHECK(refused(testing::small_gpt(4), moe_strategy(1, 2)) ==
        "ep=2 splits experts, but this model has none (set model.moe)");
  Strategy no_sp = moe_strategy(2, 2);
  no_sp.sequence_parallel = false;
  CHECK(refused(moe_model(), no_sp) ==
        "mixture of experts with tp=2 needs sequence_parallel (each tp rank routes its own tokens)");
  Strategy wide = moe_strategy(1, 8);
  wide.pp = 2;  // 4 ranks per stage cannot hold ep 8
  CHECK(refused(moe_model(), wide) ==
        "ep=8 does not divide tp*cp*dp=4 (the expert-parallel ranks are folded over a stage's ranks)");
}

TEST_CASE("moe: expert gradients and optimizer states live on the expert-data replicas") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  // Per device: 4 layers of 2 experts; the rest is dense: 4 layers of attention + router, the
  // embedding (32000 + 512 positions) x 1024 and the final RMSNorm.
  const double experts = 4 * 2 * kExpert;                                         // 12,582,912
  const double dense = 4 * (kAttention + kRouter) + (32000.0 + 512) * 1024 + 1024;  // 50,111,488
  const std::vector<IterOp>& tail = p.iteration.tail[0];
  auto reduce = [&](GroupKind g) {
    auto it = std::find_if(tail.begin(), tail.end(), [&](const IterOp& op) {
      return op.kind == IterOpKind::kGradientReduce && op.group == g;
    });
    REQUIRE(it != tail.end());
    return *it;
  };
  CHECK(reduce(GroupKind::kData).bytes == doctest::Approx(2 * dense));
  CHECK(reduce(GroupKind::kExpertData).bytes == doctest::Approx(2 * experts));
  CHECK(reduce(GroupKind::kExpertData).comm == CommKind::kReduceScatter);  // ZeRO-1
  // Adam's 12 B per parameter, sharded over dp 8 (dense) and edp 2 (experts).
  const MemoryBreakdown m = rank_memory(p, {1})[0];
  CHECK(m.optimizer_B == doctest::Approx(12 * (dense / 8 + experts / 2)));  // 150,664,704 B
  CHECK(m.weights_B == doctest::Approx(2 * (dense + experts)));
}

TEST_CASE("moe: an all-to-all across nodes is bound by the inter-node share of each rank") {
  const HardwareModel hw = catalog_cluster("dgx_a100");
  const double S = 256e6;
  const LinkLevel intra = intra_node_level(hw), inter = inter_node_level(hw);
  // 16 ranks, 8 per node: 7/16 of S over NVLink beside 8/16 of S through the NIC share.
  const CommGroup g{GroupKind::kExpert, 16, 8};
  const double local = 7.0 / 16 * S / intra.bandwidth_at(S) + 7 * intra.latency_s;
  const double remote = 8.0 / 16 * S / inter.bandwidth_at(S) + 1 * inter.latency_s;
  CHECK(all_to_all_s(S, g, hw) == doctest::Approx(std::max(local, remote)));
  CHECK(remote > local);  // 25 GB/s of NIC per A100 against 300 GB/s of NVLink
  // Inside one node it is the ring's (n-1)/n S/B + (n-1) alpha.
  const CommGroup node{GroupKind::kExpert, 8, 8};
  CHECK(all_to_all_s(S, node, hw) == doctest::Approx(ring_gather_s(S, 8, intra)));
  CHECK(collective_time(CommKind::kAllToAll, S, g, hw, CollectiveAlgorithm::kAuto).time_s ==
        doctest::Approx(std::max(local, remote)));
}

TEST_CASE("moe: expert parallelism is reported as its own communication") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  const Prediction pr = predict_analytical(p);
  auto it = std::find_if(pr.comms.begin(), pr.comms.end(),
                         [](const CommStat& c) { return c.category == CommCategory::kExpertParallel; });
  REQUIRE(it != pr.comms.end());
  // 4 all-to-alls of 2,097,152 B per layer and micro-batch (1024 token copies of 1024 x 2 B),
  // the forward's all-gather of the 4 ranks' tokens per expert (8 experts x 8 B x 4 = 256 B)
  // and the router weights' all-to-all each way (1024 copies x 2 B); 4 layers, 16 / 8 = 2
  // micro-batches.
  CHECK(it->bytes == doctest::Approx((4 * 2097152.0 + 256 + 2 * 2048) * 4 * 2));
  CHECK(it->group_size == 4);
}

TEST_CASE("moe: overlap_ep hides each pass's all-to-alls behind the other pass's compute") {
  Strategy s = moe_strategy(1, 8);
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 16;  // ep 8 over two nodes' worth of dp: 16 ranks, ep groups inside a node
  const Plan plain = *lower(moe_model(), s, hw);
  s.overlap_ep = true;
  const Plan overlapped = *lower(moe_model(), s, hw);
  const BlockCost a = block_cost(*plain.layer, plain), b = block_cost(*overlapped.layer, overlapped);
  CHECK(b.ep_total_s == doctest::Approx(a.ep_total_s));  // the same traffic
  CHECK(a.ep_exposed_s == doctest::Approx(a.ep_total_s));
  // Forward all-to-alls beside the backward's compute and vice versa; with a compute longer
  // than the traffic only the interference stays: (1 - 1/overlap_slowdown) x the traffic.
  // Megatron-Core's combined 1F1B pairs passes only in its steady state: without pipelining
  // the first forward and the last backward run alone. 16 ranks, dp 16, global batch 16:
  // one micro-batch, so no pass has a partner and everything stays exposed; at global batch
  // 128, 8 micro-batches: 7 of 8 passes paired.
  const double interference = 1 - 1 / hw.device.overlap_slowdown;
  const double compute_f = a.forward_s - a.comm_exposed_s / 2 - a.ep_exposed_s / 2;
  CHECK(compute_f > a.ep_total_s / 2);  // small a2a on NVLink: fully hidden but for interference
  CHECK(overlapped.micro_batches == 1);
  CHECK(ep_paired_share(overlapped) == 0);
  CHECK(b.ep_exposed_s == doctest::Approx(a.ep_total_s));
  s.global_batch = 128;
  const Plan eight = *lower(moe_model(), s, hw);
  REQUIRE(eight.micro_batches == 8);
  CHECK(ep_paired_share(eight) == doctest::Approx(7.0 / 8));
  const BlockCost c = block_cost(*eight.layer, eight);
  CHECK(c.ep_exposed_s == doctest::Approx((7.0 / 8 * interference + 1.0 / 8) * a.ep_total_s));
  CHECK(c.forward_s + c.backward_s ==
        doctest::Approx(a.forward_s + a.backward_s - (a.ep_exposed_s - c.ep_exposed_s)));
}

TEST_CASE("moe: a measured exchange rate beside compute hides rate x the partner's compute") {
  // DeviceSpec::ep_overlap_rate (H100: 0.349, from Megatron-Bridge's EP-overlap nsys A/B: the
  // exchange kernels do 0.349 of their alone-rate work per unit of time beside compute, and
  // the compute is not slowed). Per pass, with the exchange's time C and the other pass's
  // compute P (its kernels less exposed communication): C - rate P exposed when positive, else
  // nothing; the unpaired warm-up and cool-down passes keep all of C. Worked here on the pass
  // sums the block itself reports.
  Strategy s = moe_strategy(1, 8);
  s.global_batch = 128;  // 8 micro-batches: 7 of 8 passes paired
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 16;
  const Plan plain = *lower(moe_model(), s, hw);
  const BlockCost a = block_cost(*plain.layer, plain);
  // Each direction's exchanges (the forward's also gathers the token counts first) and its
  // compute (the kernels that are not collectives).
  auto sum_of = [&](const std::vector<Kernel>& ks, bool exchange) {
    const std::vector<KernelTiming> t = kernel_timings(ks, plain);
    double sum = 0;
    for (size_t i = 0; i < ks.size(); ++i) {
      const bool is_exchange = ks[i].cls == OpClass::kCollective && ks[i].group == GroupKind::kExpert;
      if (exchange && is_exchange) sum += t[i].total_s;
      if (!exchange && ks[i].cls != OpClass::kCollective) sum += t[i].exposed_s;
    }
    return sum;
  };
  const double c_f = sum_of(plain.layer->forward, true), c_b = sum_of(plain.layer->backward, true);
  const double compute_f = sum_of(plain.layer->forward, false);
  const double compute_b = sum_of(plain.layer->backward, false);
  REQUIRE(c_f + c_b == doctest::Approx(a.ep_total_s));
  s.overlap_ep = true;
  for (double rate : {0.349, 0.05}) {
    hw.device.ep_overlap_rate = rate;
    const Plan p = *lower(moe_model(), s, hw);
    REQUIRE(ep_paired_share(p) == doctest::Approx(7.0 / 8));
    const BlockCost b = block_cost(*p.layer, p);
    auto exposed = [&](double c, double partner) {
      return 7.0 / 8 * std::max(c - rate * partner, 0.0) + 1.0 / 8 * c;
    };
    const double expected = exposed(c_f, compute_b) + exposed(c_b, compute_f);
    CHECK(b.ep_exposed_s == doctest::Approx(expected).epsilon(1e-6));
    // The compute keeps its time: only the exposed exchange changes the passes.
    CHECK(b.forward_s + b.backward_s ==
          doctest::Approx(a.forward_s + a.backward_s - (a.ep_exposed_s - b.ep_exposed_s)));
  }
  // At 0.05 the backward's compute (about 2x the forward's) no longer covers the forward's
  // exchange: some of it stays exposed even in the paired passes.
  CHECK(c_f > 0.05 * compute_b);
}

TEST_CASE("moe: the combined 1F1B's unpaired warm-up passes, worked by hand") {
  // Megatron-Core schedules.py: interleaved over v chunks, rank r warms up with
  // (pp - r - 1) x 2 + (v - 1) pp + 1 chunk forwards; over ranks on average pp - 1 + (v - 1) pp
  // + 1. pp 8, v 4, 128 micro-batches: 7 + 24 + 1 = 32 of 512 chunk passes alone.
  Plan p;
  p.pp = 8, p.chunks = 4, p.micro_batches = 128;
  CHECK(ep_paired_share(p) == doctest::Approx(1 - 32.0 / 512));
  // One chunk a rank: pp - r - 1 warm-up forwards, (pp - 1)/2 on average, + 1: pp 4, 8
  // micro-batches: 1 - 2.5/8.
  p.pp = 4, p.chunks = 1, p.micro_batches = 8;
  CHECK(ep_paired_share(p) == doctest::Approx(1 - 2.5 / 8));
  // Fewer micro-batches than warm-up passes: none paired.
  p.micro_batches = 2;
  CHECK(ep_paired_share(p) == 0);
}

TEST_CASE("fp8: linear layers keep the FP8 cast of their input (Transformer Engine), 1 B per element") {
  // Dense layer, tp 1, micro-batch 1 x 512 tokens, hidden 1024, bf16 (2 B) activations.
  const ModelSpec m = testing::small_gpt(4);
  Strategy s;
  s.global_batch = 8;
  fusion_preset("all", &s.fusion);
  s.dtype = DType::kFp8;
  s.fp8_saved_inputs = false;
  HardwareModel h100 = catalog_cluster("dgx_h100");
  h100.num_devices = 8;
  const Plan wide = *lower(m, s, h100);
  s.fp8_saved_inputs = true;
  const Plan narrow = *lower(m, s, h100);
  // Saved inputs of the linear layers: qkv (the norm output) 512 x 1024, fc1 (norm output)
  // 512 x 1024, fc2 (GeLU output) 512 x 4096 each halve; the attention output, saved by the
  // flash attention kernel too, stays whole and gains its FP8 copy (512 x 1024 x 1 B).
  const double halved = (512.0 * 1024 + 512.0 * 1024 + 512.0 * 4096) * 2 / 2;
  const double added = 512.0 * 1024;
  CHECK(wide.layer->saved_activation_B - narrow.layer->saved_activation_B ==
        doctest::Approx(halved - added));
  // bf16 training is untouched by the flag.
  s.dtype = DType::kBf16;
  const Plan bf16 = testing::lower_on_dgx_a100(m, s, 8);
  s.fp8_saved_inputs = false;
  CHECK(testing::lower_on_dgx_a100(m, s, 8).layer->saved_activation_B ==
        doctest::Approx(bf16.layer->saved_activation_B));
}

TEST_CASE("moe: saved activations of the routed experts, per token copy") {
  const Plan p = testing::lower_on_dgx_a100(moe_model(), moe_strategy(1, 4), 8);
  const LayerGraph& g = p.layer->graph;
  const std::vector<bool> saved = saved_tensors(g, Recompute::kNone);
  auto output_of = [&](std::string_view name) {
    auto it = std::find_if(g.ops.begin(), g.ops.end(), [&](const LayerOp& o) { return o.name == name; });
    REQUIRE(it != g.ops.end());
    return it->output;
  };
  // 1024 copies: the dispatched tokens sorted by expert (fc1's input, 1024 x 1024 x 2 B), the
  // gate and up projections (the weighted SwiGLU's input, 1024 x 1024 x 2 B) and its output
  // (fc2's input, 1024 x 512 x 2 B) are kept; the experts' outputs are not (the combine sums
  // them unweighted), nor the unsorted tokens as they arrive (a permutation saves nothing).
  CHECK(saved[output_of("sort_by_expert")]);
  CHECK_FALSE(saved[output_of("ep_dispatch")]);
  CHECK(saved[output_of("expert_fc1")]);
  CHECK(saved[output_of("expert_swiglu")]);
  CHECK_FALSE(saved[output_of("expert_fc2")]);
  CHECK_FALSE(saved[output_of("ep_combine")]);
  CHECK_FALSE(saved[output_of("permute")]);
  CHECK(g.tensors[output_of("sort_by_expert")].saved_bytes == doctest::Approx(1024.0 * 1024 * 2));
  CHECK(g.tensors[output_of("expert_swiglu")].saved_bytes == doctest::Approx(1024.0 * 512 * 2));
}

TEST_CASE("deepseek-v3: 671B parameters, 37.6B active, worked from its configuration") {
  const TransformerSpec t = model_preset("deepseek-v3").transformer;
  // MLA: down 7168 x (1536 + 512 + 64), norms 1536 + 512, q up 1536 x 128 x 192, kv up
  // 512 x 128 x (128 + 128), output 128 x 128 x 7168 = 187,107,328; + 2 RMSNorms of 7168.
  const double attention = 7168.0 * 2112 + 2048 + 1536.0 * 128 * 192 + 512.0 * 128 * 256 +
                           128.0 * 128 * 7168 + 2 * 7168;
  const double expert = 3.0 * 7168 * 2048;                       // 44,040,192
  const double dense = attention + 3.0 * 7168 * 18432;           // 583,483,392
  const double moe = attention + 7168.0 * 256 + expert + 256 * expert;  // 11,507,286,016
  CHECK(dense_layer_params(t) == doctest::Approx(dense));
  CHECK(layer_params(t) == doctest::Approx(moe));
  const double edges = 2 * 129280.0 * 7168 + 7168;  // untied embedding and output, final norm
  CHECK(total_params(model_preset("deepseek-v3")) == doctest::Approx(3 * dense + 58 * moe + edges));
  CHECK(3 * dense + 58 * moe + edges == doctest::Approx(671.026e9).epsilon(1e-5));
  // Active: the shared expert and 8 routed ones per MoE layer: 37.55B (the report's "37B").
  const double active = attention + 7168.0 * 256 + 9 * expert;
  CHECK(3 * dense + 58 * active + edges == doctest::Approx(37.552e9).epsilon(1e-4));
  CHECK(active_layer_params(t) == doctest::Approx(active));
}

TEST_CASE("mla: projections, attention FLOPs and the dense first layers on their stage") {
  ModelSpec m = moe_model();
  TransformerSpec& t = m.transformer;
  t.mla = MlaSpec{.q_lora_rank = 256, .kv_lora_rank = 128, .qk_nope_head_dim = 32,
                  .qk_rope_head_dim = 16, .v_head_dim = 32};
  t.moe.first_dense_layers = 1;
  Strategy s = moe_strategy(1, 4);
  s.pp = 2;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 8;  // tp 1 x pp 2 x dp 4; ep 4 over the 4 ranks of a stage
  const Plan p = *lower(m, s, hw);
  const Block& b = *p.layer;
  // 512 tokens: down projection to 256 + 128 + 16 = 400; up per head: 16 x (32 + 16) = 768
  // query dims from 256, 16 x (32 + 32) = 1024 key/value dims from 128.
  const Kernel& down = kernel(b.forward, b, "mla_down");
  CHECK(down.gemm_m == 512);
  CHECK(down.gemm_n == 400);
  CHECK(down.gemm_k == 1024);
  CHECK(kernel(b.forward, b, "q_up").gemm_n == 768);
  CHECK(kernel(b.forward, b, "q_up").gemm_k == 256);
  CHECK(kernel(b.forward, b, "kv_up").gemm_n == 1024);
  CHECK(kernel(b.forward, b, "kv_up").gemm_k == 128);
  // Q K^T over 48 dims and P V over 32 per head: 2 x 512^2 x 16 x (48 + 32) = 671,088,640.
  CHECK(kernel(b.forward, b, "flash_attention").model_flops == doctest::Approx(671088640.0));
  // The output projection reads 16 heads x 32 value dims.
  CHECK(kernel(b.forward, b, "attn_proj").gemm_k == 512);
  // Layer 0 is dense: stage 0 holds it and one MoE layer, stage 1 two MoE layers.
  REQUIRE(p.dense_layer);
  CHECK(p.stages[0].dense_layers == 1);
  CHECK(p.stages[1].dense_layers == 0);
  CHECK(p.stages[0].expert_params == doctest::Approx(1 * b.expert_params));
  CHECK(p.stages[1].expert_params == doctest::Approx(2 * b.expert_params));
  CHECK(p.dense_layer->expert_params == 0);
  CHECK(p.dense_layer->params == doctest::Approx(dense_layer_params(t)));  // tp 1: all of it
  // MLA needs a fused attention kernel.
  s.fusion.flash_attention = false;
  Expected<Plan> unfused = lower(m, s, hw);
  REQUIRE_FALSE(unfused.has_value());
  CHECK(unfused.error().detail.find("multi-head latent attention runs on a fused attention kernel") == 0);
}

TEST_CASE("moe: Transformer Engine's per-expert GEMMs on 4 streams pay a launch's fixed cost per round") {
  // 8 experts over ep 1: 8 local experts; multi_stream issues 8 cuBLAS GEMMs round robin on
  // 4 streams, 2 rounds (TransformerEngine multi_stream_cublas_gemm, num_compute_streams 4).
  Strategy s = moe_strategy(1, 1);
  s.global_batch = 8;
  const Plan grouped = testing::lower_on_dgx_a100(moe_model(), s, 8);
  s.expert_gemm = ExpertGemm::kMultiStream;
  const Plan streams = testing::lower_on_dgx_a100(moe_model(), s, 8);
  for (std::string_view name : {"expert_fc1", "expert_fc2"}) {
    CHECK(kernel(grouped.layer->forward, *grouped.layer, name).gemm_rounds == 1);
    CHECK(kernel(streams.layer->forward, *streams.layer, name).gemm_rounds == 2);
    CHECK(kernel(streams.layer->backward, *streams.layer, name).gemm_rounds == 2);
  }
  // ep 4: 2 local experts, one round on 2 of the streams.
  s.ep = 4;
  const Plan two = testing::lower_on_dgx_a100(moe_model(), s, 8);
  CHECK(kernel(two.layer->forward, *two.layer, "expert_fc1").gemm_rounds == 1);

  // The time, worked by hand on a device without wave quantization: 1e10 FLOP at 0.8 of
  // 1e15 FLOP/s, half the plateau at 1e9 FLOP a launch. One grouped launch: the curve at 1e10,
  // 0.8 x 10/11; 5 rounds of concurrent launches: the curve at 2e9, 0.8 x 2/3.
  DeviceSpec d = testing::simple_device();
  d.matmul = {0.8, 1e9};
  d.kernel_overhead_s = 0;
  Kernel k;
  k.cls = OpClass::kMatmul;
  k.phase = Phase::kForward;
  k.gemm_m = 1000, k.gemm_n = 1000, k.gemm_k = 250, k.gemm_batch = 20;
  k.matmul_flops = 1e10;
  CHECK(kernel_time(k, d, DType::kBf16).total_s == doctest::Approx(1e10 / (1e15 * 0.8 * 10 / 11)));
  k.gemm_rounds = 5;
  CHECK(kernel_time(k, d, DType::kBf16).total_s == doctest::Approx(1e10 / (1e15 * 0.8 * 2 / 3)));
}

TEST_CASE("moe: TEGroupedMLP runs a non-gated expert activation as eager ops, 12 B an element beyond one pass") {
  // GeLU experts (no gated unit), ep 1, micro-batch 1 x 512 tokens, top-2: 1024 token copies
  // through experts of width 512: 524,288 activation elements. Megatron-Core's TEGroupedMLP
  // (experts.py bias_act_func) fuses only SwiGLU and quick-GeGLU with the router weights; GeLU
  // runs as gelu (read 2, write 2 B), a multiply by the fp32 probabilities (read 2, write 4)
  // and a cast back (read 4, write 2): 16 B where a fused pass moves 4, 12 B and 2 launches
  // beyond it; the backward twice the bytes. A grouped-GEMM stack and SwiGLU stay one pass.
  ModelSpec gelu = moe_model();
  gelu.transformer.activation = Activation::kGeLU;
  Strategy s = moe_strategy(1, 1);
  s.global_batch = 8;
  const Plan fused = testing::lower_on_dgx_a100(gelu, s, 8);
  s.expert_gemm = ExpertGemm::kMultiStream;
  const Plan eager = testing::lower_on_dgx_a100(gelu, s, 8);
  const Plan swiglu = testing::lower_on_dgx_a100(moe_model(), s, 8);
  const double elements = 512.0 * 2 * 512;
  auto act = [](const Plan& p, Phase phase, std::string_view name) {
    return kernel(phase == Phase::kForward ? p.layer->forward : p.layer->backward, *p.layer, name);
  };
  const Kernel f0 = act(fused, Phase::kForward, "expert_gelu"), f1 = act(eager, Phase::kForward, "expert_gelu");
  CHECK(f1.bytes - f0.bytes == doctest::Approx(12 * elements));
  CHECK(f1.launches - f0.launches == 2);
  CHECK(act(eager, Phase::kBackward, "expert_gelu").bytes - act(fused, Phase::kBackward, "expert_gelu").bytes ==
        doctest::Approx(24 * elements));
  Strategy grouped = moe_strategy(1, 1);
  grouped.global_batch = 8;
  CHECK(act(swiglu, Phase::kForward, "expert_swiglu").bytes ==
        doctest::Approx(act(testing::lower_on_dgx_a100(moe_model(), grouped, 8), Phase::kForward, "expert_swiglu").bytes));
}

TEST_CASE("moe: an all-to-all dispatch sorts what a rank receives by local expert and back, DeepEP does not") {
  // ep 1 on one rank: 8 local experts; micro-batch 1 x 512 tokens, top-2: 1024 copies of
  // 1024 x 2 B received. Megatron-Core's alltoall dispatcher (token_dispatcher.py "Permutation
  // 2", sort_chunks_by_idxs) reads and writes them once after the dispatch and once before the
  // combine: 2 x 1024 x 1024 x 2 B each; a permutation's backward is the inverse permutation,
  // the same bytes. DeepEP receives in expert order; one local expert needs no sort.
  Strategy s = moe_strategy(1, 1);
  s.global_batch = 8;
  const Plan a2a = testing::lower_on_dgx_a100(moe_model(), s, 8);
  const double copies = 512.0 * 2 * 1024 * 2;  // bytes of the received copies
  for (std::string_view name : {"sort_by_expert", "unsort_by_expert"}) {
    CHECK(kernel(a2a.layer->forward, *a2a.layer, name).bytes == doctest::Approx(2 * copies));
    CHECK(kernel(a2a.layer->backward, *a2a.layer, name).bytes == doctest::Approx(2 * copies));
  }
  // permute reads the 512 tokens and their routing (top-2 weights and indices, 8 B each) and
  // writes their 1024 copies; its backward the same bytes.
  CHECK(kernel(a2a.layer->backward, *a2a.layer, "permute").bytes ==
        doctest::Approx(kernel(a2a.layer->forward, *a2a.layer, "permute").bytes));
  CHECK(kernel(a2a.layer->forward, *a2a.layer, "permute").bytes == doctest::Approx(512.0 * 1024 * 2 + 512.0 * 2 * 8 + copies));
  auto has = [](const Plan& p, std::string_view name) {
    return std::any_of(p.layer->graph.ops.begin(), p.layer->graph.ops.end(),
                       [&](const LayerOp& op) { return op.name == name; });
  };
  s.ep_dispatch = EpDispatch::kDeepEP;
  CHECK_FALSE(has(testing::lower_on_dgx_a100(moe_model(), s, 8), "sort_by_expert"));
  s.ep_dispatch = EpDispatch::kAllToAll;
  s.ep = 8;  // 8 experts on 8 ranks: one a rank
  CHECK_FALSE(has(testing::lower_on_dgx_a100(moe_model(), s, 8), "unsort_by_expert"));
  CHECK(has(a2a, "unsort_by_expert"));
}

TEST_CASE("moe: expert_gemm in the scenario, its round trip and its error") {
  const Strategy s = read_text(R"({"global_batch": 8, "expert_gemm": "multi_stream"})");
  CHECK(s.expert_gemm == ExpertGemm::kMultiStream);
  CHECK(to_json(s).at("expert_gemm") == "multi_stream");
  CHECK(read_text(R"({"global_batch": 8})").expert_gemm == ExpertGemm::kGrouped);
  CHECK_FALSE(to_json(read_text(R"({"global_batch": 8})")).contains("expert_gemm"));
  const std::string what =
      testing::input_error_message([&] { read_text(R"({"global_batch": 8, "expert_gemm": "cutlass"})"); });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.expert_gemm: \"cutlass\"") != std::string::npos);
  CHECK(what.find("grouped, multi_stream") != std::string::npos);
}

TEST_CASE("moe: DeepEP sends each token once per node holding one of its experts, worked by hand") {
  // DeepSeek-V3's routing: top-8 of 256 experts over an ep group of 64 ranks in 8 nodes of 8
  // (4 experts a rank, 32 a node). A token of t = S/8 bytes (S: every routed copy, what one
  // rank's NCCL all-to-all carries) misses a given rank with C(252,8)/C(256,8) = 0.880066 and
  // a given node with C(224,8)/C(256,8) = 0.338168, so
  //   p_rank = 0.119934, p_node = 0.661832;
  //   DeepEP: remote = 8 x 0.661832 t = 5.29466 t = 0.661832 S (the RDMA stage, once per node,
  //           its own node's copy through the same buffers),
  //           local  = (64 - 8) x 0.119934 t = 6.71628 t = 0.839535 S (NVLink: its own node's
  //           GPUs and the forwards of the tokens it receives);
  //   NCCL:   remote = 56/64 S = 0.875 S, local = 7/64 S = 0.109375 S.
  const CommGroup g{GroupKind::kExpert, 64, 8};
  const double S = 64e6;
  const ExchangeBytes deep = expert_exchange_bytes(S, g, 256, 8, EpDispatch::kDeepEP);
  const ExchangeBytes nccl = expert_exchange_bytes(S, g, 256, 8, EpDispatch::kAllToAll);
  CHECK(deep.remote == doctest::Approx(0.661832 * S).epsilon(1e-5));
  CHECK(deep.local == doctest::Approx(0.839535 * S).epsilon(1e-5));
  CHECK(nccl.remote == doctest::Approx(0.875 * S));
  CHECK(nccl.local == doctest::Approx(0.109375 * S));
  // The time: NCCL's bytes give the plain all-to-all; DeepEP's are bound by the NIC share too
  // (0.66 S at 50 GB/s against 0.84 S at 450 GB/s), a quarter less than NCCL's.
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 64;
  CHECK(exchange_s(nccl, S, g, hw) == doctest::Approx(all_to_all_s(S, g, hw)));
  const LinkLevel inter = inter_node_level(hw);
  CHECK(exchange_s(deep, S, g, hw) ==
        doctest::Approx(deep.remote / inter.bandwidth_at(S) + 7 * inter.latency_s));
  // Top-1: a token has one expert, on one node; NCCL moves (N-1)/N of it off the node, DeepEP's
  // RDMA stage all of it (the own node's share too).
  const ExchangeBytes top1 = expert_exchange_bytes(S, g, 256, 1, EpDispatch::kDeepEP);
  CHECK(top1.remote == doctest::Approx(S));
  CHECK(expert_exchange_bytes(S, g, 256, 1, EpDispatch::kAllToAll).remote == doctest::Approx(7.0 / 8 * S));
  // One node: nothing crosses the network; each token reaches each GPU that needs it once.
  const CommGroup node{GroupKind::kExpert, 8, 8};
  const ExchangeBytes in_node = expert_exchange_bytes(S, node, 256, 8, EpDispatch::kDeepEP);
  CHECK(in_node.remote == 0);
  // p_rank with 32 experts a rank: 1 - C(224,8)/C(256,8) = 0.661832; 7 peers.
  CHECK(in_node.local == doctest::Approx(7 * 0.661832 * S / 8).epsilon(1e-5));
}

TEST_CASE("moe: contiguous routing (AutoModel's fake balanced gate) spans one or two ranks, worked by hand") {
  // Token t goes to experts t k .. t k + k - 1 (mod E); the starts are the multiples of
  // gcd(k, E). k = 8 of 128 experts in ranks of 16: every run [8a, 8a + 7] lies in one rank;
  // of 256 in ranks of 4: in exactly two; in nodes of 32: in one.
  CHECK(contiguous_groups_hit(128, 8, 16) == doctest::Approx(1));
  CHECK(contiguous_groups_hit(256, 8, 4) == doctest::Approx(2));
  CHECK(contiguous_groups_hit(256, 8, 32) == doctest::Approx(1));
  // Unaligned: E = 10, k = 3, two groups of 5; gcd 1, starts 0..9. Runs 0-2, 1-3, 2-4: one
  // group; 3-5, 4-6: two; 5-7, 6-8, 7-9: one; 8-0 and 9-1 wrap from the second group into the
  // first: two. 14 / 10 = 1.4.
  CHECK(contiguous_groups_hit(10, 3, 5) == doctest::Approx(1.4));
  // A run of all experts spans every group once, wrap or not.
  CHECK(contiguous_groups_hit(12, 12, 4) == doctest::Approx(3));
  // DeepEP on Qwen3-30B-A3B's 16 ranks in 2 nodes (128 experts, top-8: 8 a rank, 64 a node):
  // a token reaches H_rank = 1 rank and H_node = 1 node, so p_rank = 1/16, p_node = 1/2:
  //   remote = 2 x 1/2 t (the RDMA stage, the own node's share too), local = (16 - 2) x 1/16 t,
  //   t = S / 8.
  // Random routing: p_rank = 1 - C(120,8)/C(128,8) = 0.412282, p_node = 1 - C(64,8)/C(128,8)
  // = 0.996904: remote 2 x 0.996904 t, local 14 x 0.412282 t = 5.77195 t, 6.6x the run's.
  const CommGroup g{GroupKind::kExpert, 16, 8};
  const double S = 8e6, t = S / 8;
  const ExchangeBytes run = expert_exchange_bytes(S, g, 128, 8, EpDispatch::kDeepEP, MoeRouting::kContiguous);
  CHECK(run.remote == doctest::Approx(t));
  CHECK(run.local == doctest::Approx(14.0 / 16 * t));
  const ExchangeBytes random = expert_exchange_bytes(S, g, 128, 8, EpDispatch::kDeepEP);
  CHECK(random.remote == doctest::Approx(2 * 0.996904 * t).epsilon(1e-5));
  CHECK(random.local == doctest::Approx(5.77195 * t).epsilon(1e-5));
  // NCCL's all-to-all sends every routed copy whatever the routing.
  const ExchangeBytes nccl = expert_exchange_bytes(S, g, 128, 8, EpDispatch::kAllToAll, MoeRouting::kContiguous);
  CHECK(nccl.remote == doctest::Approx(uniform_exchange_bytes(S, g).remote));
  // In a scenario: the name, its round trip, the default left out, and a bad value's error.
  const auto model_text = [](const std::string& moe) {
    return read_model(JsonNode(parse_json_text(R"({"preset": "qwen3-30b-a3b", "moe": )" + moe + "}", "m.json"),
                               "m.json", "model"));
  };
  const ModelSpec m = model_text(R"({"routing": "contiguous"})");
  CHECK(m.transformer.moe.routing == MoeRouting::kContiguous);
  CHECK(to_json(m).at("moe").at("routing") == "contiguous");
  CHECK_FALSE(to_json(model_text("{}")).at("moe").contains("routing"));
  const std::string what = testing::input_error_message([&] { model_text(R"({"routing": "sorted"})"); });
  CAPTURE(what);
  CHECK(what.find("m.json: model.moe.routing: \"sorted\"") != std::string::npos);
  CHECK(what.find("random, contiguous") != std::string::npos);
}

TEST_CASE("moe: DeepSeek-V3's node-limited routing reaches at most 4 of 8 nodes, worked by hand") {
  // 256 experts in 8 groups of 32, a token's 8 experts inside 4 groups, 2 in each (a group
  // scores its top 2: Megatron-Core's group_limited_topk). ep 64 over 8 nodes of 8 ranks: a
  // node holds one group, a rank 4 experts of one group.
  //   p_node = 4/8 = 0.5 (random routing: 0.661832);
  //   p_rank = 4/8 x (1 - C(28,2)/C(32,2)) = 0.5 x (1 - 378/496) = 0.118952 (random 0.119934).
  // DeepEP: remote = 8 x 0.5 t = 4 t (the RDMA stage), local = 56 x 0.118952 t = 6.66129 t,
  // t = S / 8.
  CHECK(group_limited_hit(256, 8, 8, 4, 32) == doctest::Approx(0.5));
  CHECK(group_limited_hit(256, 8, 8, 4, 4) == doctest::Approx(0.5 * (1 - 378.0 / 496)));
  // A node of 128 experts holds 4 whole groups: missed only when the token's 4 groups are the
  // other 4, 1 / C(8,4) = 1/70.
  CHECK(group_limited_hit(256, 8, 8, 4, 128) == doctest::Approx(1 - 1.0 / 70));
  const CommGroup g{GroupKind::kExpert, 64, 8};
  const double S = 64e6, t = S / 8;
  const ExchangeBytes limited =
      expert_exchange_bytes(S, g, 256, 8, EpDispatch::kDeepEP, MoeRouting::kRandom, 8, 4);
  CHECK(limited.remote == doctest::Approx(4 * t));
  CHECK(limited.local == doctest::Approx(56 * 0.5 * (1 - 378.0 / 496) * t));
  // Groups that do not line up with the ranks (6 groups of 256 / 6: not whole) fall back to
  // random routing; so does no limit (group_top_k 0 or all groups).
  const ExchangeBytes random = expert_exchange_bytes(S, g, 256, 8, EpDispatch::kDeepEP);
  CHECK(expert_exchange_bytes(S, g, 256, 8, EpDispatch::kDeepEP, MoeRouting::kRandom, 8, 8).remote ==
        doctest::Approx(random.remote));
  CHECK(expert_exchange_bytes(S, g, 240, 8, EpDispatch::kDeepEP, MoeRouting::kRandom, 6, 4).remote ==
        doctest::Approx(expert_exchange_bytes(S, g, 240, 8, EpDispatch::kDeepEP).remote));
  // The preset carries it; the scenario reads, writes and checks it.
  CHECK(model_preset("deepseek-v3").transformer.moe.group_limited());
  const auto moe_text = [](const std::string& moe) {
    return read_model(JsonNode(parse_json_text(R"({"preset": "qwen3-30b-a3b", "moe": )" + moe + "}", "m.json"),
                               "m.json", "model"));
  };
  const ModelSpec m = moe_text(R"({"groups": 8, "group_top_k": 4})");
  CHECK(to_json(m).at("moe").at("groups") == 8);
  CHECK(to_json(m).at("moe").at("group_top_k") == 4);
  const std::string odd = testing::input_error_message([&] { moe_text(R"({"groups": 3})"); });
  CAPTURE(odd);
  CHECK(odd.find("m.json: model.moe.groups: 3") != std::string::npos);
  CHECK(odd.find("must divide experts (128)") != std::string::npos);
  const std::string uneven = testing::input_error_message([&] { moe_text(R"({"groups": 8, "group_top_k": 3})"); });
  CAPTURE(uneven);
  CHECK(uneven.find("must divide top_k (8)") != std::string::npos);
}

TEST_CASE("moe: ep_dispatch in the scenario, its round trip, its error, and both engines' bytes") {
  const Strategy s = read_text(R"({"global_batch": 8, "ep_dispatch": "hybridep"})");
  CHECK(s.ep_dispatch == EpDispatch::kHybridEP);
  CHECK(to_json(s).at("ep_dispatch") == "hybridep");
  CHECK(read_text(R"({"global_batch": 8, "ep_dispatch": "deepep"})").ep_dispatch == EpDispatch::kDeepEP);
  CHECK_FALSE(to_json(read_text(R"({"global_batch": 8})")).contains("ep_dispatch"));
  const std::string what =
      testing::input_error_message([&] { read_text(R"({"global_batch": 8, "ep_dispatch": "nvshmem"})"); });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.ep_dispatch: \"nvshmem\"") != std::string::npos);
  CHECK(what.find("alltoall, deepep, hybridep") != std::string::npos);

  // The plan's dispatch kernels are costed with the dispatch's bytes: ep 16 over two DGX H100
  // nodes, Qwen3-30B-A3B's top-8 of 128 experts; DeepEP moves fewer bytes off the node.
  ModelSpec m = model_preset("qwen3-30b-a3b");
  m.transformer.layers = 2;
  Strategy st;
  st.ep = 16, st.micro_batch = 1, st.global_batch = 16;
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 16;
  const Plan nccl = *lower(m, st, hw);
  st.ep_dispatch = EpDispatch::kDeepEP;
  const Plan deep = *lower(m, st, hw);
  const BlockCost a = block_cost(*nccl.layer, nccl), b = block_cost(*deep.layer, deep);
  // 8 experts a rank, 64 a node: p_node = 1 - C(64,8)/C(128,8) = 0.996904; two nodes:
  // DeepEP's RDMA stage carries 2 x 0.996904 t = 0.249226 S (the remote node's copy and its
  // own node's through the same buffers), NCCL sends 8/16 S across: about half the time.
  const ExchangeBytes x = expert_exchange_bytes(1.0, deep.ep_group, 128, 8, EpDispatch::kDeepEP);
  CHECK(x.remote == doctest::Approx(0.249226).epsilon(1e-5));
  CHECK(b.ep_total_s < 0.55 * a.ep_total_s);
  CHECK(b.ep_total_s > 0.45 * a.ep_total_s);
}

TEST_CASE("moe: HybridEP all-gathers the routing maps once a layer forward, before its dispatch") {
  // Qwen3-30B-A3B (128 experts, top 8) on two DGX H100 nodes, ep 16, tp 1, micro-batch 1 of
  // 4096 tokens. HybridEP's preprocess all-gathers every EP rank's routing map, a bool a token
  // and expert (DeepEP hybrid-ep executor.cu allgather_routing_map): 4096 x 128 = 524,288 B a
  // rank, 16 x that = 8,388,608 B gathered, in the forward only (the handle serves the combine
  // and the backward). DeepEP's normal kernels and NCCL's all-to-all gather no map.
  ModelSpec m = model_preset("qwen3-30b-a3b");
  m.transformer.layers = 2;
  Strategy st;
  st.ep = 16, st.micro_batch = 1, st.global_batch = 16;
  st.ep_dispatch = EpDispatch::kHybridEP;
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 16;
  const Plan hybrid = *lower(m, st, hw);
  const Block& b = *hybrid.layer;
  // The gather precedes the dispatch, which reads the maps.
  check_gather_before_dispatch(b, "ep_routing_map_gather", 8388608.0);

  // Costed as an all-gather over the EP group, exposed in full without EP overlap: the layer's
  // forward is DeepEP's (same dispatch bytes) plus exactly the gather's time.
  st.ep_dispatch = EpDispatch::kDeepEP;
  const Plan deep = *lower(m, st, hw);
  const Block& d = *deep.layer;
  CHECK(std::none_of(d.forward.begin(), d.forward.end(), [&](const Kernel& k) {
    return d.graph.ops[k.first_op].name == "ep_routing_map_gather";
  }));
  const double gather_s =
      collective_time(CommKind::kAllGather, 8388608.0, hybrid.ep_group, hw, st.collective).time_s;
  CHECK(gather_s > 0);
  const BlockCost h = block_cost(b, hybrid), e = block_cost(d, deep);
  CHECK(h.forward_s == doctest::Approx(e.forward_s + gather_s).epsilon(1e-9));
  CHECK(h.backward_s == doctest::Approx(e.backward_s).epsilon(1e-12));
  CHECK(h.ep_total_s == doctest::Approx(e.ep_total_s + gather_s).epsilon(1e-9));
}

namespace {

// ZeRO-3 of the small MoE on 8 A100 (tp 1, dp 8): ep 4 leaves edp = 8 / 4 = 2 ranks holding
// the same 2 experts of a layer; ep 8 leaves every rank its own expert (edp 1).
Plan moe_zero3(int ep, bool overlap_dp) {
  Strategy s = moe_strategy(1, ep);
  s.zero_stage = 3, s.overlap_dp = overlap_dp;
  return testing::lower_on_dgx_a100(moe_model(), s, 8);
}

struct GroupSums {
  double bytes = 0;
  int repeats = 0, ops = 0;
};
GroupSums sum_zero_ops(const StepProgram& step, IterOpKind kind, GroupKind group) {
  GroupSums g;
  for (const IterOp& op : step.ops) {
    if (op.kind != kind || op.group != group) continue;
    g.bytes += op.bytes, g.repeats += op.repeats, ++g.ops;
  }
  return g;
}

// Per device, by hand (bf16, 2 B a parameter and a gradient): a layer's routed experts 2 x
// 1,572,864 = 3,145,728 parameters; the rest of a layer (attention 4,196,352 with the norms,
// router 8,192) 4,204,544; outside the layers the embedding (32000 + 512) x 1024 and the final
// norm 1024: 33,293,312.
constexpr double kLayerExperts = 2 * kExpert;
constexpr double kLayerRest = kAttention + kRouter;
constexpr double kEdge = (32000.0 + 512) * 1024 + 1024;

}  // namespace

TEST_CASE("moe: ZeRO-3 gathers and reduce-scatters the routed experts over the expert-data group") {
  const Plan p = moe_zero3(4, true);
  REQUIRE(p.edp == 2);
  REQUIRE(p.zero_stage == 3);
  const StageProgram& st = p.iteration.stages[0];
  // Forward: the dense layers' gathers over dp 8 (the root unit with the first layer, then the
  // other three beside the compute), the experts' over edp 2, one per MoE layer.
  const GroupSums dense = sum_zero_ops(st.forward, IterOpKind::kZeroGather, GroupKind::kData);
  const GroupSums experts = sum_zero_ops(st.forward, IterOpKind::kZeroGather, GroupKind::kExpertData);
  CHECK(dense.bytes == doctest::Approx(2 * (kEdge + 4 * kLayerRest)));  // 100,222,976 B
  CHECK(dense.repeats == 4);
  CHECK(experts.bytes == doctest::Approx(2 * 4 * kLayerExperts));       // 25,165,824 B
  CHECK(experts.repeats == 4);
  CHECK(experts.ops == 2);  // the first layer's before the compute, the other three beside it
  // The compute waits for the first layer's gathers: the dense one, then the experts' (the
  // comm stream runs them in order).
  const IterOp& fwd = *std::find_if(st.forward.ops.begin(), st.forward.ops.end(),
                                    [](const IterOp& op) { return op.kind == IterOpKind::kForward; });
  REQUIRE(fwd.deps[0] >= 0);
  CHECK(st.forward.ops[fwd.deps[0]].group == GroupKind::kExpertData);
  CHECK(st.forward.ops[fwd.deps[0]].bytes == doctest::Approx(2 * kLayerExperts));
  // Backward: re-gathered (the root unit stays), then every gradient reduce-scattered once.
  CHECK(sum_zero_ops(st.backward, IterOpKind::kZeroGather, GroupKind::kExpertData).bytes ==
        doctest::Approx(2 * 4 * kLayerExperts));
  CHECK(sum_zero_ops(st.backward, IterOpKind::kZeroGather, GroupKind::kData).bytes ==
        doctest::Approx(2 * 4 * kLayerRest));
  const GroupSums rs_dense = sum_zero_ops(st.backward, IterOpKind::kZeroReduceScatter, GroupKind::kData);
  const GroupSums rs_experts =
      sum_zero_ops(st.backward, IterOpKind::kZeroReduceScatter, GroupKind::kExpertData);
  CHECK(rs_dense.bytes == doctest::Approx(2 * (kEdge + 4 * kLayerRest)));
  CHECK(rs_experts.bytes == doctest::Approx(2 * 4 * kLayerExperts));
  CHECK(rs_experts.repeats == 4);
  // Nothing left for the tail but the optimizer step: no DDP reduction of either group.
  for (const IterOp& op : p.iteration.tail[0]) CHECK(op.kind != IterOpKind::kGradientReduce);
  // Without prefetching the experts' gathers are one op of 4 before the compute.
  const Plan serial = moe_zero3(4, false);
  const GroupSums one =
      sum_zero_ops(serial.iteration.stages[0].forward, IterOpKind::kZeroGather, GroupKind::kExpertData);
  CHECK(one.ops == 1);
  CHECK(one.repeats == 4);
  CHECK(one.bytes == doctest::Approx(2 * 4 * kLayerExperts));
}

TEST_CASE("moe: ZeRO-3 memory shards the experts over edp, the rest over dp, and gathers a layer") {
  // States: weights and gradients 2 B each, Adam 12 B; dense parameters over dp 8, experts
  // over edp 2. ZeRO-3 holds a gathered layer and the prefetched next one (2 x (rest +
  // experts) x 2 B) and the root unit (embedding, final norm) gathered.
  const double dense = 4 * kLayerRest + kEdge, experts = 4 * kLayerExperts;
  const MemoryBreakdown m = rank_memory(moe_zero3(4, true), {1})[0];
  CHECK(m.gradients_B == doctest::Approx(2 * (dense / 8 + experts / 2)));
  CHECK(m.optimizer_B == doctest::Approx(12 * (dense / 8 + experts / 2)));
  CHECK(m.weights_B ==
        doctest::Approx(2 * (dense / 8 + experts / 2) + 2 * 2 * (kLayerRest + kLayerExperts) + 2 * kEdge));
  // ep 8: every rank holds its own expert whole (edp 1): neither sharded nor gathered.
  const Plan own = moe_zero3(8, true);
  REQUIRE(own.edp == 1);
  const double own_experts = 4 * kExpert;  // 1 expert a layer
  const MemoryBreakdown o = rank_memory(own, {1})[0];
  CHECK(o.weights_B == doctest::Approx(2 * (dense / 8 + own_experts) + 2 * 2 * kLayerRest + 2 * kEdge));
  CHECK(o.optimizer_B == doctest::Approx(12 * (dense / 8 + own_experts)));
  const StageProgram& st = own.iteration.stages[0];
  CHECK(sum_zero_ops(st.forward, IterOpKind::kZeroGather, GroupKind::kExpertData).ops == 0);
  CHECK(sum_zero_ops(st.backward, IterOpKind::kZeroReduceScatter, GroupKind::kExpertData).ops == 0);
}

TEST_CASE("moe: ZeRO over a shard group smaller than dp is refused for a mixture of experts") {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 8;
  Strategy s = moe_strategy(1, 4);
  s.zero_stage = 3, s.shard_group = 4;
  Expected<Plan> p = lower(moe_model(), s, hw);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().reason == InfeasibleReason::kExpertParallel);
  CHECK(p.error().detail ==
        "ZeRO-3 over a shard group (shard_group=4) of a mixture-of-experts model is not modelled yet "
        "(which ranks shard the experts is the trainer's choice); shard over all of dp (shard_group 0)");
}

TEST_CASE("optimizer_moments: bf16 moments hold 2 B each, in memory and in the step's traffic") {
  // The MoE of the ZeRO-1 test above (ep 4 on 8 A100: dense states over dp 8, experts over
  // edp 2). Adam with an fp32 master copy: 4 + 4 + 4 = 12 B a parameter with fp32 moments,
  // 4 + 2 + 2 = 8 B with bf16 ones (Megatron-Core's precision-aware optimizer,
  // exp_avg_dtype = exp_avg_sq_dtype = bfloat16); without the master copy (torch.optim.Adam on
  // bf16 parameters: states in the parameters' dtype) 2 + 2 = 4 B.
  const double experts = 4 * 2 * kExpert;
  const double dense = 4 * (kAttention + kRouter) + (32000.0 + 512) * 1024 + 1024;
  const double shard = dense / 8 + experts / 2;
  Strategy s = moe_strategy(1, 4);
  const Plan fp32 = testing::lower_on_dgx_a100(moe_model(), s, 8);
  s.optimizer_moments = MomentDtype::kBf16;
  const Plan bf16 = testing::lower_on_dgx_a100(moe_model(), s, 8);
  s.master_weights_fp32 = false;
  const Plan pure = testing::lower_on_dgx_a100(moe_model(), s, 8);
  CHECK(rank_memory(fp32, {1})[0].optimizer_B == doctest::Approx(12 * shard));
  CHECK(rank_memory(bf16, {1})[0].optimizer_B == doctest::Approx(8 * shard));
  CHECK(rank_memory(pure, {1})[0].optimizer_B == doctest::Approx(4 * shard));
  // The step reads and writes both moments and the master copy, reads the gradient and writes
  // the 16-bit weights (iteration.cpp rank_tail): 2 x 12 + 2 + 2 = 28 B against 2 x 8 + 4 = 20.
  auto step_bytes = [](const Plan& p) {
    for (const IterOp& op : p.iteration.tail[0]) {
      if (op.kind == IterOpKind::kOptimizerStep) return op.bytes;
    }
    return 0.0;
  };
  CHECK(step_bytes(fp32) == doctest::Approx(28 * shard));
  CHECK(step_bytes(bf16) == doctest::Approx(20 * shard));
  // In a scenario: the name, its round trip, and a bad value's error.
  const Strategy r = read_text(R"({"global_batch": 8, "optimizer_moments": "bf16"})");
  CHECK(r.optimizer_moments == MomentDtype::kBf16);
  CHECK(to_json(r).at("optimizer_moments") == "bf16");
  CHECK_FALSE(to_json(read_text(R"({"global_batch": 8})")).contains("optimizer_moments"));
  const std::string what = testing::input_error_message(
      [&] { read_text(R"({"global_batch": 8, "optimizer_moments": "fp8"})"); });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.optimizer_moments: \"fp8\"") != std::string::npos);
  CHECK(what.find("fp32, bf16") != std::string::npos);
}

TEST_CASE("moe: FSDP keeps a gradient in its parameter's dtype and leaves whole experts alone") {
  // FSDP2 with an fp32 reduction (fsdp_copies, grad_reduce_fp32) over the small MoE on 8 A100.
  // The reduce-scatter leaves each sharded gradient in its sharded parameter's dtype: 16-bit
  // where the model is bf16 without a master copy (NeMo AutoModel), fp32 where the sharded
  // parameter is the fp32 master (TorchTitan). A routed expert every rank holds whole (edp 1)
  // is a plain parameter: its gradient in its own dtype too, and FSDP copies none of it.
  const auto fsdp2 = [](int ep, bool master, int pp = 1) {
    Strategy s = moe_strategy(1, ep);
    s.zero_stage = 3, s.fsdp_copies = true, s.grad_reduce_fp32 = true;
    s.master_weights_fp32 = master, s.pp = pp;
    return testing::lower_on_dgx_a100(moe_model(), s, 8);
  };
  const double dense = 4 * kLayerRest + kEdge, experts = 4 * kLayerExperts;
  const Plan automodel = fsdp2(4, false), titan = fsdp2(4, true);
  CHECK(rank_memory(automodel, {1})[0].gradients_B == doctest::Approx(2 * (dense / 8 + experts / 2)));
  CHECK(rank_memory(titan, {1})[0].gradients_B == doctest::Approx(4 * (dense / 8 + experts / 2)));
  // The reduction itself still moves fp32: 4 B a parameter reduce-scattered.
  const StageProgram& st = automodel.iteration.stages[0];
  CHECK(sum_zero_ops(st.backward, IterOpKind::kZeroReduceScatter, GroupKind::kExpertData).bytes ==
        doctest::Approx(4 * experts));
  // ep 8 (edp 1): one whole expert a layer, its gradient 2 B (AutoModel) or 4 B (fp32 parameters).
  const double own = 4 * kExpert;
  CHECK(rank_memory(fsdp2(8, false), {1})[0].gradients_B == doctest::Approx(2 * (dense / 8 + own)));
  CHECK(rank_memory(fsdp2(8, true), {1})[0].gradients_B == doctest::Approx(4 * (dense / 8 + own)));
  // FSDP's copies around a layer's collectives (transformer_layer.cpp fsdp_copies): the gathered
  // bf16 parameters split into place, 2 x W x 2 B forward, W the layer's parameters on the rank:
  // with the experts at edp 2, without them at edp 1.
  const auto copy_bytes = [](const Plan& p) {
    for (const LayerOp& op : p.layer->graph.ops) {
      if (op.name == "fsdp_copy") return op.eager_bytes;
    }
    return 0.0;
  };
  CHECK(copy_bytes(automodel) == doctest::Approx(2 * 2 * (kLayerRest + kLayerExperts)));
  CHECK(copy_bytes(fsdp2(8, false)) == doctest::Approx(2 * 2 * kLayerRest));
  // Under pipelining the stage's gradients accumulate unsharded until its last backward, upcast
  // to the reduction dtype (FSDPParam.to_accumulated_grad_if_needed): 4 B whatever the model's.
  const Plan piped = fsdp2(4, false, 2);
  REQUIRE(piped.zero3_resident);
  CHECK(piped.grad_state_bytes_per_param == 4);
  CHECK(automodel.grad_state_bytes_per_param == 2);
}

namespace stratasim {
namespace {

// Qwen3-30B-A3B cut to two layers, ep 16 over two DGX H100, micro-batch 1 of 4096 tokens.
ModelSpec qwen3_two_layers() {
  ModelSpec m = model_preset("qwen3-30b-a3b");
  m.transformer.layers = 2;
  return m;
}
Strategy ep16() {
  Strategy st;
  st.ep = 16, st.micro_batch = 1, st.global_batch = 16;
  return st;
}
HardwareModel two_dgx_h100() {
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = 16;
  return hw;
}
// Where the op `name` runs in `ks` (ks.size() when it does not).
size_t op_at(const Block& b, const std::vector<Kernel>& ks, std::string_view name) {
  return std::find_if(ks.begin(), ks.end(),
                      [&](const Kernel& k) { return b.graph.ops[k.first_op].name == name; }) -
         ks.begin();
}
bool forward_has(const Plan& p, std::string_view name) {
  return op_at(*p.layer, p.layer->forward, name) < p.layer->forward.size();
}

}  // namespace

TEST_CASE("moe: FP8 experts behind an unaligned dispatcher are padded before fc1 and unpadded after fc2") {
  // Qwen3-30B-A3B (hidden 2048, top 8 of 128) at ep 16 on two DGX H100, micro-batch 1 of 4096
  // tokens, balanced routing: a rank receives 4096 x 8 = 32,768 rows. Megatron-Core's
  // TEGroupedMLP runs Transformer Engine's Fp8Padding on them (read and write 2 B an element:
  // 2 x 32,768 x 2048 x 2 = 268,435,456 B) and Fp8Unpadding on fc2's output (the same), and the
  // backward the inverse copies of the gradients (the same bytes again).
  const ModelSpec m = qwen3_two_layers();
  Strategy st = ep16();
  st.dtype = DType::kFp8, st.fp8_scaling = Fp8Scaling::kCurrent;
  st.ep_dispatch = EpDispatch::kDeepEP;
  st.expert_fp8_padding = true;
  const HardwareModel hw = two_dgx_h100();
  const Plan padded = *lower(m, st, hw);
  const Block& b = *padded.layer;
  const double copy = 2.0 * 32768 * 2048 * 2;
  for (const char* name : {"expert_fp8_pad", "expert_fp8_unpad"}) {
    CAPTURE(name);
    CHECK(kernel(b.forward, b, name).bytes == doctest::Approx(copy));
    CHECK(kernel(b.backward, b, name).bytes == doctest::Approx(copy));
  }
  const auto at = [&](std::string_view name) { return op_at(b, b.forward, name); };
  CHECK(at("ep_dispatch") < at("expert_fp8_pad"));
  CHECK(at("expert_fp8_pad") < at("expert_fc1"));
  CHECK(at("expert_fc2") < at("expert_fp8_unpad"));
  CHECK(at("expert_fp8_unpad") < at("ep_combine"));
  // The layer costs the two copies more each way than without them.
  st.expert_fp8_padding = false;
  const Plan plain = *lower(m, st, hw);
  const BlockCost with = block_cost(b, padded), without = block_cost(*plain.layer, plain);
  CHECK(with.forward_s > without.forward_s);
  CHECK(with.backward_s > without.backward_s);

  // Nothing to pad: HybridEP pads in its own permute, bf16 GEMMs need no alignment, and
  // capacity-padded routing hands over aligned counts.
  auto pads = [&](const Strategy& s, const ModelSpec& model) {
    return forward_has(*lower(model, s, hw), "expert_fp8_pad");
  };
  st.expert_fp8_padding = true;
  CHECK(pads(st, m));
  Strategy hybrid = st;
  hybrid.ep_dispatch = EpDispatch::kHybridEP;
  CHECK_FALSE(pads(hybrid, m));
  Strategy bf16 = st;
  bf16.dtype = DType::kBf16;
  CHECK_FALSE(pads(bf16, m));
  ModelSpec capacity = m;
  capacity.transformer.moe.capacity_factor = 1.0;
  CHECK_FALSE(pads(st, capacity));

  // The scenario key: read, written back, and refused when not a bool.
  CHECK(read_text(R"({"global_batch": 8, "expert_fp8_padding": true})").expert_fp8_padding);
  CHECK(to_json(st).at("expert_fp8_padding") == true);
  CHECK_FALSE(to_json(Strategy{}).contains("expert_fp8_padding"));
  const std::string what =
      testing::input_error_message([&] { read_text(R"({"global_batch": 8, "expert_fp8_padding": 2})"); });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.expert_fp8_padding") != std::string::npos);
  CHECK(what.find("must be true or false") != std::string::npos);
}

TEST_CASE("moe: the dropless all-to-all gathers every EP rank's tokens per expert once a layer forward") {
  // Qwen3-30B-A3B (128 experts) at ep 16 on two DGX H100: Megatron-Core's all-to-all
  // dispatcher all-gathers each rank's int64 count per expert over the expert group before
  // the exchange: 128 x 8 = 1,024 B a rank, 16 x that = 16,384 B gathered, forward only.
  const ModelSpec m = qwen3_two_layers();
  Strategy st = ep16();
  const HardwareModel hw = two_dgx_h100();
  const Plan a2a = *lower(m, st, hw);
  const Block& b = *a2a.layer;
  check_gather_before_dispatch(b, "ep_token_count_gather", 16384.0);
  // Padded to capacity (factor 1, as balanced as the default routing) the sizes are known and
  // nothing is gathered; the dropless forward is longer by exactly the gather's time (exposed).
  ModelSpec dropping = m;
  dropping.transformer.moe.capacity_factor = 1.0;
  const Plan capped = *lower(dropping, st, hw);
  CHECK_FALSE(forward_has(capped, "ep_token_count_gather"));
  const double gather_s = collective_time(CommKind::kAllGather, 16384.0, a2a.ep_group, hw, st.collective).time_s;
  CHECK(gather_s > 0);
  const BlockCost dropless = block_cost(b, a2a), padded = block_cost(*capped.layer, capped);
  CHECK(dropless.forward_s == doctest::Approx(padded.forward_s + gather_s).epsilon(1e-9));
  CHECK(dropless.backward_s == doctest::Approx(padded.backward_s).epsilon(1e-12));
  st.ep_dispatch = EpDispatch::kDeepEP;  // DeepEP exchanges its counts inside its own kernels
  CHECK_FALSE(forward_has(*lower(m, st, hw), "ep_token_count_gather"));
  Strategy one = ep16();  // ep 1: nothing to exchange
  one.ep = 1;
  CHECK_FALSE(forward_has(*lower(m, one, hw), "ep_token_count_gather"));
}

}  // namespace stratasim

namespace stratasim {

TEST_CASE("moe: autograd sums the gradients of the normed input the router and the permutation read") {
  // tp 2 with sequence parallelism: the rank routes its 256 of the 512 tokens, so one gradient
  // of norm2's output is 256 x 1024 x 2 B = 524,288 B. The dense model's norm2 (one reader, its
  // fused fc1) is the baseline: the MoE layer's backward of the same norm adds the sum.
  constexpr double kGrad = 256.0 * 1024 * 2;
  ModelSpec dense = testing::small_gpt(4);
  dense.transformer.activation = Activation::kSwiGLU, dense.transformer.norm = NormKind::kRMSNorm;
  dense.transformer.linear_bias = false;
  auto added = [&](const ModelSpec& m, bool compiled) {
    Strategy s = moe_strategy(2, 4);
    s.fusion.compiled = compiled;
    Strategy plain = s;
    plain.ep = 1;
    const Plan moe = testing::lower_on_dgx_a100(m, s, 8);
    const Plan base = testing::lower_on_dgx_a100(dense, plain, 8);
    const Kernel& a = testing::kernel(moe.layer->backward, *moe.layer, "norm2");
    const Kernel& b = testing::kernel(base.layer->backward, *base.layer, "norm2");
    CHECK(testing::kernel(moe.layer->forward, *moe.layer, "norm2").bytes ==
          doctest::Approx(testing::kernel(base.layer->forward, *base.layer, "norm2").bytes));
    return std::pair{a.bytes - b.bytes, a.launches - b.launches};
  };
  // Eager, router and permutation: one in-place add, read 2 and write 1: 3 x 524,288 B.
  auto [bytes, launches] = added(moe_model(), false);
  CHECK(bytes == doctest::Approx(3 * kGrad));
  CHECK(launches == 1);
  // A shared expert reads it too: two adds.
  ModelSpec shared = moe_model();
  shared.transformer.moe.shared_experts = 1, shared.transformer.moe.shared_ffn_hidden = 256;
  std::tie(bytes, launches) = added(shared, false);
  CHECK(bytes == doctest::Approx(6 * kGrad));
  CHECK(launches == 2);
  // Compiled, the sum is read in the norm's backward: one gradient more, no kernel.
  std::tie(bytes, launches) = added(moe_model(), true);
  CHECK(bytes == doctest::Approx(kGrad));
  CHECK(launches == 0);
}

}  // namespace stratasim
