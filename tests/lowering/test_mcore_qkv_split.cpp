// Megatron-Core's QKV split (FusionPlan::qkv_split_copies) and two corrections of its MoE
// layer's token path: the router weights' own all-to-all under the all-to-all dispatcher and
// the unpermute's backward, a permutation of the forward's bytes. Worked by hand on a small
// GPT: hidden 1024, 16 heads of 64, micro-batch 1 x seq 512.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

ModelSpec gqa(int kv_heads, bool qk_norm = false) {
  ModelSpec m = testing::small_gpt(2);
  m.transformer.kv_heads = kv_heads;
  m.transformer.rotary = true, m.transformer.learned_positions = false;
  m.transformer.qk_norm = qk_norm;
  return m;
}

Strategy mcore(int tp, bool split = true) {
  Strategy s;
  s.tp = tp;
  s.global_batch = 8, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);
  s.fusion.qkv_split_copies = split;
  return s;
}

bool has(const std::vector<Kernel>& ks, const Block& b, std::string_view name) {
  return std::any_of(ks.begin(), ks.end(), [&](const Kernel& k) { return b.graph.ops[k.first_op].name == name; });
}

struct Split {
  double forward, backward;
  int launches;
};
Split split_of(const ModelSpec& m, const Strategy& s) {
  const Plan p = testing::lower_on_dgx_a100(m, s, 8);
  const Block& b = *p.layer;
  return {kernel(b.forward, b, "qkv_split").bytes, kernel(b.backward, b, "qkv_split").bytes,
          kernel(b.forward, b, "qkv_split").launches};
}

constexpr double kTokens = 512, kE = 2;

}  // namespace

TEST_CASE("qkv split: the query's reshape copy, the value's contiguous copy and split's backward cat") {
  // GQA, 4 KV heads, tp 1: q = 1024 and kv = 4 x 64 = 256 per token; 4 KV groups of 4 query
  // heads on the rank, so the query's reshape copies: forward 2 e (q + kv) = 2 x 2 x 1280 B a
  // token = 2,621,440 B in 2 launches; backward the cat, 2 e (q + 2 kv) = 2 x 2 x 1536 B a
  // token = 3,145,728 B.
  Split s = split_of(gqa(4), mcore(1));
  CHECK(s.forward == doctest::Approx(2 * kE * (1024 + 256) * kTokens));
  CHECK(s.forward == doctest::Approx(2621440));
  CHECK(s.backward == doctest::Approx(3145728));
  CHECK(s.launches == 2);
  // tp 4: one KV group a rank, the query's reshape is a view; only v (256 / 4 = 64 a token)
  // is copied: 2 x 2 x 64 x 512 = 131,072 B; backward 2 x 2 x (256 + 2 x 64) x 512 = 786,432.
  s = split_of(gqa(4), mcore(4));
  CHECK(s.forward == doctest::Approx(131072));
  CHECK(s.backward == doctest::Approx(786432));
  CHECK(s.launches == 1);
  // MHA: one query head a group, a view again; v is 1024 wide: 2,097,152 B forward,
  // 2 x 2 x 3072 x 512 = 6,291,456 B backward.
  s = split_of(gqa(0), mcore(1));
  CHECK(s.forward == doctest::Approx(2097152));
  CHECK(s.backward == doctest::Approx(6291456));
  // A key layernorm copies the strided key too: + 2 x 2 x 256 x 512 = 524,288 B, 3 launches.
  s = split_of(gqa(4, true), mcore(1));
  CHECK(s.forward == doctest::Approx(2621440 + 524288));
  CHECK(s.backward == doctest::Approx(3145728));
  CHECK(s.launches == 3);
  // Off: no such kernel. Selective recomputation leaves it alone (outside the core attention).
  const Plan off = testing::lower_on_dgx_a100(gqa(4), mcore(1, false), 8);
  CHECK_FALSE(has(off.layer->forward, *off.layer, "qkv_split"));
  Strategy selective = mcore(1);
  selective.recompute = Recompute::kSelective;
  const Plan sel = testing::lower_on_dgx_a100(gqa(4), selective, 8);
  for (const Kernel& k : sel.layer->backward) {
    if (sel.layer->graph.ops[k.first_op].name == "qkv_split") CHECK(k.phase == Phase::kBackward);
  }
}

TEST_CASE("qkv split: a fusion key, read and written back") {
  const Json j = parse_json_text(R"({"global_batch": 8, "fusion": {"preset": "all", "qkv_split_copies": true}})", "s.json");
  const Strategy s = read_strategy(JsonNode(j, "s.json", "strategy"));
  CHECK(s.fusion.qkv_split_copies);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK_FALSE(to_json(Strategy{}).dump().find("qkv_split_copies") != std::string::npos);
}

TEST_CASE("moe token path: the router weights' own all-to-all, and the unpermute's backward a permutation") {
  ModelSpec m = testing::small_gpt(2);
  m.transformer.activation = Activation::kSwiGLU;
  m.transformer.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 512};
  Strategy s;
  s.global_batch = 16, s.micro_batch = 1, s.ep = 8;
  fusion_preset("all", &s.fusion);
  const Plan p = testing::lower_on_dgx_a100(m, s, 8);
  const Block& b = *p.layer;
  // 512 tokens x top-2 = 1024 copies, one 16-bit weight each: 2,048 B, both ways.
  const Kernel& probs = kernel(b.forward, b, "ep_dispatch_probs");
  CHECK(probs.cls == OpClass::kCollective);
  CHECK(probs.comm == CommKind::kAllToAll);
  CHECK(probs.group == GroupKind::kExpert);
  CHECK(probs.comm_bytes == doctest::Approx(1024 * kE));
  CHECK(kernel(b.backward, b, "ep_dispatch_probs").comm_bytes == doctest::Approx(1024 * kE));
  // The unpermute reads the 1024 returned copies and writes the 512 tokens (1024 wide):
  // (1024 + 512) x 1024 x 2 B forward plus its index map; the backward moves the same bytes.
  const Kernel& f = kernel(b.forward, b, "unpermute");
  CHECK(kernel(b.backward, b, "unpermute").bytes == doctest::Approx(f.bytes));
  CHECK(f.bytes >= (1024 + 512) * 1024 * kE);
  // DeepEP carries the weights in its own kernels; one EP rank exchanges nothing.
  s.ep_dispatch = EpDispatch::kDeepEP;
  const Plan deep = testing::lower_on_dgx_a100(m, s, 8);
  CHECK_FALSE(has(deep.layer->forward, *deep.layer, "ep_dispatch_probs"));
  s.ep_dispatch = EpDispatch::kAllToAll, s.ep = 1;
  const Plan local = testing::lower_on_dgx_a100(m, s, 8);
  CHECK_FALSE(has(local.layer->forward, *local.layer, "ep_dispatch_probs"));
}

}  // namespace stratasim
