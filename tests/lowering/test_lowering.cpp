#include <doctest/doctest.h>

#include <optional>
#include <thread>

#include "hardware_models/src/hardware_json.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/transformer_layer.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

// A tiny GPT layer to work by hand: s=4, b=2, h=8, a=2, 16-bit activations.
TransformerSpec tiny() {
  return TransformerSpec{.layers = 4, .hidden = 8, .heads = 2, .seq_len = 4, .vocab = 16};
}

double activations(int tp, bool sp, Recompute rc) {
  LayerShape shape{.micro_batch = 2, .tp = tp, .sequence_parallel = sp};
  LayerGraph g = build_transformer_layer(tiny(), shape);
  return saved_activation_bytes(g, rc);
}

HardwareModel cluster(int devices) {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  return hw;
}

ModelSpec gpt(int layers, int hidden, int heads, int seq, int vocab) {
  ModelSpec m;
  m.name = "gpt";
  m.transformer = TransformerSpec{.layers = layers, .hidden = hidden, .heads = heads,
                                  .seq_len = seq, .vocab = vocab};
  return m;
}

}  // namespace

TEST_CASE("lowering: activation memory per layer follows Korthikanti et al. 2022 Table 2") {
  // sbh = 4*2*8 = 64, as/h = 2*4/8 = 1.
  CHECK(activations(1, false, Recompute::kNone) == 64 * (34 + 5));        // sbh(34 + 5as/h)
  CHECK(activations(2, false, Recompute::kNone) == 64 * (10 + 12 + 2.5)); // sbh(10+24/t+5as/ht)
  CHECK(activations(2, true, Recompute::kNone) == 64 / 2 * (34 + 5));     // sbh/t(34 + 5as/h)
  CHECK(activations(2, false, Recompute::kSelective) == 64 * (10 + 12));  // sbh(10 + 24/t)
  CHECK(activations(2, true, Recompute::kSelective) == 34 * 64 / 2);      // 34 sbh/t
  CHECK(activations(2, false, Recompute::kFull) == 2 * 64);               // 2sbh
  CHECK(activations(2, true, Recompute::kFull) == 2 * 64 / 2);            // 2sbh/t
}

TEST_CASE("lowering: GPT-3 175B layer at tp=8, b=1 matches the closed form to the byte") {
  const TransformerSpec t = model_preset("gpt3-175b").transformer;
  LayerShape shape{.micro_batch = 1, .tp = 8};
  const double s = 2048, b = 1, h = 12288, a = 96, tp = 8;
  const double expected = s * b * h * (10 + 24 / tp + 5 * a * s / (h * tp));
  CHECK(saved_activation_bytes(build_transformer_layer(t, shape), Recompute::kNone) == expected);
}

TEST_CASE("lowering: fusion never increases bytes moved or kernel count") {
  const TransformerSpec t = model_preset("gpt3-175b").transformer;
  FusionPlan none;
  const LayerGraph base = build_transformer_layer(t, LayerShape{.micro_batch = 2, .tp = 4});
  double base_bytes = 0;
  const auto base_kernels = fuse_kernels(base, Recompute::kNone);
  for (const Kernel& k : base_kernels) base_bytes += k.bytes;
  for (const char* preset : {"epilogues", "megatron", "all"}) {
    FusionPlan f;
    REQUIRE(fusion_preset(preset, &f));
    const LayerGraph g = build_transformer_layer(t, LayerShape{.micro_batch = 2, .tp = 4, .fusion = f});
    const auto kernels = fuse_kernels(g, Recompute::kNone);
    double bytes = 0;
    for (const Kernel& k : kernels) bytes += k.bytes;
    CAPTURE(preset);
    CHECK(bytes < base_bytes);
    CHECK(kernels.size() < base_kernels.size());
  }
}

TEST_CASE("lowering: a fused bias+dropout+add kernel moves only its inputs, outputs and mask") {
  const TransformerSpec t = tiny();
  FusionPlan f;
  f.bias_dropout_residual = true;
  const LayerGraph g = build_transformer_layer(t, LayerShape{.micro_batch = 2, .fusion = f});
  const auto kernels = fuse_kernels(g, Recompute::kNone);
  const Kernel& last = kernels.back();
  CHECK(last.fused_ops == 3);
  // Reads the fc2 output (2sbh... = 128 B) and the residual (128 B) and the bias (h*2 = 16 B);
  // writes the sum (128 B) and the dropout mask (64 B, one byte per element).
  CHECK(last.bytes == 128 + 128 + 16 + 128 + 64);
}

TEST_CASE("lowering: infeasible strategies come back as values with a reason") {
  const ModelSpec m = model_preset("gpt3-175b");
  Strategy s;
  s.global_batch = 1536;
  auto check = [&](Strategy st, int devices, InfeasibleReason reason, const std::string& detail) {
    Expected<Plan> p = lower(m, st, cluster(devices));
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().reason == reason);
    CHECK(p.error().detail == detail);
  };
  Strategy a = s;
  a.tp = 5;
  check(a, 5, InfeasibleReason::kTensorParallel, "tp=5 does not divide heads=96");
  Strategy b = s;
  b.pp = 7;
  check(b, 7, InfeasibleReason::kPipelineParallel,
        "pp=7 does not divide layers=96 (set uneven_stages to allow unequal stages)");
  Strategy c = s;
  c.tp = 8, c.pp = 8, c.dp = 4;
  check(c, 1024, InfeasibleReason::kDeviceCount,
        "tp*pp*dp=8*8*4=256 differs from devices=1024");
  Strategy d = s;
  d.tp = 8, d.pp = 8, d.micro_batch = 5;
  check(d, 1024, InfeasibleReason::kBatch,
        "global_batch=1536 is not a multiple of dp*micro_batch=16*5=80");
  Strategy e = s;
  e.tp = 8, e.pp = 8, e.schedule = ScheduleKind::kInterleaved1F1B, e.interleave = 2, e.global_batch = 16 * 12;
  check(e, 1024, InfeasibleReason::kSchedule,
        "interleaved 1F1B needs micro-batches (12) to be a multiple of pp (8)");
  Strategy f = s;
  f.sequence_parallel = true;
  check(f, 1, InfeasibleReason::kSequenceParallel, "sequence parallelism needs tp > 1");
  Strategy g = s;
  g.dtype = DType::kFp8;
  check(g, 1, InfeasibleReason::kPrecision, "fp8 is not supported by A100-SXM4-80GB");
}

TEST_CASE("lowering: ZeRO-2/3 (FSDP) combine with pipeline parallelism, as TorchTitan runs them") {
  // DeepSpeed refuses ZeRO-2/3 with its pipeline engine; FSDP2 + PP (TorchTitan) and
  // Megatron-FSDP run them, so the combination is a strategy, not an error.
  Strategy z;
  z.pp = 2, z.dp = 2, z.zero_stage = 3, z.global_batch = 8, z.micro_batch = 1;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 4;
  const Expected<Plan> plan = lower(model_preset("llama3-8b"), z, hw);
  REQUIRE(plan.has_value());
  CHECK(plan->pp == 2);
  CHECK(plan->dp == 2);
}

TEST_CASE("lowering: uneven stages spread the remainder over the first stages") {
  Strategy s;
  s.pp = 7;
  s.uneven_stages = true;
  s.global_batch = 14;
  Expected<Plan> p = lower(model_preset("gpt3-175b"), s, cluster(7));
  REQUIRE(p.has_value());
  int total = 0;
  for (const VirtualStage& st : p->stages) total += st.layers;
  CHECK(total == 96);
  CHECK(p->stages[0].layers == 14);  // 96 = 5 * 14 + 2 * 13
  CHECK(p->stages[6].layers == 13);
}

TEST_CASE("lowering: an explicit dp equal to the derived one lowers to the same plan") {
  Strategy s;
  s.tp = 4, s.pp = 2, s.global_batch = 64;
  Strategy explicit_dp = s;
  explicit_dp.dp = 2;
  const ModelSpec m = gpt(8, 512, 8, 128, 1000);
  Expected<Plan> a = lower(m, s, cluster(16));
  Expected<Plan> b = lower(m, explicit_dp, cluster(16));
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(a->dp == b->dp);
  REQUIRE(a->layer->forward.size() == b->layer->forward.size());
  for (size_t i = 0; i < a->layer->forward.size(); ++i) {
    CHECK(a->layer->forward[i].bytes == b->layer->forward[i].bytes);
    CHECK(a->layer->forward[i].matmul_flops == b->layer->forward[i].matmul_flops);
  }
}

TEST_CASE("lowering: ResNet-50 with epilogue fusion groups conv+BN+ReLU into one kernel") {
  Strategy s;
  s.global_batch = 256;
  s.micro_batch = 32;
  s.fusion.elementwise_epilogue = true;
  Expected<Plan> fused = lower(model_preset("resnet50"), s, cluster(8));
  s.fusion.elementwise_epilogue = false;
  Expected<Plan> plain = lower(model_preset("resnet50"), s, cluster(8));
  REQUIRE(fused.has_value());
  REQUIRE(plain.has_value());
  // The stem is conv + bn + relu: three kernels unfused, one fused.
  CHECK(fused->layer->forward[0].fused_ops == 3);
  CHECK(plain->layer->forward[0].fused_ops == 1);
  CHECK(fused->layer->forward.size() < plain->layer->forward.size());
  // tp on a graph splits its filters (tests/lowering/test_channel_split.cpp), on one stage.
  Strategy tp = s;
  tp.tp = 2;
  Expected<Plan> split = lower(model_preset("resnet50"), tp, cluster(8));
  REQUIRE(split.has_value());
  CHECK(split->tp_group.size == 2);
  tp.pp = 2;
  Expected<Plan> bad = lower(model_preset("resnet50"), tp, cluster(8));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "tp=2 splits an operator graph's channels (filter parallelism) on one pipeline stage only: use pp=1 "
        "with tp > 1");
}

TEST_CASE("lowering: identical block shapes share one lowered block, different ones do not") {
  Strategy s;
  s.tp = 8, s.pp = 8, s.global_batch = 1536;
  const ModelSpec m = model_preset("gpt3-175b");
  const HardwareModel hw = cluster(1024);
  Expected<Plan> a = lower(m, s, hw);
  Strategy other_pp = s;
  other_pp.pp = 4;  // pp > 1 either way: the layer, embedding and head lower identically
  Expected<Plan> b = lower(m, other_pp, cluster(512));
  Strategy other_fusion = s;
  other_fusion.fusion.flash_attention = true;
  Expected<Plan> c = lower(m, other_fusion, hw);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  REQUIRE(c.has_value());
  CHECK(a->layer.get() == b->layer.get());
  CHECK(a->head.get() == b->head.get());
  CHECK(a->layer.get() != c->layer.get());
  // The shared block is the same as one lowered from scratch: another thread's cache (blocks
  // are memoized per thread) lowers it anew.
  std::optional<Expected<Plan>> fresh;
  std::thread([&] { fresh.emplace(lower(m, s, hw)); }).join();
  REQUIRE(fresh->has_value());
  CHECK((*fresh)->layer.get() != a->layer.get());
  CHECK((*fresh)->layer->saved_activation_B == a->layer->saved_activation_B);
  REQUIRE((*fresh)->layer->forward.size() == a->layer->forward.size());
  REQUIRE((*fresh)->layer->backward.size() == a->layer->backward.size());
  for (size_t i = 0; i < a->layer->forward.size(); ++i) {
    CHECK((*fresh)->layer->forward[i].matmul_flops == a->layer->forward[i].matmul_flops);
    CHECK((*fresh)->layer->forward[i].first_op == a->layer->forward[i].first_op);
  }
}

TEST_CASE("lowering: interleaving needs a pipeline, TP groups must not straddle nodes") {
  const ModelSpec m = model_preset("gpt3-175b");
  Strategy s;
  s.global_batch = 64;
  s.schedule = ScheduleKind::kInterleaved1F1B;
  s.interleave = 2;
  Expected<Plan> a = lower(m, s, cluster(8));
  REQUIRE_FALSE(a.has_value());
  CHECK(a.error().detail == "interleaved 1F1B needs a pipeline (pp > 1); with pp=1 use 1f1b");
  CHECK(a.error().field == "schedule");
  Strategy t;
  t.global_batch = 64;
  t.tp = 3;  // divides 96 heads, but not an 8-GPU node
  Expected<Plan> b = lower(m, t, cluster(24));
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().reason == InfeasibleReason::kTopology);
  CHECK(b.error().detail ==
        "tp=3 groups would straddle nodes of 8 devices (tp must divide the node or be a multiple "
        "of it)");
  Strategy u;
  u.global_batch = 64;
  u.tp = 16;  // two whole nodes: allowed, costed across nodes
  Expected<Plan> c = lower(m, u, cluster(32));
  REQUIRE(c.has_value());
  CHECK(c->tp_group.nodes() == 2);
}

TEST_CASE("lowering: models without dropout save no masks (Llama)") {
  // Without dropout the attention keeps only the softmax output (2as^2b) and the two residual
  // masks (2sbh) disappear: sbh(34 - 2 + 2as/h) for a GPT layer with dropout switched off.
  TransformerSpec t = tiny();
  t.dropout = false;
  LayerGraph g = build_transformer_layer(t, LayerShape{.micro_batch = 2});
  CHECK(saved_activation_bytes(g, Recompute::kNone) == 64 * (34 - 2) + 2 * 2 * 16 * 2);
}
