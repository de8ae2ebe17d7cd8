// Multi-token prediction (TransformerSpec::mtp_layers; DeepSeek-V3 Sec. 2.2, Megatron-Core's
// MultiTokenPredictionLayer), worked by hand on small_gpt (4 layers, hidden 1024, 16 heads, seq
// 512, vocab 32000) made untied, without learned positions, on a DGX A100 at micro-batch 1.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/json_reader.h"
#include "strategies/lowering/block_lowering.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/hf_config.h"
#include "strategies/model/model_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"
#include "tests/support/temp_file.h"

using namespace stratasim;

namespace {

ModelSpec mtp_model(int depths) {
  ModelSpec m = testing::small_gpt(4);
  m.transformer.tied_embeddings = false;
  m.transformer.learned_positions = false;
  m.transformer.mtp_layers = depths;
  return m;
}

Plan mtp_plan(int depths, int pp) {
  Strategy s;
  s.pp = pp, s.global_batch = 8, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);
  return testing::lower_on_dgx_a100(mtp_model(depths), s, 8);
}

int count(const Block& b, std::string_view name) {
  return int(std::count_if(b.graph.ops.begin(), b.graph.ops.end(),
                           [&](const LayerOp& op) { return op.name == name; }));
}

double matmul_flops(const std::vector<Kernel>& ks) {
  double sum = 0;
  for (const Kernel& k : ks) sum += k.matmul_flops;
  return sum;
}

}  // namespace

TEST_CASE("mtp: a depth is a layer, the 2h x h projection, three norms and a second head on the last stage") {
  const Plan plain = mtp_plan(0, 2), mtp = mtp_plan(1, 2);
  const Block& h0 = *plain.head;
  const Block& h1 = *mtp.head;
  CHECK(count(h0, "cross_entropy") == 1);
  CHECK(count(h1, "cross_entropy") == 2);  // its own loss
  CHECK(count(h1, "output_projection") == 2);  // the shared head, run again
  CHECK(count(h1, "token_embedding") == 1);  // the next tokens' lookup in the shared table
  CHECK(count(h1, "mtp_eh_proj") == 1);
  // Parameters on the last stage, per depth: one layer (attention 4 h^2 + MLP 8 h^2 + biases
  // and norms, as the layer block has them), eh_proj 2h x h (no bias), the embedding's, the
  // hidden state's and the depth's final LayerNorms (3 x 2h: gain and bias); the untied word
  // embedding's copy that a pipelined last stage keeps for the lookup (vocab x h). The output
  // head is shared.
  const double h = 1024, vocab = 32000;
  CHECK(h1.params - h0.params == doctest::Approx(plain.layer->params + 2 * h * h + 6 * h + vocab * h));
  // fp8 training casts the depth's layer and projection like a layer's; the head stays 16 bit.
  CHECK(h1.mtp_linear_params == doctest::Approx(plain.layer->params + 2 * h * h));
  CHECK(h0.mtp_linear_params == 0);
  // The forward's GEMMs: the layer's, eh_proj (2 n 2h h, n = 512) and the output projection
  // again (2 n h vocab).
  const double n = 512;
  CHECK(matmul_flops(h1.forward) - matmul_flops(h0.forward) ==
        doctest::Approx(matmul_flops(plain.layer->forward) + 2 * n * 2 * h * h + 2 * n * h * vocab));
  // Without pipelining the embedding is on the same device: no copy.
  CHECK(mtp_plan(1, 1).head->params - mtp_plan(0, 1).head->params ==
        doctest::Approx(plain.layer->params + 2 * h * h + 6 * h));
  // The lookup on the last stage: the first and the last stage sum the embedding's gradient,
  // as for tied embeddings; an untied model without MTP has no such sync.
  auto syncs = [](const Plan& p) {
    int k = 0;
    for (const auto& tail : p.iteration.tail) {
      k += int(std::count_if(tail.begin(), tail.end(),
                             [](const IterOp& op) { return op.kind == IterOpKind::kEmbeddingSync; }));
    }
    return k;
  };
  CHECK(syncs(plain) == 0);
  CHECK(syncs(mtp) == 2);
  // The last stage takes longer by what the depth runs; the first stage does not change.
  const Prediction a = predict_analytical(plain), b = predict_analytical(mtp);
  CHECK(b.iteration_s > a.iteration_s);
}

TEST_CASE("mtp: an MoE depth's experts are sharded like a layer's, and eh_proj's tensor-parallel collectives") {
  // 8 experts of 512 (top-2) on ep 4: the depth's layer holds 2 experts a rank, whose states
  // the last stage shards over the expert-data replicas like any MoE layer's.
  ModelSpec m = mtp_model(1);
  m.transformer.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 512};
  Strategy s;
  s.pp = 2, s.tp = 2, s.ep = 4, s.sequence_parallel = true, s.global_batch = 8, s.micro_batch = 1;
  fusion_preset("all", &s.fusion);
  const Plan p = testing::lower_on_dgx_a100(m, s, 8);
  CHECK(p.head->expert_params == doctest::Approx(p.layer->expert_params));
  const VirtualStage& last = p.stages.back();
  REQUIRE(last.has_head);
  CHECK(last.expert_params == doctest::Approx((last.layers + 1) * p.layer->expert_params));
  // Megatron-Core's eh_proj is column-parallel: with sequence parallelism its 2h-wide input is
  // all-gathered (2 n h e = 2 x 512 x 1024 x 2 B per rank) and its output gathered over tp
  // (n h e) before the layer takes its sequence shard again.
  const double n = 512, h = 1024;
  auto message = [&](std::string_view name) {
    for (const LayerOp& op : p.head->graph.ops) {
      if (op.name == name) return op.comm_bytes;
    }
    return -1.0;
  };
  CHECK(message("mtp_sp_all_gather") == doctest::Approx(2 * n * h * 2));
  CHECK(message("mtp_gather_output") == doctest::Approx(n * h * 2));
  CHECK(message("mtp_input_grad") == -1);  // only without sequence parallelism
}

TEST_CASE("mtp: mtp_layers in a model file, from a Hugging Face config, and its bounds") {
  auto read = [](const std::string& extra) {
    const std::string text = R"({"family": "decoder", "layers": 4, "hidden": 1024, "heads": 16,
        "seq_len": 512, "vocab": 32000)" + extra + "}";
    return read_model(JsonNode(parse_json_text(text, "m.json"), "m.json", "model"));
  };
  CHECK(read("").transformer.mtp_layers == 0);
  const ModelSpec m = read(R"(, "mtp_layers": 1)");
  CHECK(m.transformer.mtp_layers == 1);
  CHECK(to_json(m).at("mtp_layers") == 1);
  CHECK_FALSE(to_json(read("")).contains("mtp_layers"));
  CHECK_THROWS_WITH_AS(read(R"(, "mtp_layers": 17)"), doctest::Contains("m.json: model.mtp_layers"), InputError);
  // A Hugging Face config's num_nextn_predict_layers is bounded the same way.
  const std::string big = testing::write_temp("stratasim_mtp_hf_config.json", R"({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
      "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
      "n_shared_experts": 1, "first_k_dense_replace": 1, "kv_lora_rank": 32, "q_lora_rank": 64,
      "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 1000,
      "num_nextn_predict_layers": 40})");
  const Json too_many = parse_json_text(R"({"hf_config": ")" + big + R"(", "seq_len": 128})", "m.json");
  CHECK_THROWS_WITH_AS(read_model(JsonNode(too_many, "m.json", "model")),
                       doctest::Contains("mtp_layers=40 multi-token prediction depths; at most 16 are modelled"),
                       InputError);
  // DeepSeek-V3's config.json: num_nextn_predict_layers 1; the preset carries it too.
  const std::string path = std::string(STRATASIM_SOURCE_DIR) + "/tests/model/data/hf/deepseek_v3.json";
  const Json hf = parse_json_text(R"({"hf_config": ")" + path + R"(", "seq_len": 4096})", "m.json");
  CHECK(read_model(JsonNode(hf, "m.json", "model")).transformer.mtp_layers == 1);
  CHECK(model_preset("deepseek-v3").transformer.mtp_layers == 1);
}
