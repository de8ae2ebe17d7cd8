// Small transformer plans for unit tests: a GPT-style decoder (hidden 1024, 16 heads, seq 512,
// vocab 32000) lowered on DGX A100 nodes.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "hardware_models/src/hardware_json.h"
#include "strategies/lowering/lower.h"

namespace stratasim::testing {

// input -> {a, b} (equal 1024 x 1024 matmuls) -> merge(a, b) -> loss: two branches of one
// operator-graph block, the branches named as asked.
inline ModelSpec two_branch_graph(const std::string& a = "a", const std::string& b = "b") {
  ModelSpec m;
  m.name = "two branches";
  m.family = ModelFamily::kOpGraph;
  const double w = 1024;
  auto op = [](std::string name, GraphOpKind kind, double flops, double out, double params,
               std::vector<int> inputs) {
    return GraphOp{.name = std::move(name), .kind = kind, .flops = flops, .output_elements = out,
                   .params = params, .inputs = std::move(inputs)};
  };
  m.graph.ops = {op(a, GraphOpKind::kMatmul, 2 * w * w, w, w * w, {}),
                 op(b, GraphOpKind::kMatmul, 2 * w * w, w, w * w, {}),
                 op("merge", GraphOpKind::kElementwise, w, w, 0, {0, 1}),
                 op("loss", GraphOpKind::kLoss, 5 * w, 1, 0, {2})};
  m.graph.ops[0].input_elements = m.graph.ops[1].input_elements = w;
  return m;
}

inline ModelSpec small_gpt(int layers) {
  ModelSpec m;
  m.family = ModelFamily::kDecoder;
  m.name = "gpt" + std::to_string(layers) + "l";
  TransformerSpec& t = m.transformer;
  t.layers = layers, t.hidden = 1024, t.heads = 16, t.seq_len = 512, t.vocab = 32000;
  return m;
}

// Micro-batch 1 of a global batch of 8, every fusion of the "all" preset.
inline Strategy all_fused(int global_batch = 8) {
  Strategy s;
  s.global_batch = global_batch, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);
  return s;
}

inline Plan lower_on(const std::string& cluster, const ModelSpec& m, const Strategy& s, int devices) {
  HardwareModel hw = catalog_cluster(cluster);
  hw.num_devices = devices;
  Expected<Plan> p = lower(m, s, hw);
  REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().detail));
  return *p;
}

inline Plan lower_on_dgx_a100(const ModelSpec& m, const Strategy& s, int devices) {
  return lower_on("dgx_a100", m, s, devices);
}

// A fused attention kernel of `flops` whose query rows attend `keys` keys (head dim 128).
inline Kernel attention_kernel(double flops, double keys, bool causal = false) {
  Kernel k;
  k.cls = OpClass::kFlashAttention;
  k.phase = Phase::kForward;
  k.matmul_flops = flops;
  k.attention_keys = keys, k.attention_causal = causal, k.attention_head_dim = 128;
  return k;
}

// The kernel of `ks` whose first graph op is `name` (a test fails when there is none).
inline const Kernel& kernel(const std::vector<Kernel>& ks, const Block& b, std::string_view name) {
  auto it = std::find_if(ks.begin(), ks.end(),
                         [&](const Kernel& k) { return b.graph.ops[k.first_op].name == name; });
  REQUIRE(it != ks.end());
  return *it;
}

}  // namespace stratasim::testing
