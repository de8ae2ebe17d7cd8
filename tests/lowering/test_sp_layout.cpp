// Sequence-parallel collectives as PyTorch's DTensor runs them (Strategy::sp_reorder_copies,
// Strategy::fp8_tp_all_gather, LayerShape::tp_micro_pipeline), worked by hand on a tiny layer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/cost/kernel_cost.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/transformer_layer.h"

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

TEST_CASE("sp layout: a GEMM whose input arrives cast saves exactly the input's cast (torchao tensorwise)") {
  // m x k = 4096 x 1024 input: the tensorwise input cast moves 6 B an element in 2 kernels
  // (kernel_cost.cpp); on a memory stream of exactly 1 TB/s with 1 us launches that is
  // 6 * 4096 * 1024 / 1e12 s + 2 us = 27.166 us.
  DeviceSpec d;
  d.peak_flops[static_cast<int>(DType::kFp8)] = 1e15;
  d.peak_flops[static_cast<int>(DType::kBf16)] = 5e14;
  d.memory_bandwidth_Bps = 1e12;
  d.memory = {1.0, 0};
  d.matmul = {1.0, 0};
  d.matmul_fp8 = {1.0, 0};
  d.kernel_overhead_s = 1e-6;
  Kernel k;
  k.cls = OpClass::kMatmul;
  k.fp8_eligible = true;
  k.gemm_m = 4096, k.gemm_n = 2048, k.gemm_k = 1024;
  k.matmul_flops = 2 * 4096.0 * 2048 * 1024;
  const double full = kernel_time(k, d, DType::kFp8).total_s;
  k.fp8_input_precast = true;
  const double precast = kernel_time(k, d, DType::kFp8).total_s;
  CHECK(full - precast == doctest::Approx(6 * 4096.0 * 1024 / 1e12 + 2e-6).epsilon(1e-9));
}
