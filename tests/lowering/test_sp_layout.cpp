// Sequence-parallel collectives as PyTorch's DTensor runs them (Strategy::sp_reorder_copies,
// Strategy::fp8_tp_all_gather, LayerShape::tp_micro_pipeline), worked by hand on a tiny layer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/transformer_layer.h"
#include "strategies/model/model_spec.h"

using namespace stratasim;

namespace {

// s = 4, b = 2, h = 8, 2 heads; tp = 2 with SP: n = 8 tokens gathered, 4 in a rank's shard;
// 16-bit activations (e = 2).
TransformerSpec tiny() {
  return TransformerSpec{.layers = 4, .hidden = 8, .heads = 2, .seq_len = 4, .vocab = 16};
}

Block lowered(LayerShape shape) {
  Block b;
  b.graph = build_transformer_layer(tiny(), shape);
  lower_block(b, Recompute::kNone);
  return b;
}

std::vector<const Kernel*> named(const Block& b, const std::vector<Kernel>& ks, const std::string& name) {
  std::vector<const Kernel*> out;
  for (const Kernel& k : ks) {
    if (b.graph.ops[k.first_op].name == name) out.push_back(&k);
  }
  return out;
}

const LayerShape kSp{.micro_batch = 2, .tp = 2, .sequence_parallel = true};

}  // namespace

TEST_CASE("sp layout: each SP all-gather is followed, each reduce-scatter preceded, by a copy of the whole tensor") {
  LayerShape shape = kSp;
  CHECK(named(lowered(shape), lowered(shape).forward, "sp_gather_reorder").empty());
  shape.sp_reorder_copies = true;
  const Block b = lowered(shape);
  // The gathered tensor: n h e = 8 * 8 * 2 = 128 B, read and written: 256 B, one kernel each.
  const auto gathers = named(b, b.forward, "sp_gather_reorder");
  const auto scatters = named(b, b.forward, "sp_scatter_reorder");
  REQUIRE(gathers.size() == 2);  // before the attention's and the MLP's column-parallel GEMMs
  REQUIRE(scatters.size() == 2);  // after the attention's and the MLP's row-parallel GEMMs
  for (const Kernel* k : gathers) CHECK(k->bytes == 256);
  for (const Kernel* k : scatters) CHECK(k->bytes == 256);
  // The backward copies the gradient once (not the 2x of an elementwise op's backward).
  const auto back = named(b, b.backward, "sp_gather_reorder");
  REQUIRE(back.size() == 2);
  for (const Kernel* k : back) CHECK(k->bytes == 256);
  // Saved as the shard, as SP's gathered inputs are: the copies add no activation memory.
  LayerShape plain = kSp;
  CHECK(saved_activation_bytes(b.graph, Recompute::kNone) ==
        saved_activation_bytes(build_transformer_layer(tiny(), plain), Recompute::kNone));
}

TEST_CASE("sp layout: async TP's fused collective matmuls leave only the backward's copies before the unmatched reduce-scatters") {
  LayerShape shape = kSp;
  shape.sp_reorder_copies = true;
  shape.tp_micro_pipeline = true;
  const Block b = lowered(shape);
  CHECK(named(b, b.forward, "sp_gather_reorder").empty());
  CHECK(named(b, b.forward, "sp_scatter_reorder").empty());
  CHECK(named(b, b.backward, "sp_scatter_reorder").empty());
  const auto back = named(b, b.backward, "sp_gather_reorder");
  REQUIRE(back.size() == 2);
  for (const Kernel* k : back) CHECK(k->bytes == 256);
}

TEST_CASE("sp layout: an FP8 tensor-parallel all-gather moves 1 B an element and its GEMMs skip the input cast") {
  LayerShape shape = kSp;
  shape.sp_reorder_copies = true;
  shape.fp8_tp_gather = true;
  const Block b = lowered(shape);
  // The cast on the shard (n/t h = 32 elements): read 2 B, write 1 B, amax pass read 2 B each:
  // 160 B, two kernels; nothing in the backward (the gradient passes through).
  const auto casts = named(b, b.forward, "fp8_input_cast");
  REQUIRE(casts.size() == 2);
  for (const Kernel* k : casts) {
    CHECK(k->bytes == 160);
    CHECK(k->launches == 2);
  }
  for (const Kernel* k : named(b, b.backward, "fp8_input_cast")) CHECK(k->bytes == 0);
  // The all-gather: 64 elements of 1 B; its backward reduce-scatter of 16-bit gradients: 128 B.
  const auto gathers = named(b, b.forward, "sp_all_gather1");
  REQUIRE(gathers.size() == 1);
  CHECK(gathers[0]->comm_bytes == 64);
  const auto back_gathers = named(b, b.backward, "sp_all_gather1");
  REQUIRE(back_gathers.size() == 1);
  CHECK(back_gathers[0]->comm_bytes == 128);
  // The copy of the fp8 gathered tensor: 64 + 64 B forward, the 16-bit gradient's 256 B back.
  for (const Kernel* k : named(b, b.forward, "sp_gather_reorder")) CHECK(k->bytes == 128);
  for (const Kernel* k : named(b, b.backward, "sp_gather_reorder")) CHECK(k->bytes == 256);
  // The column-parallel GEMM reading it knows its input is cast; the row-parallel one does not.
  int precast = 0, linear = 0;
  for (const Kernel& k : b.forward) {
    if (k.cls != OpClass::kMatmul || !k.fp8_eligible) continue;
    ++linear;
    precast += k.fp8_input_precast;
  }
  CHECK(linear == 4);   // qkv, attention output, fc1, fc2
  CHECK(precast == 2);  // qkv and fc1
}

TEST_CASE("sp layout: under an FP8 tensor-parallel gather, a row-parallel GEMM's gradient is cast on the shard and gathered in FP8") {
  LayerShape shape = kSp;
  shape.sp_reorder_copies = true;
  shape.fp8_tp_gather = true;
  const Block b = lowered(shape);
  // torchao's Float8RowwiseParallel: the reduce-scatter of the n h = 64 output elements moves
  // them at 2 B (128 B) forward; its backward all-gather moves the FP8 gradient, 64 B.
  for (const char* name : {"tp_reduce1", "tp_reduce2"}) {
    const auto fwd = named(b, b.forward, name);
    const auto back = named(b, b.backward, name);
    REQUIRE(fwd.size() == 1);
    REQUIRE(back.size() == 1);
    CHECK(fwd[0]->comm_bytes == 128);
    CHECK(back[0]->comm == CommKind::kAllGather);
    CHECK(back[0]->comm_bytes == 64);
  }
  // The chunk copy before the reduce-scatter: read and write 128 B forward; backward, the
  // gathered FP8 gradient's 64 B read and written.
  for (const Kernel* k : named(b, b.forward, "sp_scatter_reorder")) CHECK(k->bytes == 256);
  for (const Kernel* k : named(b, b.backward, "sp_scatter_reorder")) CHECK(k->bytes == 128);
  // The row-parallel GEMMs know their gradient arrives cast on a 1/tp = 1/2 shard; the
  // column-parallel ones cast their own (local) gradient.
  int shard_cast = 0;
  for (const Kernel& k : b.backward) {
    if (k.cls != OpClass::kMatmul || !k.fp8_eligible) continue;
    if (k.fp8_grad_shard > 0) {
      CHECK(k.fp8_grad_shard == 0.5);
      CHECK_FALSE(k.fp8_input_precast);
      ++shard_cast;
    }
  }
  CHECK(shard_cast == 2);  // attention output, fc2
  // Without the FP8 gather the gradient travels 16-bit and no GEMM is told otherwise.
  shape.fp8_tp_gather = false;
  const Block plain = lowered(shape);
  CHECK(named(plain, plain.backward, "tp_reduce1")[0]->comm_bytes == 128);
  for (const Kernel& k : plain.backward) CHECK(k.fp8_grad_shard == 0);
}

namespace {

// The tiny layer with grouped K/V: 2 query heads of width 4, one K/V head (kv = 4 per token).
TransformerSpec tiny_gqa() {
  return TransformerSpec{.layers = 4, .hidden = 8, .heads = 2, .kv_heads = 1, .seq_len = 4, .vocab = 16};
}

Block lowered_gqa(LayerShape shape) {
  shape.fusion.flash_attention = true;
  Block b;
  b.graph = build_transformer_layer(tiny_gqa(), shape);
  lower_block(b, Recompute::kNone);
  return b;
}

}  // namespace

TEST_CASE("ring attention: K/V repeated to the query heads are copied once a layer and travel the ring at their width") {
  LayerShape shape{.micro_batch = 2};
  CHECK(named(lowered_gqa(shape), lowered_gqa(shape).forward, "repeat_kv").empty());
  shape.kv_repeat = true;
  const Block b = lowered_gqa(shape);
  // n = 8 tokens: read K and V of the one K/V head (8 * 8 * 2 = 128 B), write them at both
  // query heads' width (8 * 16 * 2 = 256 B), one kernel for each of K and V; the backward sums
  // the groups back: the same bytes.
  const auto fwd = named(b, b.forward, "repeat_kv");
  REQUIRE(fwd.size() == 1);
  CHECK(fwd[0]->bytes == 384);
  CHECK(fwd[0]->launches == 2);
  const auto bwd = named(b, b.backward, "repeat_kv");
  REQUIRE(bwd.size() == 1);
  CHECK(bwd[0]->bytes == 384);
  // Ring attention over cp = 2: all s tokens' K and V per rank, b s (kw + vw) e = 2 * 4 * 8 * 2
  // = 128 B, or at the query heads' width 256 B when repeated.
  LayerShape ring{.micro_batch = 2, .cp = 2};
  CHECK(named(lowered_gqa(ring), lowered_gqa(ring).forward, "cp_ring_kv")[0]->comm_bytes == 128);
  ring.kv_repeat = true;
  CHECK(named(lowered_gqa(ring), lowered_gqa(ring).forward, "cp_ring_kv")[0]->comm_bytes == 256);
}

TEST_CASE("ring attention: each step's output merge and gradient accumulation, fused (TE) and fp32 eager (PyTorch)") {
  // cp = 2: two steps (PyTorch merges from the second); the rank holds n = 2 * 4 / 2 = 4 tokens: E = 4 * 8 = 32
  // output elements, E_kv = 4 * (4 + 4) = 32 K and V elements.
  LayerShape shape{.micro_batch = 2, .cp = 2};
  Block b = lowered_gqa(shape);
  auto fwd = named(b, b.forward, "cp_merge");
  REQUIRE(fwd.size() == 1);
  // The output zeroed (2E), then each of the 2 steps out += out_step * exp(lse diff), 16 bit.
  CHECK(fwd[0]->bytes == 2 * 32 + 2 * 6 * 32);
  CHECK(fwd[0]->launches == 3);
  auto bwd = named(b, b.backward, "cp_merge");
  REQUIRE(bwd.size() == 1);
  CHECK(bwd[0]->bytes == doctest::Approx(2 * (6 * 32 + 6 * 32)));  // dq += dq_step, dkv += dkv_step, each step
  CHECK(named(b, b.backward, "cp_ring_kv")[0]->comm_bytes == 2 * 128);  // K, V and dK, dV
  shape.cp_merge = CpMerge::kEagerFp32;
  b = lowered_gqa(shape);
  fwd = named(b, b.forward, "cp_merge");
  REQUIRE(fwd.size() == 1);
  // 38 E + 4 E_kv a step, 12 E once: 1216 + 128 + 384; 8 kernels a step and 2 once.
  CHECK(fwd[0]->bytes == doctest::Approx(1728));
  CHECK(fwd[0]->launches == 10);
  bwd = named(b, b.backward, "cp_merge");
  // 10 E + 25 E_kv a step, 10 E + 10 E_kv once: 320 + 800 + 320 + 320.
  CHECK(bwd[0]->bytes == doctest::Approx(1760));
  // dK, dV rotated in fp32: K, V (16 bit) and their gradients (32 bit), three times 128 B.
  CHECK(named(b, b.backward, "cp_ring_kv")[0]->comm_bytes == 3 * 128);
  // No context parallelism, no merge.
  CHECK(named(lowered_gqa(LayerShape{.micro_batch = 2}), lowered_gqa(LayerShape{.micro_batch = 2}).forward,
              "cp_merge").empty());
}

TEST_CASE("fsdp copies: a layer's all-gather output copied into its parameters, its gradients into the reduce-scatter input") {
  // The tiny GPT layer holds 12 h^2 + 13 h = 872 parameters (h = 8; Megatron's count: QKV,
  // projection, two MLP matrices, their biases and two LayerNorms). bf16 gathered (2 B), fp32
  // reduce (4 B): forward read + write of the gathered 872 x 2 B = 3488 B; backward the
  // re-gather's 3488 B and the gradients' concatenation, read 2 and write 4 B each: 5232 B.
  LayerShape shape{.micro_batch = 2};
  shape.fsdp_gather_element_bytes = 2;
  shape.fsdp_reduce_element_bytes = 4;
  shape.fsdp_params = layer_params(tiny());
  CHECK(shape.fsdp_params == 12 * 64 + 13 * 8);
  Block b;
  b.graph = build_transformer_layer(tiny(), shape);
  lower_block(b, Recompute::kFull);
  const auto fwd = named(b, b.forward, "fsdp_copy");
  REQUIRE(fwd.size() == 1);
  CHECK(fwd[0]->bytes == doctest::Approx(3488));
  const auto bwd = named(b, b.backward, "fsdp_copy");
  REQUIRE(bwd.size() == 1);  // full recomputation does not redo it
  CHECK(bwd[0]->bytes == doctest::Approx(3488 + 5232));
  CHECK(named(lowered(LayerShape{.micro_batch = 2}), lowered(LayerShape{.micro_batch = 2}).forward, "fsdp_copy").empty());
}
