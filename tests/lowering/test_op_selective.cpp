// TorchTitan's per-op selective activation checkpointing (Recompute::kOpSelective) and fp32
// gradient reduction, worked out by hand on a GPT layer.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

Plan gpt_plan(Recompute r, bool fp32_reduce = false) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1, s.recompute = r, s.grad_reduce_fp32 = fp32_reduce;
  fusion_preset("all", &s.fusion);  // flash attention: the attention core is one SDPA op
  return testing::lower_on_dgx_a100(testing::small_gpt(4), s, 8);
}

// TorchTitan's Llama layer in small: GQA with 4 of 16 heads for k and v (kv width 256), SwiGLU
// with ffn 2048, RMSNorm, rotary, no biases, no dropout.
ModelSpec llama_layer_model() {
  ModelSpec m = testing::small_gpt(4);
  TransformerSpec& t = m.transformer;
  t.kv_heads = 4, t.ffn_hidden = 2048, t.activation = Activation::kSwiGLU;
  t.norm = NormKind::kRMSNorm, t.rotary = true, t.linear_bias = false, t.dropout = false;
  return m;
}

Strategy op_selective_strategy() {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1, s.recompute = Recompute::kOpSelective;
  fusion_preset("all", &s.fusion);
  return s;
}

double recomputed_matmul_flops(const Block& b) {
  double f = 0;
  for (const Kernel& k : b.backward) {
    if (k.phase == Phase::kRecompute && k.cls == OpClass::kMatmul) f += k.matmul_flops;
  }
  return f;
}

}  // namespace

TEST_CASE("op-selective recomputation recomputes every other GEMM, never the attention") {
  const Plan op = gpt_plan(Recompute::kOpSelective);
  const Block& b = *op.layer;
  // The policy's mm counter runs over the model's nn.Linear calls: wq, wk, wv, wo, fc1, fc2
  // (GELU MLP: one up projection). Per token (b s = 512 tokens, h = 1024; 2 FLOP per
  // multiply-add): wq, wk, wv, wo 2 h^2 each, fc1 and fc2 8 h^2. Saved: the 1st, 3rd and 5th
  // (wq, wv, fc1); recomputed: wk, wo, fc2 = (2 + 2 + 8) h^2 of 24 h^2 per token.
  const double tokens = 512, h = 1024;
  CHECK(recomputed_matmul_flops(b) == doctest::Approx(12 * h * h * tokens));
  for (const Kernel& k : b.backward) {
    if (k.phase == Phase::kRecompute) CHECK(k.cls != OpClass::kFlashAttention);
  }
  // Between none and full in recomputation and in saved activations.
  const Plan none = gpt_plan(Recompute::kNone), full = gpt_plan(Recompute::kFull);
  CHECK(recomputed_matmul_flops(*none.layer) == 0);
  CHECK(recomputed_matmul_flops(*full.layer) == doctest::Approx(24 * h * h * tokens));
  CHECK(b.saved_activation_B < none.layer->saved_activation_B);
  CHECK(b.saved_activation_B > full.layer->saved_activation_B);
  // It saves the layer input (b s h x 2 B), q and v of the qkv GEMM's output (2 b s h), the
  // fc1 output (4 b s h) and the attention output (b s h) with its softmax statistics
  // (heads x b s x 4 B = 32 KiB): 8 b s h x 2 B and the statistics.
  CHECK(b.saved_activation_B >= 8 * tokens * h * 2);
  CHECK(b.saved_activation_B <= 8 * tokens * h * 2 + 64 * 1024);
}

TEST_CASE("op-selective on a Llama layer: the q|k|v and gate|up GEMMs count as their separate linears") {
  // TorchTitan's Llama: wq, wk, wv, wo, w1 (gate), w3 (up), w2. GQA with 4 of 16 heads for k
  // and v (kv width 256), ffn 2048, h 1024, 512 tokens. Saved: wq, wv, w1, w2 (odd counts);
  // recomputed: wk (2 h 256), wo (2 h^2), w3 (2 h 2048) per token.
  const ModelSpec m = llama_layer_model();
  Strategy s = op_selective_strategy();
  const Plan p = testing::lower_on_dgx_a100(m, s, 8);
  const double tokens = 512, h = 1024;
  CHECK(recomputed_matmul_flops(*p.layer) ==
        doctest::Approx((2 * h * 256 + 2 * h * h + 2 * h * 2048) * tokens));
  // The recomputed part of q|k|v is the k projection alone: its GEMM is 256 columns wide.
  bool found_k = false;
  for (const Kernel& k : p.layer->backward) {
    if (k.phase == Phase::kRecompute && k.cls == OpClass::kMatmul && std::abs(k.gemm_n - 256) < 1e-6) found_k = true;
  }
  CHECK(found_k);
  // Saved per token: input h, q h, v 256, attention output h, gate 2048, w2 output h
  // = 6400 elements x 2 B, plus the attention's softmax statistics (16 heads x 4 B).
  CHECK(p.layer->saved_activation_B >= 6400 * 2 * tokens);
  CHECK(p.layer->saved_activation_B <= 6400 * 2 * tokens + 16 * 4 * tokens * 2);
}

TEST_CASE("op-selective under torch.compile keeps only the policy's outputs the backward reads") {
  // The Llama layer above. Eager selective checkpointing caches every MUST_SAVE output
  // (torch/utils/checkpoint.py _CachingTorchDispatchMode): 6400 elements per token. Compiled,
  // AOTAutograd's partitioner keeps only what the backward reads: q (RoPE then the attention's
  // backward), v (the attention's), gate (SwiGLU's), the attention output (the attention's and
  // wo's weight gradient); w2's output feeds the residual add alone, whose backward reads
  // nothing: 6400 - 1024 = 5376 elements per token, 512 tokens x 1024 x 2 B less.
  const ModelSpec m = llama_layer_model();
  Strategy s = op_selective_strategy();
  const Plan eager = testing::lower_on_dgx_a100(m, s, 8);
  s.fusion.compiled = true;
  const Plan compiled = testing::lower_on_dgx_a100(m, s, 8);
  const double tokens = 512, h = 1024;
  CHECK(eager.layer->saved_activation_B - compiled.layer->saved_activation_B == doctest::Approx(tokens * h * 2));
  // Nothing more is recomputed for it: the backward never needs w2's output.
  CHECK(recomputed_matmul_flops(*compiled.layer) == doctest::Approx(recomputed_matmul_flops(*eager.layer)));
  // Without recomputation there is no policy to prune.
  s.recompute = Recompute::kNone;
  const Plan none_compiled = testing::lower_on_dgx_a100(m, s, 8);
  s.fusion.compiled = false;
  CHECK(none_compiled.layer->saved_activation_B ==
        doctest::Approx(testing::lower_on_dgx_a100(m, s, 8).layer->saved_activation_B));
  // FP8 linears under the policy keep the same 16-bit GEMM outputs: the policy caches no FP8
  // cast, whatever the linear layer itself saves (fp8_saved_inputs).
  s.recompute = Recompute::kOpSelective;
  s.dtype = DType::kFp8;
  s.fp8_saved_inputs = true;
  CHECK(testing::lower_on("dgx_h100", m, s, 8).layer->saved_activation_B ==
        doctest::Approx(eager.layer->saved_activation_B));
  // The fusion key is read and written back.
  const Strategy read = read_strategy(JsonNode(
      parse_json_text(R"({"global_batch": 8, "fusion": {"preset": "all", "compiled": true}})", "s.json"), "s.json", "strategy"));
  CHECK(read.fusion.compiled);
  CHECK(to_json(read).at("fusion").at("compiled") == true);
  CHECK(read_strategy(JsonNode(to_json(read), "rt", "strategy")) == read);
  CHECK_FALSE(to_json(Strategy{}).at("fusion").contains("compiled"));
}

TEST_CASE("op_selective and grad_reduce_fp32 are strategy keys, fp32 reduction doubles the bytes") {
  const Json j = parse_json_text(
      R"({"global_batch": 8, "recompute": "op_selective", "grad_reduce_fp32": true})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.recompute == Recompute::kOpSelective);
  CHECK(s.grad_reduce_fp32);
  CHECK(to_json(s).at("recompute") == "op_selective");
  // DDP over 8 ranks: the gradient all-reduce moves 4 B per parameter instead of 2.
  const Plan bf16 = gpt_plan(Recompute::kNone), fp32 = gpt_plan(Recompute::kNone, true);
  const IterOp& a = bf16.iteration.tail[0][0];
  const IterOp& b = fp32.iteration.tail[0][0];
  REQUIRE(a.kind == IterOpKind::kGradientReduce);
  CHECK(a.bytes == doctest::Approx(bf16.iteration.rank_params[0] * 2));
  CHECK(b.bytes == doctest::Approx(fp32.iteration.rank_params[0] * 4));
}

TEST_CASE("eager RMSNorm and rotary embedding move their fp32 intermediates, fused ones do not") {
  // A Llama-style layer (RMSNorm, RoPE), b s = 512 tokens, h = 1024, 16 heads (MHA), bf16.
  auto layer_of = [](bool fused, bool complex_rope = false) {
    ModelSpec m = testing::small_gpt(4);
    TransformerSpec& t = m.transformer;
    t.norm = NormKind::kRMSNorm, t.activation = Activation::kSwiGLU, t.rotary = true;
    t.learned_positions = false, t.linear_bias = false, t.dropout = false;
    Strategy s;
    s.global_batch = 8;
    s.fusion.flash_attention = true;
    s.fusion.fused_norm = fused;
    s.fusion.complex_rope = complex_rope;
    return testing::lower_on_dgx_a100(m, s, 8);
  };
  const Plan eager = layer_of(false), fused = layer_of(true), compiled = layer_of(true, true);
  auto kernel = [](const Plan& p, std::string_view name) {
    for (const Kernel& k : p.layer->forward) {
      if (p.layer->graph.ops[k.first_op].name == name) return k;
    }
    FAIL("no kernel " << name);
    return Kernel{};
  };
  const double tokens = 512, h = 1024, e = 2;
  // RMSNorm: fused reads and writes 2 bytes per element (+ its weight); eager also moves
  // 4e + 28 - 2e = 2e + 28 = 32 bytes per element through fp32 intermediates, in 6 kernels.
  CHECK(kernel(eager, "norm1").bytes - kernel(fused, "norm1").bytes ==
        doctest::Approx(tokens * h * (2 * e + 28)));
  CHECK(kernel(eager, "norm1").launches == 6);
  CHECK(kernel(fused, "norm1").launches == 1);
  // RoPE on q and k (2 h per token): eager adds 16 bytes per element and 4 kernels.
  CHECK(kernel(eager, "rope").bytes - kernel(fused, "rope").bytes ==
        doctest::Approx(16 * tokens * 2 * h));
  CHECK(kernel(eager, "rope").launches == 5);
  // Complex-valued RoPE under torch.compile (complex_rope): the norm fuses, the rope's complex
  // multiply stays an ATen kernel between its casts, as eager.
  CHECK(kernel(compiled, "norm1").bytes == doctest::Approx(kernel(fused, "norm1").bytes));
  CHECK(kernel(compiled, "rope").bytes == doctest::Approx(kernel(eager, "rope").bytes));
  CHECK(kernel(compiled, "rope").launches == 5);
  // Read from a scenario's fusion and written back; absent when off.
  const Json j = parse_json_text(R"({"global_batch": 8, "fusion": {"preset": "all", "complex_rope": true}})", "s.json");
  const Strategy read = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(read.fusion.complex_rope);
  CHECK(read.fusion.fused_norm);
  CHECK(to_json(read).at("fusion").at("complex_rope") == true);
  CHECK_FALSE(to_json(Strategy{}).at("fusion").contains("complex_rope"));
  // Activations saved for the backward: the norms' and the rope's do not change (the attention
  // saves the rotated q, k, v); the eager SwiGLU keeps silu's output for mul's backward, n f e
  // = 512 x 4096 x 2 B more (transformer_layer.cpp eager_swiglu; test_eager_swiglu.cpp).
  CHECK(eager.layer->saved_activation_B - fused.layer->saved_activation_B ==
        doctest::Approx(tokens * 4 * h * e));
}

TEST_CASE("explicit first/last stage layers balance the embedding and the head") {
  // 32 layers, pp 4: first 6, last 6, the two middle stages 10 each (Megatron's
  // decoder_first/last_pipeline_num_layers).
  const ModelSpec m = testing::small_gpt(32);
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 8;
  Strategy s;
  s.pp = 4, s.global_batch = 8, s.first_stage_layers = 6, s.last_stage_layers = 6;
  Expected<Plan> p = lower(m, s, hw);
  REQUIRE(p.has_value());
  std::vector<int> layers, first;
  for (const VirtualStage& st : p->stages) layers.push_back(st.layers), first.push_back(st.first_layer);
  CHECK(layers == std::vector<int>{6, 10, 10, 6});
  CHECK(first == std::vector<int>{0, 6, 16, 26});
  // 6 + 7 leave 19 for 2 stages: refused unless uneven_stages (then 10 and 9).
  s.last_stage_layers = 7;
  Expected<Plan> bad = lower(m, s, hw);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().detail ==
        "2 middle stages do not divide the other 19 layers (set uneven_stages to allow unequal stages)");
  s.uneven_stages = true;
  Expected<Plan> uneven = lower(m, s, hw);
  REQUIRE(uneven.has_value());
  CHECK(uneven->stages[1].layers == 10);
  CHECK(uneven->stages[2].layers == 9);
  // More than there are layers: refused with the counts.
  s.first_stage_layers = 30;
  Expected<Plan> over = lower(m, s, hw);
  REQUIRE_FALSE(over.has_value());
  CHECK(over.error().detail ==
        "first_stage_layers=30 and last_stage_layers=7 leave -5 of 32 layers for 2 other stages");
}

namespace {

// small_gpt (4 layers) on a DGX A100 at micro-batch 1 with the "all" fusion preset and the
// loss fused or eager, as Megatron's ops or not.
Plan plan_with_loss(bool fused_loss, bool megatron_ops, int tp = 1, bool loss_parallel = false) {
  Strategy s;
  s.global_batch = 8, s.micro_batch = 1, s.tp = tp;
  fusion_preset("all", &s.fusion);
  s.fusion.fused_loss = fused_loss;
  s.fusion.megatron_loss_ops = megatron_ops;
  s.fusion.loss_parallel = loss_parallel;
  return testing::lower_on_dgx_a100(testing::small_gpt(4), s, 8);
}

const Kernel& cross_entropy(const Plan& p, Phase phase) {
  return testing::kernel(phase == Phase::kForward ? p.head->forward : p.head->backward, *p.head,
                         "cross_entropy");
}

}  // namespace

TEST_CASE("an eager cross-entropy moves and holds fp32 copies of the logits, a fused one does not") {
  // small_gpt: micro-batch 1 x seq 512 = 512 tokens, vocab 32000, tp 1: n V = 16,384,000
  // logits. TorchTitan's F.cross_entropy(pred.float()) per logit: the forward casts (read 2,
  // write 4 B) and log_softmax reads the fp32 copy once more (4 B): 10 B beyond a fused
  // kernel; the backward moves twice the forward's bytes. At the backward's start the fp32
  // output gradient and the fp32 input gradient (4 + 4 B) are live beside the saved
  // log-probabilities.
  // Lowered one after the other: the block cache must tell them apart.
  const Plan fused = plan_with_loss(true, false), eager = plan_with_loss(false, false);
  auto ce = cross_entropy;
  const double logits = 512.0 * 32000;
  CHECK(ce(eager, Phase::kForward).bytes - ce(fused, Phase::kForward).bytes ==
        doctest::Approx(10 * logits));
  CHECK(ce(eager, Phase::kBackward).bytes - ce(fused, Phase::kBackward).bytes ==
        doctest::Approx(20 * logits));
  CHECK(ce(eager, Phase::kForward).launches == 5);
  CHECK(ce(fused, Phase::kForward).launches == 1);
  CHECK(eager.head->peak_transient_B == doctest::Approx(8 * logits));
  CHECK(fused.head->peak_transient_B == 0);
  // No recomputation, so the layer adds no transient: the last stage's transient is the loss's.
  CHECK(predict_analytical(eager).rank_memory.back().transient_B == doctest::Approx(8 * logits));
  CHECK(predict_analytical(fused).rank_memory.back().transient_B == 0);
  // The caching allocator (test_allocator_replay.cpp): the bf16 logits' 2 B hole takes none of
  // the 4 B gradients, so the reserved view holds 2 B a logit beyond the tensors; reserved, not
  // allocated. A fused loss leaves none.
  CHECK(eager.head->allocator_slack_B == doctest::Approx(2 * logits));
  const MemoryBreakdown m = predict_analytical(eager).rank_memory.back();
  CHECK(m.fragmentation_B == doctest::Approx(2 * logits));
  CHECK(m.reserved() - m.allocated() == doctest::Approx(m.workspace_B + 2 * logits));
  CHECK(fused.head->allocator_slack_B == 0);
  CHECK(predict_analytical(fused).rank_memory.back().fragmentation_B == 0);
}

TEST_CASE("PyTorch's loss_parallel: eager cross-entropy on vocab-sharded logits, 38 B per logit each way, 12 B held") {
  // tp 2: each rank holds 512 tokens x 16,000 of the 32,000 logits. torch/distributed/tensor/
  // parallel/loss.py, per local logit: forward cast (read 2, write 4), max (4), shift (8), exp
  // (8), sum (4), minus the log-sum (8) = 38 B where a fused pass reads 4: 34 B beyond it, in
  // six kernels beyond its one. Backward (nll and log_softmax fused): zeros (4), exp(x) (8),
  // the sum of the two (12), times the output gradient (8), cast back (6) = 38 B, the
  // forward's. Held at its peak beside the saved log-probabilities: the zeros, exp(x) and
  // their sum, 12 B fp32, where the unsharded eager loss (tp 1, above) holds 8.
  const Plan fused = plan_with_loss(true, false, 2), sharded = plan_with_loss(false, false, 2, true);
  auto ce = cross_entropy;
  const double logits = 512.0 * 16000;
  CHECK(ce(sharded, Phase::kForward).bytes - ce(fused, Phase::kForward).bytes == doctest::Approx(34 * logits));
  CHECK(ce(sharded, Phase::kBackward).bytes == doctest::Approx(ce(sharded, Phase::kForward).bytes));
  CHECK(ce(sharded, Phase::kForward).launches == 7);
  CHECK(sharded.head->peak_transient_B == doctest::Approx(12 * logits));
  // Replayed through the caching allocator: [0,2) logits, [2,6) fp32 copy, [6,10) shifted,
  // [10,14) exp (freed), the log-probabilities in its place; backward: zeros [0,4) and exp(x)
  // [4,8) in the 10 B hole, their sum beyond the top [14,18): 18 reserved, 16 allocated.
  CHECK(sharded.head->allocator_slack_B == doctest::Approx(2 * logits));
  CHECK(plan_with_loss(false, false, 1).head->peak_transient_B == doctest::Approx(8 * 512.0 * 32000));
  // Without loss_parallel the sharded eager loss stays the plain one (8 B held), and with tp 1
  // loss_parallel changes nothing.
  CHECK(plan_with_loss(false, false, 2).head->peak_transient_B == doctest::Approx(8 * logits));
  CHECK(plan_with_loss(false, false, 1, true).head->peak_transient_B == doctest::Approx(8 * 512.0 * 32000));
  // Read and written back; refused with a fused loss, naming the rule.
  auto read = [](const char* fusion) {
    const Json j = parse_json_text(std::string(R"({"global_batch": 8, "fusion": )") + fusion + "}", "s.json");
    return read_strategy(JsonNode(j, "s.json", "strategy"));
  };
  CHECK(read(R"({"loss_parallel": true})").fusion.loss_parallel);
  CHECK(to_json(read(R"({"loss_parallel": true})")).at("fusion").at("loss_parallel") == true);
  CHECK_FALSE(to_json(read(R"({"preset": "all"})")).at("fusion").contains("loss_parallel"));
  CHECK_THROWS_WITH_AS(read(R"({"fused_loss": true, "loss_parallel": true})"),
                       doctest::Contains("s.json: strategy.fusion.loss_parallel: true asks for PyTorch's loss_parallel with fused_loss"),
                       InputError);
}

TEST_CASE("Megatron's vocab-parallel cross-entropy as its separate ops: 38 B per logit forward, 14 B backward") {
  // megatron/core/tensor_parallel/cross_entropy.py on logits.float(), per logit: cast (read 2,
  // write 4), max (4), subtract in place (8), exp in place (8), sum (4), divide in place (8) =
  // 38 B in six kernels; backward: scale the saved softmax in place (8), cast back (read 4,
  // write 2) = 14 B. A fused pass reads the fp32 logits once (4 B) and its backward moves
  // twice that; both write the fp32 loss (4 B per token) forward.
  const Plan fused = plan_with_loss(true, false), ops = plan_with_loss(true, true);
  auto ce = cross_entropy;
  const double logits = 512.0 * 32000, loss = 512.0 * 4;
  CHECK(ce(fused, Phase::kForward).bytes == doctest::Approx(4 * logits + loss));
  CHECK(ce(ops, Phase::kForward).bytes == doctest::Approx(38 * logits + loss));
  CHECK(ce(fused, Phase::kBackward).bytes == doctest::Approx(2 * (4 * logits + loss)));
  CHECK(ce(ops, Phase::kBackward).bytes == doctest::Approx(14.0 / 38 * (38 * logits + loss)));
  CHECK(ce(ops, Phase::kForward).launches == 6);
  // The same memory: Megatron keeps the fp32 softmax, as the fused pass keeps the fp32 logits.
  CHECK(ops.head->peak_transient_B == 0);
  // Megatron-LM's preset runs them; the ideal "all" preset does not.
  FusionPlan megatron;
  fusion_preset("megatron", &megatron);
  CHECK(megatron.megatron_loss_ops);
  CHECK_FALSE(fused.strategy.fusion.megatron_loss_ops);
  // Read and written back; refused without fused_loss, naming the rule.
  auto read = [](const char* fusion) {
    const Json j = parse_json_text(std::string(R"({"global_batch": 8, "fusion": )") + fusion + "}", "s.json");
    return read_strategy(JsonNode(j, "s.json", "strategy"));
  };
  const Strategy s = read(R"({"preset": "all", "megatron_loss_ops": true})");
  CHECK(s.fusion.megatron_loss_ops);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  // Megatron's preset with its loss made eager drops the ops that went with the fused loss.
  CHECK_FALSE(read(R"({"preset": "megatron", "fused_loss": false})").fusion.megatron_loss_ops);
  CHECK_THROWS_WITH_AS(read(R"({"fused_loss": false, "megatron_loss_ops": true})"),
                       doctest::Contains("s.json: strategy.fusion.megatron_loss_ops: true asks for Megatron's "
                                         "vocab-parallel cross-entropy ops without fused_loss"),
                       InputError);
}
