// Megatron-Core's selective recomputation by module (Strategy::recompute_modules,
// --recompute-modules), worked by hand on tiny layers: s = 4, b = 2 (n = 8 tokens), h = 8,
// 2 heads, 16-bit activations (e = 2), RMSNorm, SwiGLU, no biases, no dropout.
#include <doctest/doctest.h>

#include "sim/core/json_reader.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/transformer_layer.h"
#include "strategies/model/model_spec.h"
#include "strategies/strategy/strategy_json.h"

using namespace stratasim;

namespace {

TransformerSpec llama_like() {
  return TransformerSpec{.layers = 2, .hidden = 8, .heads = 2, .ffn_hidden = 16,
                         .activation = Activation::kSwiGLU, .norm = NormKind::kRMSNorm,
                         .seq_len = 4, .vocab = 16, .tied_embeddings = false,
                         .learned_positions = false, .linear_bias = false, .dropout = false};
}

TransformerSpec moe_like() {
  TransformerSpec t = llama_like();
  t.moe = MoeSpec{.experts = 4, .top_k = 2, .expert_ffn_hidden = 8};
  t.moe.capacity_factor = 1;  // every expert takes exactly its mean load: 16 copies in all
  return t;
}

LayerShape shape(uint8_t modules, int tp = 1, bool sp = false, bool flash = false) {
  LayerShape s{.micro_batch = 2, .tp = tp, .sequence_parallel = sp};
  s.fusion.flash_attention = flash;
  s.fusion.fused_norm = true;  // Megatron-Core's fused norms and SwiGLU (bias_swiglu_impl)
  s.recompute_modules = modules;
  return s;
}

double saved(const TransformerSpec& t, const LayerShape& s, Recompute mode) {
  return saved_activation_bytes(build_transformer_layer(t, s), mode);
}

// The recomputed kernels of the layer's backward, and their forward matmul FLOP.
struct Recomputed {
  int kernels = 0;
  double matmul_flops = 0;
  int collectives = 0, flash = 0;
};

Recomputed recomputed(const TransformerSpec& t, const LayerShape& s) {
  Block b;
  b.graph = build_transformer_layer(t, s);
  lower_block(b, Recompute::kSelective);
  Recomputed r;
  for (const Kernel& k : b.backward) {
    if (k.phase != Phase::kRecompute) continue;
    ++r.kernels;
    r.matmul_flops += k.matmul_flops;
    r.collectives += k.cls == OpClass::kCollective;
    r.flash += k.cls == OpClass::kFlashAttention;
  }
  return r;
}

Strategy strategy_from(const std::string& body) {
  const Json j = parse_json_text(R"({"global_batch": 8, )" + body + "}", "s.json");
  return read_strategy(JsonNode(j, "s.json", "strategy"));
}

}  // namespace

TEST_CASE("recompute modules: mlp drops the dense MLP's inner tensors and reruns fc1, SwiGLU, fc2") {
  const TransformerSpec t = llama_like();
  // Kept without recomputation, inside the MLP: fc1's output (gate and up, n 2f e = 8 x 32 x 2
  // = 512 B, SwiGLU's saved input) and SwiGLU's output (n f e = 256 B, fc2's saved input). The
  // MLP's input (the norm's output, fc1's saved input) is the checkpoint's input: kept.
  CHECK(saved(t, shape(0), Recompute::kSelective) == saved(t, shape(0), Recompute::kNone));
  CHECK(saved(t, shape(0), Recompute::kNone) - saved(t, shape(kModuleMlp), Recompute::kSelective) ==
        512 + 256);
  // Rerun: fc1 2 n h 2f = 2 x 8 x 8 x 32 = 4096 FLOP and fc2 2 n f h = 2048.
  const Recomputed r = recomputed(t, shape(kModuleMlp));
  CHECK(r.kernels == 3);
  CHECK(r.matmul_flops == 4096 + 2048);
  // With tp 2 and SP the MLP's all-gather and reduce-scatter are inside it and rerun too.
  const Recomputed sp = recomputed(t, shape(kModuleMlp, 2, true));
  CHECK(sp.collectives == 2);
  CHECK(sp.matmul_flops == (4096 + 2048) / 2.0);
  // An MoE layer has no dense MLP: "mlp" leaves it alone (it is "moe").
  CHECK(saved(moe_like(), shape(kModuleMlp), Recompute::kSelective) ==
        saved(moe_like(), shape(0), Recompute::kNone));
}

TEST_CASE("recompute modules: layernorm discards both norms' outputs, also as SP shards") {
  const TransformerSpec t = llama_like();
  // No SP: the input norm's and the pre-MLP norm's outputs (n h e = 128 B each), saved by the
  // qkv and fc1 GEMMs, are discarded; their inputs (the residual stream) stay.
  CHECK(saved(t, shape(0), Recompute::kNone) -
            saved(t, shape(kModuleLayernorm), Recompute::kSelective) ==
        2 * 128);
  CHECK(recomputed(t, shape(kModuleLayernorm)).kernels == 2);
  CHECK(recomputed(t, shape(kModuleLayernorm)).matmul_flops == 0);
  // tp 2 with SP: the GEMMs keep the norm outputs as their sequence shards (n h e / t = 64 B),
  // which is what is discarded.
  CHECK(saved(t, shape(0, 2, true), Recompute::kNone) -
            saved(t, shape(kModuleLayernorm, 2, true), Recompute::kSelective) ==
        2 * 64);
}

TEST_CASE("recompute modules: core_attn with a fused attention reruns the kernel and drops its LSE") {
  const TransformerSpec t = llama_like();
  // The fused attention saves Q, K, V (the checkpoint's input) and its output (read by the
  // output projection outside the module): both kept. Only its fp32 log-sum-exp, b a s 4 = 2 x
  // 2 x 4 x 4 = 64 B, goes; the forward kernel runs again (Megatron-Core checkpoints Transformer
  // Engine's DotProductAttention).
  CHECK(saved(t, shape(0, 1, false, true), Recompute::kNone) -
            saved(t, shape(kModuleCoreAttn, 1, false, true), Recompute::kSelective) ==
        64);
  const Recomputed r = recomputed(t, shape(kModuleCoreAttn, 1, false, true));
  CHECK(r.kernels == 1);
  CHECK(r.flash == 1);
  // Unfused, the default module set is Korthikanti's selective recomputation: QK^T, softmax
  // and the attention over V rerun (2 b s^2 h = 512 FLOP each; Korthikanti et al. 2022
  // Sec. 5), and the s x s scores go (the softmax output, 2 a s^2 b = 128 B).
  CHECK(saved(t, shape(0), Recompute::kNone) - saved(t, shape(kModuleCoreAttn), Recompute::kSelective) ==
        128);
  CHECK(recomputed(t, shape(kModuleCoreAttn)).matmul_flops == 2 * 512);
}

TEST_CASE("recompute modules: moe_act discards the experts' activation, moe the whole layer") {
  const TransformerSpec t = moe_like();
  // 8 tokens, top-2: 16 token copies at capacity factor 1. The experts' SwiGLU output, copies x
  // f_e x e = 16 x 8 x 2 = 256 B (read by the experts' down projection), is discarded.
  CHECK(saved(t, shape(0), Recompute::kNone) - saved(t, shape(kModuleMoeAct), Recompute::kSelective) ==
        256);
  CHECK(recomputed(t, shape(kModuleMoeAct)).kernels == 1);
  // The whole MoE layer checkpointed keeps only its input (the pre-MLP norm's output, which the
  // router saves). It drops the top-k routes (copies x (4 B weight + 4 B index) = 128 B), the
  // dispatched tokens (copies x h x e = 256 B, the up projection's input), the up projection's
  // output (copies x 2 f_e x e = 512 B) and the activation (256 B).
  CHECK(saved(t, shape(0), Recompute::kNone) - saved(t, shape(kModuleMoe), Recompute::kSelective) ==
        128 + 256 + 512 + 256);
  // Rerun: the router (2 n h E = 2 x 8 x 8 x 4 = 512 FLOP), the experts' up (2 x 16 x 16 x 8 =
  // 4096) and down (2 x 16 x 8 x 8 = 2048) projections, and both all-to-alls (ep 1: free).
  const Recomputed r = recomputed(t, shape(kModuleMoe));
  CHECK(r.matmul_flops == 512 + 4096 + 2048);
  CHECK(r.collectives == 2);
}

TEST_CASE("recompute modules: mla_up_proj discards MLA's up projections and RoPE output") {
  TransformerSpec t = llama_like();
  t.mla = MlaSpec{.q_lora_rank = 4, .kv_lora_rank = 4, .qk_nope_head_dim = 4,
                  .qk_rope_head_dim = 2, .v_head_dim = 4};
  t.rotary = true;
  // Kept without recomputation: the RoPE output the fused attention reads, n a (2 (d_nope +
  // d_rope) + d_v) e = 8 x 2 x 16 x 2 = 512 B. The up projections' inputs (the normed
  // low-rank q and kv, their weight gradients' inputs) stay.
  CHECK(saved(t, shape(0, 1, false, true), Recompute::kNone) -
            saved(t, shape(kModuleMlaUpProj, 1, false, true), Recompute::kSelective) ==
        512);
  // Rerun: q_up (2 n r_q a (d_nope + d_rope) = 2 x 8 x 4 x 12 = 768 FLOP), kv_up (2 n r_kv a
  // (d_nope + d_v) = 2 x 8 x 4 x 16 = 1024) and the RoPE op.
  const Recomputed r = recomputed(t, shape(kModuleMlaUpProj, 1, false, true));
  CHECK(r.kernels == 3);
  CHECK(r.matmul_flops == 768 + 1024);
}

TEST_CASE("recompute modules: read from JSON, written back, and refused where they cannot apply") {
  const Strategy s = strategy_from(R"("recompute": "selective", "recompute_modules": ["mla_up_proj", "mlp"])");
  CHECK(s.recompute_modules == (kModuleMlaUpProj | kModuleMlp));
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(recompute_label(s) == "selective(mla_up_proj,mlp)");
  CHECK(strategy_from(R"("recompute": "selective")").recompute_modules == kModuleCoreAttn);
  CHECK(recompute_label(strategy_from(R"("recompute": "selective")")) == "selective");
  CHECK_THROWS_WITH_AS(strategy_from(R"("recompute": "full", "recompute_modules": ["mlp"])"),
                       doctest::Contains("s.json: strategy.recompute_modules: [\"mlp\"] applies to "
                                         "recompute \"selective\" only"),
                       InputError);
  CHECK_THROWS_WITH_AS(strategy_from(R"("recompute": "selective", "recompute_modules": ["attn"])"),
                       doctest::Contains("strategy.recompute_modules[0]: \"attn\""), InputError);
  CHECK_THROWS_WITH_AS(strategy_from(R"("recompute": "selective", "recompute_modules": ["mlp", "mlp"])"),
                       doctest::Contains("strategy.recompute_modules[1]: \"mlp\" names a module twice"),
                       InputError);
  CHECK_THROWS_WITH_AS(strategy_from(R"("recompute": "selective", "recompute_modules": [])"),
                       doctest::Contains("must list at least one module"), InputError);
}

TEST_CASE("qk_norm: Qwen3's norms on the query and key heads, worked by hand") {
  // The tiny layer's q and k are 8 wide each: n (q + kv) = 8 x 16 = 128 elements. The norms
  // keep their input (the projection's q and k, 256 B) for their backward; without them the
  // projection's output is not kept (RoPE and the unfused attention keep their own).
  TransformerSpec t = llama_like();
  t.rotary = true;
  TransformerSpec normed = t;
  normed.qk_norm = true;
  LayerShape fused = shape(0);
  fused.fusion.fused_norm = true;
  CHECK(saved(normed, fused, Recompute::kNone) - saved(t, fused, Recompute::kNone) == 256);
  // Fused (TENorm): two kernels reading q, k, v (the whole projection, 8 x 24 x 2 = 384 B),
  // writing it (384 B) and reading two 4-wide gains (16 B).
  auto kernel_of = [](const LayerGraph& g) {
    for (const Kernel& k : fuse_kernels(g, Recompute::kNone)) {
      if (g.ops[k.first_op].name == "qk_norm") return k;
    }
    FAIL("no qk_norm kernel");
    return Kernel{};
  };
  const Kernel k = kernel_of(build_transformer_layer(normed, fused));
  CHECK(k.bytes == 384 + 384 + 16);
  CHECK(k.launches == 2);
  // Eager: each norm is six kernels through fp32 (2e + 28 more bytes an element).
  LayerShape unfused = shape(0);
  unfused.fusion.fused_norm = false;
  const Kernel eager = kernel_of(build_transformer_layer(normed, unfused));
  CHECK(eager.bytes == 384 + 384 + 16 + 128 * (2 * 2 + 28));
  CHECK(eager.launches == 12);
  // Two gains of one head's width more per layer.
  CHECK(layer_params(normed) - layer_params(t) == 2 * 4);
}
