// Validation as data: every case file goes through one generic path; groups and tolerances
// come from the data; the gate holds today and fails when the device model is perturbed.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/temp_file.h"
#include "tests/support/run_cli.h"
#include "validate/case_rules.h"
#include "validate/case_translation.h"
#include "validate/flop_conventions.h"
#include "validate/intervals.h"
#include "validate/published.h"
#include "sim/cost/block_cost.h"

using namespace stratasim;

namespace {

using testing::write_temp;

// A new source of two cases, with its own group and tolerance: no code, only this file.
const char* kTwoCaseSource = R"({
  "rules": {"groups": [{"group": "newsrc", "prefix": "newsrc_",
                        "tolerance": {"mape": 0.5, "max": 0.9}, "why": "test source"}]},
  "cases": [
    {"id": "newsrc_a", "source": "a test", "model": {"layers": 24, "hidden": 2048, "heads": 16,
     "seq_len": 2048, "vocab": 51200, "arch": "GPT"},
     "parallel": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": null, "global_batch": 64,
                  "recompute": "none", "sequence_parallel": false, "zero_stage": 0},
     "hardware": {"gpu": "A100-SXM4-80GB", "gpus_per_node": 8, "num_gpus": 8},
     "framework": "Megatron-DeepSpeed", "precision": "fp16",
     "measured": {"iteration_s": 1.5}},
    {"id": "newsrc_b", "source": "a test", "model": {"layers": 32, "hidden": 4096, "heads": 32,
     "kv_heads": 8, "ffn_hidden": 14336, "seq_len": 8192, "vocab": 128256,
     "arch": "Llama 3: RMSNorm, SwiGLU, RoPE, GQA, untied embeddings"},
     "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8,
                  "recompute": "full", "zero_stage": 3},
     "hardware": {"gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "num_gpus": 8},
     "framework": "TorchTitan", "precision": "bf16",
     "measured": {"tokens_per_s_per_gpu": 6000}}
  ]})";

// The two-case source's TorchTitan case (Llama 3 8B on 8 H100), to edit, and its translation.
Json probe_json() { return parse_json_text(kTwoCaseSource, "test").at("cases").at(1); }
TranslatedCase translate_probe(const Json& c) {
  return translate_case(JsonNode(c, "probe.json", "cases[0]"), builtin_case_rules());
}
// The probe with `edit` applied, which must stay expressible.
TranslatedCase expressible_probe(const std::function<void(Json&)>& edit) {
  Json c = probe_json();
  c["id"] = "probe";
  edit(c);
  TranslatedCase t = translate_probe(c);
  REQUIRE_MESSAGE(t.unsupported.empty(), t.unsupported);
  return t;
}

}  // namespace

TEST_CASE("validate: the built-in case files hold >= 250 measured cases from >= 8 sources") {
  const ValidationSet set = load_validation_set({});
  CHECK(set.files.size() >= 2);
  std::set<std::string> groups;
  int measured = 0;
  for (const TranslatedCase& c : set.cases) {
    if (!c.measured) continue;
    ++measured;
    groups.insert(c.group);
  }
  CHECK(measured >= 250);
  CHECK(groups.size() >= 8);
}

TEST_CASE("validate: --data DIR reads every case file directly inside it, in name order") {
  const auto dir = std::filesystem::temp_directory_path() / "stratasim_case_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "nested");
  const Json doc = parse_json_text(kTwoCaseSource, "test");
  std::ofstream(dir / "b.json") << Json(Json::array({doc.at("cases").at(0)})).dump();
  std::ofstream(dir / "a.json") << Json(Json::array({doc.at("cases").at(1)})).dump();
  std::ofstream(dir / "notes.txt") << "not a case file";
  std::ofstream(dir / "nested" / "c.json") << "not read: one level only";
  const ValidationSet set = load_validation_set({dir.string()}, false);
  REQUIRE(set.cases.size() == 2);
  CHECK(set.cases[0].id == "newsrc_b");  // a.json first
  CHECK(set.cases[1].id == "newsrc_a");
  CHECK(set.files.size() == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("validate: a two-case source added as a file is evaluated with its own group") {
  const std::string path = write_temp("stratasim_two_case_source.json", kTwoCaseSource);
  const ValidationReport r = validate_published(load_validation_set({path}, false));
  REQUIRE(r.cases.size() == 2);
  CHECK(r.cases[0].group == "newsrc");
  CHECK(r.cases[0].failure.empty());
  CHECK(r.cases[0].stack == "megatron-deepspeed");
  CHECK(r.cases[0].chosen.find("micro_batch=") != std::string::npos);  // searched: null
  CHECK(r.cases[1].stack == "torchtitan");
  CHECK(r.cases[1].hardware == "H100");
  // tokens/s/GPU converts to iteration time: 8 x 8192 tokens / (6000 x 8 GPUs) = 1.3653 s.
  CHECK(r.cases[1].published == doctest::Approx(8.0 * 8192 / (6000.0 * 8)));
  REQUIRE(r.groups.size() == 1);
  CHECK(r.groups[0].gated);
  CHECK(r.groups[0].cases == 2);

  const testing::CliRun run = testing::run_cli("validate --published --data-only --data " + path);
  CHECK(run.output.find("newsrc_b") != std::string::npos);
  CHECK(run.output.find("newsrc ") != std::string::npos);
  // The JSON names each case's strategy family (the intervals' choice of like cases).
  const Json j = validation_json(r);
  CHECK(j.at("cases").at(1).at("family") == "dense");
  CHECK(j.at("cases").at(1).at("stack") == "torchtitan");
  CHECK(j.at("cases").at(1).at("baseline") == "");
}

TEST_CASE("validate: an MoE layer's own time is its MoE module's kernels, kept out of the intervals") {
  // Megatron-Core's layer benchmark times one MoELayer (router to combine): the prediction is
  // the layer's kernels from the router to the unpermute, here found by their names.
  const std::string moe_case = R"js([
    {"id": "moelayer_1", "source": "a test", "model": {"layers": 1, "hidden": 4096, "heads": 8,
     "seq_len": 4096, "vocab": 32000, "experts": 8, "top_k": 2, "moe_ffn_hidden": 14336,
     "ffn_hidden": 14336, "arch": "an MoE layer proxy"},
     "parallel": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1, "global_batch": 8,
                  "recompute": "none", "sequence_parallel": false},
     "hardware": {"gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "num_gpus": 8},
     "framework": "Megatron-Core", "precision": "bf16",
     "measured": {"moe_layer_forward_ms": 4.25, "moe_layer_backward_ms": 7.75}}])js";
  const std::string path = write_temp("stratasim_moe_layer_source.json", moe_case);
  const ValidationSet set = load_validation_set({path}, false);
  const ValidationReport r = validate_published(set);
  REQUIRE(r.cases.size() == 1);
  const CaseResult& c = r.cases[0];
  REQUIRE(c.failure.empty());
  CHECK(c.metric == "MoE layer fwd+bwd s");
  CHECK(c.published == doctest::Approx(12.0e-3));
  const Scenario s = read_scenario(set.cases[0].scenario, "moelayer_1");
  Expected<Plan> plan = lower(s.model, s.strategy, s.hardware);
  REQUIRE(plan.has_value());
  const Block& b = *plan->layer;
  const std::set<std::string> moe = {"router", "router_topk", "permute", "ep_token_count_gather",
                                     "ep_dispatch", "ep_dispatch_probs", "expert_fc1", "expert_gelu", "expert_fc2",
                                     "expert_fc2_bias", "ep_combine", "unpermute"};
  double by_name = 0, layer = 0;
  int named = 0;
  for (const std::vector<Kernel>* list : {&b.forward, &b.backward}) {
    const std::vector<KernelTiming> t = kernel_timings(*list, *plan);
    for (size_t i = 0; i < list->size(); ++i) {
      layer += t[i].exposed_s;
      if (moe.count(std::string(b.graph.ops[(*list)[i].first_op].name))) by_name += t[i].exposed_s, ++named;
    }
  }
  // Twelve kernels forward (the token counts' all-gather and the router weights' all-to-all
  // too), eleven backward: this proxy keeps the model's default biases, so TEGroupedMLP adds
  // fc2's per-expert bias (expert_fc2_bias).
  CHECK(named == 23);
  CHECK(c.predicted == doctest::Approx(by_name).epsilon(1e-12));
  CHECK(c.predicted < 0.9 * layer);  // attention and the norms are outside the module
  CHECK(case_errors(r).empty());     // a mechanism check, not an iteration: no interval from it

  // With a shared expert: its GEMMs and its bias + activation kernel join the module, and the
  // kernel fusing its add with the residual add after the MoELayer counts by its one op of two
  // inside (the rest of the layer is the same, so the difference is these alone).
  Json doc = parse_json_text(moe_case, "moe_case");
  doc[0]["id"] = "moelayer_shared";
  doc[0]["model"]["shared_experts"] = 1;
  const std::string shared_path = write_temp("stratasim_moe_layer_shared.json", doc.dump());
  const ValidationSet shared_set = load_validation_set({shared_path}, false);
  const ValidationReport shared_report = validate_published(shared_set);
  REQUIRE(shared_report.cases.size() == 1);
  const Scenario ss = read_scenario(shared_set.cases[0].scenario, "moelayer_shared");
  Expected<Plan> sp = lower(ss.model, ss.strategy, ss.hardware);
  REQUIRE(sp.has_value());
  double shared = 0;
  int fused = 0;
  for (const std::vector<Kernel>* list : {&sp->layer->forward, &sp->layer->backward}) {
    const std::vector<KernelTiming> t = kernel_timings(*list, *sp);
    for (size_t i = 0; i < list->size(); ++i) {
      const Kernel& k = (*list)[i];
      const std::string first(sp->layer->graph.ops[k.first_op].name), last(sp->layer->graph.ops[k.last_op].name);
      if (first == "shared_add" && last == "residual_add" && k.last_op == k.first_op + 1) {
        shared += t[i].exposed_s / 2, ++fused;
      } else if (first == "shared_fc1" || first == "shared_fc2" || first == "fc1_bias" || first == "gelu") {
        shared += t[i].exposed_s;
      }
    }
  }
  CHECK(fused == 2);  // forward and backward
  CHECK(shared_report.cases[0].predicted - c.predicted == doctest::Approx(shared).epsilon(1e-9));

  // The same measurement on a model without experts has nothing to compare: a failure, named.
  const std::string dense = write_temp("stratasim_moe_layer_dense.json", R"js([
    {"id": "moelayer_2", "source": "a test", "model": {"layers": 1, "hidden": 4096, "heads": 8,
     "seq_len": 4096, "vocab": 32000, "ffn_hidden": 14336, "arch": "a dense layer"},
     "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8,
                  "recompute": "none", "sequence_parallel": false},
     "hardware": {"gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "num_gpus": 8},
     "framework": "Megatron-Core", "precision": "bf16",
     "measured": {"moe_layer_forward_ms": 4.25, "moe_layer_backward_ms": 7.75}}])js");
  const ValidationReport d = validate_published(load_validation_set({dense}, false));
  REQUIRE(d.cases.size() == 1);
  CHECK(d.cases[0].failure == "an MoE layer's time measured, but the model has no experts");
}

TEST_CASE("validate: cases it cannot express yet are listed with the reason, not dropped") {
  const ValidationReport r = validate_published(load_validation_set({}));
  std::map<std::string, std::string> reason;
  for (const UnsupportedCase& u : r.unsupported) reason[u.id] = u.reason;
  CHECK(reason.count("titan_t2_llama8b_8gpu_fsdp4_cp2_s65536") == 0);  // context parallel: expressible
  CHECK(reason.count("mbridge2511_h100_qwen3_30b_a3b_16gpu_tp1pp2cp1ep8") == 0);  // MoE: expressible
  // DeepSeek-V3: MLA and its dense first layers come from a model rule (rules.json).
  CHECK(reason.count("mbridge2509_h100_deepseekv3_1024gpu_tp2pp8cp1ep64") == 0);
  // ResNet-101: an operator-graph preset from a model rule, pipelined (issue 16).
  CHECK(reason.count("gpipe_resnet101_pipeline2") == 0);
  // "moe" is a word of its own: AmoebaNet is a CNN (an operator-graph preset), not a mixture of
  // experts; its n=2, m=1 run is the baseline its group's speedups divide by.
  CHECK(reason.count("gpipe_amoebanetd_18_256_k4_m4") == 0);
  CHECK(reason.at("gpipe_amoebanetd_18_256_k2_m1") ==
        "the baseline its group's speedups divide by (predicted, not compared)");
  // GPT-OSS-120B: the source leaves its dims null; a model rule fills them (sliding window).
  CHECK(reason.count("mbridge2511_h100_gptoss120b_64gpu_tp1pp4cp1ep8") == 0);
  CHECK(reason.at("zero_fig1_7.5B_nd64_stage0").find("not a measurement") != std::string::npos);

  // A mixture of experts whose dims neither the source nor a rule states is named, not dropped.
  const std::string path = write_temp("stratasim_unstated_moe.json", R"js([
    {"id": "moesrc_1", "source": "a test", "model": {"layers": null, "hidden": null,
     "heads": null, "seq_len": 4096, "vocab": null, "arch": "some-moe-7b MoE (not stated)"},
     "parallel": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1, "global_batch": 8},
     "hardware": {"gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "num_gpus": 8},
     "framework": "Megatron-Core", "precision": "bf16",
     "measured": {"tokens_per_s_per_gpu": 6000}}])js");
  const ValidationReport unstated = validate_published(load_validation_set({path}, false));
  REQUIRE(unstated.unsupported.size() == 1);
  CHECK(unstated.unsupported[0].reason ==
        "mixture of experts whose architecture the source does not state (some-moe-7b MoE (not stated))");
}

TEST_CASE("validate: a malformed case names the file, the JSON path and the rule") {
  const std::string path = write_temp("stratasim_bad_case.json",
      R"([{"id": "bad_1", "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 8,
           "vocab": 10}, "parallel": {"tp": 1, "pp": 1, "dp": 1, "global_batch": 1,
           "micro_batch": 1, "recompute": "sometimes"},
           "hardware": {"gpu": "A100-SXM4-80GB", "num_gpus": 1}, "measured": {"iteration_s": 1}}])");
  // A text this cannot read as a recomputation is a listed reason (one odd phrasing must not
  // void a whole source); a value of the wrong type is malformed and names its path.
  const ValidationSet odd = load_validation_set({path}, false);
  REQUIRE(odd.cases.size() == 1);
  CHECK(odd.cases[0].unsupported ==
        "a recomputation this tool cannot read (parallel.recompute: \"sometimes\"; it knows full, "
        "selective, none)");
  const std::string typed = write_temp("stratasim_bad_type.json",
      R"([{"id": "bad_1", "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 8,
           "vocab": 10}, "parallel": {"tp": "one", "pp": 1, "dp": 1, "global_batch": 1,
           "micro_batch": 1}, "hardware": {"gpu": "A100-SXM4-80GB", "num_gpus": 1},
           "measured": {"iteration_s": 1}}])");
  CHECK_THROWS_WITH_AS(load_validation_set({typed}, false),
                       doctest::Contains("[0].parallel.tp: \"one\" must be a number or null"), InputError);
  const std::string gpu = write_temp("stratasim_bad_gpu.json",
      R"([{"id": "bad_2", "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 8,
           "vocab": 10}, "parallel": {"tp": 1, "pp": 1, "dp": 1, "global_batch": 1,
           "micro_batch": 1}, "hardware": {"gpu": "TPU v9", "num_gpus": 1},
           "measured": {"iteration_s": 1}}])");
  // A GPU no rule describes is a case not expressible yet: listed with the reason, the other
  // cases of the file still evaluated (one unknown card must not void a whole source).
  const testing::CliRun run = testing::run_cli("validate --published --data-only --data " + gpu);
  CHECK(run.code == 0);
  CHECK(run.output.find("bad_2") != std::string::npos);
  CHECK(run.output.find("a GPU no hardware rule in validate/data/rules.json describes "
                        "(hardware.gpu: \"TPU v9\"; add a rule for it)") != std::string::npos);
  const std::string no_hardware = write_temp("stratasim_no_hardware.json",
      R"([{"id": "bad_3", "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 8,
           "vocab": 10}, "parallel": {"tp": 1, "pp": 1, "dp": 1, "global_batch": 1,
           "micro_batch": 1}, "hardware": "TPU v9", "measured": {"iteration_s": 1}}])");
  const testing::CliRun malformed = testing::run_cli("validate --published --data-only --data " + no_hardware);
  CHECK(malformed.code == 2);
  CHECK(malformed.output.find("[0].hardware") != std::string::npos);
}

// A transformer as a scenario's model block states it.
TransformerSpec transformer(Json model) {
  model["family"] = "decoder";
  model["name"] = "test";
  return read_model(JsonNode(model, "test", "model")).transformer;
}

TEST_CASE("validate: flop conventions worked by hand") {
  const Json batch512 = {{"parallel", {{"global_batch", 512}}}};
  const Json batch1 = {{"parallel", {{"global_batch", 1}}}};
  // Narayanan Eq. 3 for the 1.7B row: B=512, s=2048, l=24, h=2304, V=51200:
  // 96*512*2048*24*2304^2 * (1 + 2048/13824 + 51200/884736) = 1.2837e16 * 1.20602 = 1.5482e16.
  const TransformerSpec gpt = transformer({{"layers", 24}, {"hidden", 2304}, {"heads", 24},
                                           {"seq_len", 2048}, {"vocab", 51200}});
  CHECK(iteration_flops("narayanan_hardware", batch512, gpt) == doctest::Approx(1.5482e16).epsilon(1e-3));
  // Without recomputation (Korthikanti Sec. 6): 72 * 1.2837e16/96 * (1 + 0.148148 + 51200/663552)
  // = 9.6278e15 * 1.225309 = 1.17969e16; flash-attention's 3/4 of Eq. 3: 0.75 * 1.5482e16.
  CHECK(iteration_flops("narayanan_model", batch512, gpt) == doctest::Approx(1.17969e16).epsilon(1e-3));
  CHECK(iteration_flops("narayanan_three_quarters", batch512, gpt) ==
        doctest::Approx(0.75 * 1.5482e16).epsilon(1e-3));
  // NeMo 24.07 non-causal model FLOPs for Llama 3 8B (README-published.md): 5.79e10 FLOP/token
  // = l h^2 (12 + 12 g/a + 18 f/h + 12 s/h + 6 V/(l h)) with l=32, h=4096, g=8, a=32,
  // f=14336, s=8192, V=128256; Megatron-Bridge's causal count (6 s/h): 5.15e10.
  const TransformerSpec llama = transformer({{"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"kv_heads", 8},
                                             {"ffn_hidden", 14336}, {"seq_len", 8192}, {"vocab", 128256},
                                             {"activation", "swiglu"}, {"norm", "rmsnorm"},
                                             {"tied_embeddings", false}, {"linear_bias", false},
                                             {"learned_positions", false}, {"rotary", true}});
  CHECK(iteration_flops("megatron_model_noncausal", batch1, llama) / 8192 ==
        doctest::Approx(5.79e10).epsilon(2e-3));
  CHECK(iteration_flops("megatron_model_causal", batch1, llama) / 8192 ==
        doctest::Approx(5.15e10).epsilon(2e-3));
  // TorchTitan / PaLM: 6 N_nonembedding + 12 l a d s. N_nonembedding = 32 layers x (attention
  // 4096*(4096 + 2*1024 + 4096) = 41,943,040 + MLP 3*4096*14336 = 176,160,768 + two RMSNorm
  // gains 8192 = 218,112,000) + final norm 4096 + output 128256*4096 = 525,336,576:
  // 7,504,924,672 (with the input embedding, 8.03e9: Llama 3 8B); attention 12*32*4096*8192 =
  // 12,884,901,888; per token 6 * 7,504,924,672 + 12,884,901,888 = 57,914,449,920.
  CHECK(iteration_flops("six_n_attention", batch1, llama) / 8192 == doctest::Approx(57914449920.0).epsilon(1e-9));
  CHECK(iteration_flops("six_n_attention_causal", batch1, llama) / 8192 ==
        doctest::Approx(57914449920.0 - 12884901888.0 / 2).epsilon(1e-9));
  // 6 N with every parameter: the input embedding (525,336,576) added.
  CHECK(iteration_flops("six_n", batch1, llama) / 8192 ==
        doctest::Approx(6.0 * (7504924672.0 + 525336576.0)).epsilon(1e-9));
  CHECK_THROWS_WITH_AS(iteration_flops("made_up", batch1, llama), doctest::Contains("made_up"),
                       InputError);
}

TEST_CASE("validate: the FLOP convention a case's own text states") {
  // As the development cases' curators wrote them, formula first.
  CHECK(convention_from_text("hardware FLOPs = 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) with recompute") ==
        "narayanan_hardware");
  CHECK(convention_from_text("F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))") == "narayanan_hardware");
  CHECK(convention_from_text("model FLOPs 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h))") == "narayanan_model");
  CHECK(convention_from_text("README: FLOPs from the Megatron-LM paper formula scaled by 3/4: "
                             "72*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))") == "narayanan_three_quarters");
  CHECK(convention_from_text("5.79e10 FLOP/token = l*h^2*(12 + 12*g/a + 18*f/h + 12*s/h + 6*V/(l*h))") ==
        "megatron_model_noncausal");
  CHECK(convention_from_text("5.15e10 FLOP/token = l*h^2*(12 + 12*g/a + 18*f/h + 6*s/h + 6*V/(l*h))") ==
        "megatron_model_causal");
  CHECK(convention_from_text("flop_per_token = 6*N_nonembedding + 12*l*n_heads*head_dim*seq_len "
                             "(no causal discount)") == "six_n_attention");
  CHECK(convention_from_text("MFU as in PaLM: 6N + 12*L*H*Q*T, attention counted causal") ==
        "six_n_attention_causal");
  // Words alone.
  CHECK(convention_from_text("the same non-causal Megatron/NeMo formula as NeMo 24.07") ==
        "megatron_model_noncausal");
  CHECK(convention_from_text("TFLOP/s as Narayanan et al. count them") == "narayanan_hardware");
  CHECK(convention_from_text("C = 6ND") == "six_n");
  // Nothing to go on, or both Eq. 3 forms offered as alternatives (vTrain's note): none.
  CHECK(convention_from_text("").empty());
  CHECK(convention_from_text("TFLOP/s per GPU as logged").empty());
  CHECK(convention_from_text("use 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)), or 96*B*s*l*h^2*(1 + s/(6h) + "
                             "V/(16*l*h)) when counting the recompute pass").empty());
}

TEST_CASE("validate: a FLOP rate of a source no group knows converts in the case's own convention") {
  // The probe (Llama 3 8B, 8 H100) measured only as Megatron-Bridge and NeMo print it: model
  // TFLOP/s per GPU, with the curators' convention texts. Converted back, each must give the
  // iteration time the same table's tokens/s give (Megatron-Bridge 25.09: 725 TFLOP/s and
  // 14,079 tokens/s/GPU; NeMo 24.07: 711 and 12,273), global batch 128 of 8192 tokens:
  // 128 * 8192 / (14079 * 8) = 9.3098 s and 128 * 8192 / (12273 * 8) = 10.6797 s.
  auto flop_rate_probe = [](double tflops, const char* convention) {
    return expressible_probe([&](Json& c) {
      c["parallel"]["global_batch"] = 128;
      c["measured"] = {{"model_tflops_per_gpu", tflops}};
      c["flop_convention"] = convention;
    });
  };
  const TranslatedCase bridge = flop_rate_probe(725, "Model TFLOP/s/GPU from flop_utils: 5.15e10 FLOP/token = "
      "l*h^2*(12 + 12*g/a + 18*f/h + 6*s/h + 6*V/(l*h))");
  REQUIRE(bridge.metrics.size() == 1);
  CHECK(bridge.metrics[0].published == doctest::Approx(9.3098).epsilon(0.002));
  CHECK(bridge.metrics[0].label == "iteration s (from TFLOP/s/GPU, megatron_model_causal, the case's flop_convention)");
  const TranslatedCase nemo = flop_rate_probe(711, "Back-computation shows NON-causal attention: "
      "l*h^2*(12 + 12*g/a + 18*f/h + 12*s/h + 6*V/(l*h))");
  REQUIRE(nemo.metrics.size() == 1);
  CHECK(nemo.metrics[0].published == doctest::Approx(10.6797).epsilon(0.002));
  // A TFLOP/s figure whose text states no convention compares with nothing, and says so.
  Json unknown = probe_json();
  unknown["id"] = "probe";
  unknown["measured"] = {{"tflops_per_gpu", 400}};
  unknown["flop_convention"] = "as logged";
  CHECK(translate_probe(unknown).unsupported ==
        "no measured value this tool can compare (measured: {\"tflops_per_gpu\":400})");
  // An MFU without a convention is PaLM's (6 N + 12 l a d s, 57,914,449,920 FLOP per token for
  // Llama 3 8B, worked in "flop conventions worked by hand") of the stated 989 TFLOP/s:
  // 8 GPUs x 8192 tokens x 57,914,449,920 / (0.40 x 989e12 x 8) = 1.19928 s; given as a
  // percentage it is the same.
  for (const double mfu : {0.40, 40.0}) {
    const TranslatedCase t = expressible_probe([&](Json& c) {
      c["measured"] = {{"mfu", mfu}};
      c["hardware"]["peak_tflops"] = {{"bf16_dense", 989}};
    });
    REQUIRE(t.metrics.size() == 1);
    CHECK(t.metrics[0].published == doctest::Approx(1.19928).epsilon(1e-4));
  }
  // Megatron's "percentage of theoretical peak" counts hardware FLOPs: read only in the
  // convention the text states. Eq. 3 for the probe (B 8, s 8192, l 32, h 4096, V 128256):
  // 96 * 8 * 8192 * 32 * 4096^2 * (1 + 1/3 + 128256/2097152) = 4.71017e15 FLOP, at 40% of
  // 989 TFLOP/s on 8 GPUs: 1.48830 s.
  const TranslatedCase megatron = expressible_probe([](Json& c) {
    c["measured"] = {{"pct_of_peak", 40}};
    c["hardware"]["peak_tflops"] = {{"bf16_dense", 989}};
    c["flop_convention"] = "96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))";
  });
  REQUIRE(megatron.metrics.size() == 1);
  CHECK(megatron.metrics[0].published == doctest::Approx(1.48830).epsilon(1e-4));
  Json unstated = probe_json();
  unstated["id"] = "probe";
  unstated["measured"] = {{"pct_of_peak", 40}};
  CHECK(translate_probe(unstated).unsupported.find("no measured value this tool can compare") == 0);
  // A case giving TFLOP/s and an MFU without a convention (the Llama 3 Herd's Table 4 does)
  // is read through its MFU: the same 1.19928 s as the MFU alone.
  const TranslatedCase both = expressible_probe([](Json& c) {
    c["measured"] = {{"model_tflops_per_gpu", 395.6}, {"mfu", 0.40}};
    c["hardware"]["peak_tflops"] = {{"bf16_dense", 989}};
    c["flop_convention"] = "as the paper reports it";
  });
  REQUIRE(both.metrics.size() == 1);
  CHECK(both.metrics[0].published == doctest::Approx(1.19928).epsilon(1e-4));
  CHECK(both.metrics[0].label.find("mfu") != std::string::npos);
  // Without a stated peak, the catalog device's (H100 SXM: 989 TFLOP/s dense bf16).
  const TranslatedCase catalog_peak = expressible_probe([](Json& c) { c["measured"] = {{"mfu", 0.40}}; });
  REQUIRE(catalog_peak.metrics.size() == 1);
  CHECK(catalog_peak.metrics[0].published == doctest::Approx(1.19928).epsilon(1e-4));
}

TEST_CASE("validate: DeepSpeed's pipeline splits layers the stages do not divide (BLOOM: 70 on 12)") {
  // The two-case source's Megatron-DeepSpeed case (24 layers) on pp 5: 24 = 5 + 5 + 5 + 5 + 4.
  Json c = parse_json_text(kTwoCaseSource, "test").at("cases").at(0);
  c["id"] = "probe";
  c["parallel"]["pp"] = 5;
  c["parallel"]["dp"] = 1;
  c["parallel"]["tp"] = 1;
  c["hardware"]["num_gpus"] = 5;
  const TranslatedCase t = translate_probe(c);
  REQUIRE_MESSAGE(t.unsupported.empty(), t.unsupported);
  CHECK(t.scenario.at("strategy").at("uneven_stages") == true);
  const Scenario sc = read_scenario(t.scenario, "probe");
  const Expected<Plan> plan = lower(sc.model, sc.strategy, sc.hardware);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  int layers = 0;
  for (const VirtualStage& st : plan->stages) layers += st.layers;
  CHECK(layers == 24);
}

TEST_CASE("validate: a stack that recomputes some layers searches how many with full recomputation") {
  // Megatron-Core (NeMo) with recomputation unstated: none, selective, full, and with full
  // the layers of each stage recomputed (Megatron's block method; 0 = all of them).
  const TranslatedCase free = expressible_probe([](Json& c) {
    c["framework"] = "NeMo (Megatron-Core)";
    c["parallel"]["recompute"] = nullptr;
  });
  const Json& search = free.scenario.at("search");
  REQUIRE(search.contains("recompute_layers"));
  CHECK(search.at("recompute_layers").at(0) == 0);
  CHECK(search.at("recompute_layers").size() > 3);
  // Stated recomputation: nothing searched.
  const TranslatedCase stated = expressible_probe([](Json& c) { c["framework"] = "NeMo (Megatron-Core)"; });
  const bool searched = stated.scenario.contains("search") && stated.scenario.at("search").contains("recompute_layers");
  CHECK_FALSE(searched);
  // A stack whose recomputation is all or nothing (Megatron-DeepSpeed) does not search it.
  const TranslatedCase deepspeed = expressible_probe([](Json& c) {
    c["framework"] = "Megatron-DeepSpeed";
    c["parallel"]["recompute"] = nullptr;
  });
  REQUIRE(deepspeed.scenario.at("search").contains("recompute"));
  CHECK_FALSE(deepspeed.scenario.at("search").contains("recompute_layers"));
}

TEST_CASE("validate: a source running all-gather context parallelism is read as such") {
  auto cp_probe = [](const std::function<void(Json&)>& edit) {
    return expressible_probe([&](Json& c) {
      c["parallel"]["cp"] = 2;
      c["parallel"]["dp"] = 4;
      edit(c);
    });
  };
  // The Llama 3 Herd's method (Sec. 3.3.2), named by its source or by the case's notes.
  const TranslatedCase herd = cp_probe([](Json& c) { c["source"] = {{"title", "The Llama 3 Herd of Models"}}; });
  CHECK(herd.scenario.at("strategy").value("cp_comm", "") == "all_gather");
  // and its pipeline layout: the first chunk only the embedding, the last only the loss.
  CHECK(herd.scenario.at("strategy").value("account_for_embedding_in_pipeline_split", false));
  CHECK(herd.scenario.at("strategy").value("account_for_loss_in_pipeline_split", false));
  const TranslatedCase notes = cp_probe([](Json& c) { c["parallel"]["notes"] = "CP with cp_comm_type=all_gather"; });
  CHECK(notes.scenario.at("strategy").value("cp_comm", "") == "all_gather");
  // Otherwise the stack's ring.
  CHECK_FALSE(cp_probe([](Json&) {}).scenario.at("strategy").contains("cp_comm"));
}

TEST_CASE("validate: LLM Foundry runs of 2022-23 attend with FlashAttention's Triton version, xformers with the first") {
  auto run = [](const char* framework, const char* year, const char* arch = nullptr) {
    return expressible_probe([&](Json& c) {
      c["framework"] = framework;
      c["hardware"]["gpu"] = "A100-SXM4-80GB";
      c["source"] = {{"title", "MPT training benchmarks"}, {"venue_year", year}};
      if (arch != nullptr) c["model"]["arch"] = arch;
    });
  };
  auto kernel = [](const TranslatedCase& t) {
    return t.scenario.at("strategy").at("fusion").value("attention_kernel", std::string("flash2"));
  };
  // LLM Foundry's MPT configurations and benchmark script set attn_impl triton through 2023
  // (MPT's copy of flash_attn_triton.py); a run naming attn_impl flash ran its gpu extra's
  // flash-attn 1.0.x. xformers dispatched to FlashAttention-1 until 0.0.21 (August 2023).
  const TranslatedCase foundry = run("LLM Foundry (Composer, PyTorch FSDP)", "2023");
  CHECK(foundry.stack == "pytorch-fsdp");
  CHECK(kernel(foundry) == "flash_triton");
  CHECK(kernel(run("LLM Foundry (Composer, PyTorch FSDP), attn_impl: flash", "2023")) == "flash1");
  CHECK(kernel(run("LLM Foundry (Composer, PyTorch FSDP)", "2023", "MPT, FlashAttention v1")) == "flash1");
  CHECK(kernel(run("xformers memory-efficient attention, FSDP", "arXiv (2023)")) == "flash1");
  // A case naming FlashAttention-2, or a 2024 source, keeps FlashAttention-2; so does a stack
  // outside those trainers.
  CHECK(kernel(run("LLM Foundry (Composer, PyTorch FSDP)", "2023", "MPT with FlashAttention-2")) == "flash2");
  CHECK(kernel(run("LLM Foundry (Composer, PyTorch FSDP)", "2024")) == "flash2");
  CHECK(kernel(run("TorchTitan", "2023")) != "flash1");
  // Any stack whose case names the first version.
  CHECK(kernel(run("an in-house trainer with FlashAttention v1", "2024")) == "flash1");
  // LLM Foundry's loss is flash-attn's fused cross-entropy (modeling_mpt.py loss_fn default),
  // whatever the year; a TorchTitan case's is not.
  CHECK(foundry.scenario.at("strategy").at("fusion").value("fused_loss", false));
  CHECK(run("LLM Foundry (Composer, PyTorch FSDP)", "2024").scenario.at("strategy").at("fusion").value("fused_loss", false));
  CHECK_FALSE(run("TorchTitan", "2024").scenario.at("strategy").at("fusion").value("fused_loss", false));
  // MPT trains without dropout (MPTConfig's pdrop defaults 0).
  const TranslatedCase mpt = run("LLM Foundry (Composer, PyTorch FSDP)", "2023", "MPT: LayerNorm without bias, GeLU MLP");
  CHECK(mpt.scenario.at("model").value("dropout", true) == false);
  CHECK(mpt.scenario.at("model").value("linear_bias", true) == false);
}

TEST_CASE("validate: a case's group-limited routing reaches the scenario's MoE") {
  // Megatron-LM's MoE layer benchmark's DeepSeek proxy (moe_perf/test_cases.py DEEPSEEK_PROXY:
  // moe_router_num_groups 8, moe_router_group_topk 4): router_groups, router_group_top_k.
  const TranslatedCase grouped = expressible_probe([](Json& c) {
    c["model"]["experts"] = 32;
    c["model"]["top_k"] = 8;
    c["model"]["router_groups"] = 8;
    c["model"]["router_group_top_k"] = 4;
  });
  const Json& moe = grouped.scenario.at("model").at("moe");
  CHECK(moe.at("groups") == 8);
  CHECK(moe.at("group_top_k") == 4);
  // Without them, no limit.
  const TranslatedCase open = expressible_probe([](Json& c) {
    c["model"]["experts"] = 32;
    c["model"]["top_k"] = 8;
  });
  CHECK_FALSE(open.scenario.at("model").at("moe").contains("groups"));
}

TEST_CASE("validate: flash-attn's training scripts fuse the MLP's GeLU into its GEMM, except on Hopper") {
  auto run = [](const char* gpu) {
    return expressible_probe([&](Json& c) {
      c["framework"] = "flash-attention training scripts";
      c["hardware"]["gpu"] = gpu;
    });
  };
  auto in_gemm = [](const TranslatedCase& t) {
    return t.scenario.at("strategy").at("fusion").value("gemm_activation", false);
  };
  // FusedDenseGeluDense / FusedMLP: cuBLASLt's GELU_AUX epilogue (heuristic 0) on A100; FusedMLP's
  // heuristic "auto" is -1 on compute capability 9.0, a plain GEMM and a GeLU kernel.
  const TranslatedCase a100 = run("A100-SXM4-80GB");
  CHECK(a100.stack == "flash-attention-scripts");
  CHECK(in_gemm(a100));
  CHECK_FALSE(in_gemm(run("H100-SXM5-80GB")));
  CHECK_FALSE(in_gemm(run("H200")));
}

TEST_CASE("validate: every stack and modifier composes a strategy the reader accepts") {
  // The rules compose a strategy from a stack and any modifiers that match; no combination of
  // framework text, year and GPU may give one the scenario reader refuses (a modifier setting
  // Megatron's loss ops on an FSDP stack without its fused loss once did).
  const char* frameworks[] = {"Megatron-LM", "Megatron-Core r0.8.0", "NeMo", "Megatron-Bridge",
                              "Megatron-DeepSpeed", "DeepSpeed ZeRO-3", "TorchTitan", "LLM Foundry (Composer)",
                              "metaseq (FSDP with Megatron-LM tensor parallelism)", "fairscale",
                              "xformers", "PyTorch FSDP", "an in-house trainer",
                              "flash-attention training scripts", "Megatron-LM with FlashAttention v1"};
  for (const char* framework : frameworks) {
    for (const char* year : {"2021", "2023", "2025"}) {
      for (const char* gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"}) {
        CAPTURE(framework);
        CAPTURE(year);
        CAPTURE(gpu);
        Json c = probe_json();
        c["id"] = "probe";
        c["framework"] = framework;
        c["source"] = {{"title", "a run"}, {"venue_year", year}};
        c["hardware"]["gpu"] = gpu;
        const TranslatedCase t = translate_probe(c);
        REQUIRE_MESSAGE(t.unsupported.empty(), t.unsupported);
        CHECK_NOTHROW(read_strategy(JsonNode(t.scenario.at("strategy"), "case", "strategy")));
      }
    }
  }
}

TEST_CASE("validate: Megatron-LM's bf16 gradients are accumulated and reduced in fp32, its loss runs as separate ops") {
  auto run = [](const char* framework, const char* precision, const char* notes = "") {
    return expressible_probe([&](Json& c) {
      c["framework"] = framework;
      c["precision"] = precision;
      c["parallel"]["notes"] = notes;
    });
  };
  auto fp32_reduce = [](const TranslatedCase& t) { return t.scenario.at("strategy").value("grad_reduce_fp32", false); };
  auto loss_ops = [](const TranslatedCase& t) {
    return t.scenario.at("strategy").at("fusion").value("megatron_loss_ops", false);
  };
  // arguments.py: bf16 sets accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16.
  CHECK(fp32_reduce(run("Megatron-LM", "bf16")));
  CHECK(fp32_reduce(run("Megatron-Core r0.8.0", "BF16 mixed precision")));
  CHECK_FALSE(fp32_reduce(run("Megatron-LM", "fp16")));
  CHECK_FALSE(fp32_reduce(run("Megatron-LM", "bf16", "--grad-reduce-in-bf16")));
  // NeMo and Megatron-Bridge configure their own DDP; TorchTitan reduces in fp32 by its own rule.
  CHECK_FALSE(fp32_reduce(run("NeMo 24.07 (Megatron-Core)", "bf16")));
  CHECK(fp32_reduce(run("TorchTitan", "bf16")));
  // The loss: Megatron's ops unless the case names the fusion; NeMo fuses it.
  CHECK(loss_ops(run("Megatron-LM", "bf16")));
  CHECK_FALSE(loss_ops(run("Megatron-LM", "bf16", "--cross-entropy-loss-fusion")));
  // The same flag as a harness describes it (Megatron-MoE-ModelZoo: "TE cross-entropy fusion").
  CHECK(loss_ops(run("Megatron-Core (dev branch)", "bf16", "router fp32, manual GC 5")));
  CHECK_FALSE(loss_ops(run("Megatron-Core (dev branch)", "bf16", "router fp32, TE cross-entropy fusion, manual GC 5")));
  CHECK_FALSE(loss_ops(run("NeMo 24.07 (Megatron-Core)", "bf16")));
}

TEST_CASE("validate: 3D-parallel DeepSpeed with Megatron and FSDP trainers with Megatron layers") {
  // DeepSpeed named with Megatron-LM in either order is Megatron-DeepSpeed (BigScience's and
  // Microsoft's runs name it both ways).
  const TranslatedCase mtnlg = expressible_probe([](Json& c) {
    c["framework"] = "DeepSpeed and Megatron-LM (3D parallelism)";
    c["hardware"]["gpu"] = "A100-SXM4-80GB";
  });
  CHECK(mtnlg.stack == "megatron-deepspeed");
  // Megatron's fused kernels, but its Llama-style layers' RMSNorm, rotary and SwiGLU in eager
  // PyTorch (megatron/model/rmsnorm.py, transformer.py's swiglu): fused_norm off.
  CHECK(mtnlg.scenario.at("strategy").at("fusion").at("preset") == "megatron");
  CHECK(mtnlg.scenario.at("strategy").at("fusion").at("fused_norm") == false);
  // In bf16 it trains through DeepSpeed's BF16_Optimizer: fp32 gradients, reduced in fp32; in
  // fp16 (the FP16 optimizer) in fp16.
  CHECK(mtnlg.scenario.at("strategy").value("grad_reduce_fp32", false));
  const TranslatedCase fp16 = expressible_probe([](Json& c) {
    c["framework"] = "Megatron-DeepSpeed";
    c["precision"] = "fp16";
  });
  CHECK_FALSE(fp16.scenario.at("strategy").value("grad_reduce_fp32", false));
  // metaseq borrowed Megatron's model-parallel linears but is an FSDP trainer; before 2023,
  // and naming no flash or xformers attention, its attention is unfused.
  auto metaseq = [](const char* source) {
    return expressible_probe([&](Json& c) {
      c["framework"] = "metaseq (FSDP with Megatron-LM tensor parallelism)";
      c["hardware"]["gpu"] = "A100-SXM4-80GB";
      c["source"] = {{"title", source}};
    });
  };
  const TranslatedCase opt = metaseq("OPT (2022)");
  CHECK(opt.stack == "pytorch-fsdp");
  CHECK(opt.scenario.at("strategy").at("fusion").at("flash_attention") == false);
  const TranslatedCase later = metaseq("a 2023 run");
  CHECK(later.scenario.at("strategy").at("fusion").at("flash_attention") == true);
  // Its loss is Megatron's vocab-parallel cross-entropy, as Megatron runs it; the strategy the
  // rules compose is one the reader accepts.
  CHECK(opt.scenario.at("strategy").at("fusion").value("megatron_loss_ops", false));
  CHECK(opt.scenario.at("strategy").at("fusion").value("fused_loss", false));
  for (const TranslatedCase* t : {&mtnlg, &opt, &later}) {
    CHECK_NOTHROW(read_strategy(JsonNode(t->scenario.at("strategy"), "case", "strategy")));
  }
}

TEST_CASE("validate: a global batch its data replicas do not divide runs the nearest multiple") {
  // 8 sequences over 3 data replicas (tp 1, pp 1 on 3 GPUs): 8 / 3 rounds to 3 each, 9 in all;
  // the prediction is scaled back by 8 / 9, the throughput being what the source measured.
  const TranslatedCase t = expressible_probe([](Json& c) {
    c["hardware"]["num_gpus"] = 3;
    c["parallel"]["dp"] = nullptr;
  });
  CHECK(t.scenario.at("strategy").at("global_batch") == 9);
  CHECK(t.batch_scale == doctest::Approx(8.0 / 9.0));
  CHECK(t.batch_note == "global batch 8 -> 9 (3 data replicas; time scaled back)");
  // Dividing batches run as stated.
  const TranslatedCase even = expressible_probe([](Json&) {});
  CHECK(even.scenario.at("strategy").at("global_batch") == 8);
  CHECK(even.batch_scale == 1);
  CHECK(even.batch_note.empty());
}

TEST_CASE("validate: measured quantities and model and parallel fields under the names sources give them") {
  // A step time in ms and a per-GPU token rate under other names read as the usual ones; the
  // case's own usual name wins where it gives both.
  const TranslatedCase ms = expressible_probe([](Json& c) { c["measured"] = {{"step_time_ms", 1500}}; });
  REQUIRE(ms.metrics.size() == 1);
  CHECK(ms.metrics[0].published == doctest::Approx(1.5));
  const TranslatedCase tps = expressible_probe([](Json& c) {
    c["measured"] = {{"tokens_per_gpu_per_s", 8192}};  // 8 x 8192 tokens over 8 GPUs: 1 s
  });
  REQUIRE(tps.metrics.size() == 1);
  CHECK(tps.metrics[0].published == doctest::Approx(1.0));
  const TranslatedCase both = expressible_probe([](Json& c) {
    c["measured"] = {{"iteration_s", 2.0}, {"step_time_s", 3.0}};
  });
  CHECK(both.metrics.at(0).published == doctest::Approx(2.0));
  // Model and parallel fields under Hugging Face's and Megatron's names give the same scenario.
  const TranslatedCase usual = expressible_probe([](Json&) {});
  const TranslatedCase renamed = expressible_probe([](Json& c) {
    Json& m = c["model"];
    for (auto [from, to] : {std::pair{"layers", "num_layers"}, {"hidden", "hidden_size"},
                            {"heads", "num_attention_heads"}, {"kv_heads", "num_key_value_heads"},
                            {"ffn_hidden", "intermediate_size"}, {"vocab", "vocab_size"},
                            {"seq_len", "seq_length"}}) {
      m[to] = m.at(from);
      m.erase(from);
    }
    Json& p = c["parallel"];
    p["global_batch_size"] = p.at("global_batch");
    p.erase("global_batch");
    p["tensor_parallel"] = p.at("tp");
    p.erase("tp");
  });
  CHECK(renamed.scenario.at("model") == usual.scenario.at("model"));
  CHECK(renamed.scenario.at("strategy") == usual.scenario.at("strategy"));
}

TEST_CASE("validate: cloud instances named by the source bring their networks") {
  auto on = [](const char* gpu, const char* system) {
    const TranslatedCase t = expressible_probe([&](Json& c) {
      c["hardware"] = {{"gpu", gpu}, {"gpus_per_node", 8}, {"num_gpus", 8}, {"system", system}};
    });
    return read_cluster(JsonNode(t.scenario.at("cluster"), "probe", "cluster"));
  };
  // AWS p4d: 4 x 100 Gb/s EFA per instance of 8 A100 40 GB; p4de the same with 80 GB.
  const HardwareModel p4d = on("A100 40GB", "AWS p4d.24xlarge");
  CHECK(p4d.node.nics == 4);
  CHECK(p4d.node.nic.bandwidth_Bps == doctest::Approx(100e9 / 8));
  CHECK(p4d.device.memory_B < 45e9);
  const HardwareModel p4de = on("A100 80GB", "AWS p4de.24xlarge");
  CHECK(p4de.node.nics == 4);
  CHECK(p4de.device.memory_B > 80e9);
  // Google Cloud A2: 100 Gb/s per machine, no GPUDirect RDMA.
  const HardwareModel a2 = on("A100 40GB", "GCP a2-highgpu-8g");
  CHECK(a2.node.nics == 1);
  CHECK(a2.node.nic.bandwidth_Bps == doctest::Approx(100e9 / 8));
  // A DGX-class system keeps 8 x 200 Gb/s.
  CHECK(on("A100 80GB", "DGX A100 SuperPOD").node.nics == 8);
}

TEST_CASE("validate: every gated group is within the tolerance its data states") {
  const ValidationReport r = validate_published(load_validation_set({}));
  int gated = 0;
  for (const GroupSummary& g : r.groups) {
    CAPTURE(g.name);
    CAPTURE(g.mape);
    CAPTURE(g.max_abs_error);
    if (!g.gated) continue;
    ++gated;
    CHECK(g.within_tolerance);
    CHECK(!g.why.empty());
    // A gate that cannot fail is no gate: at most 1.5x the measured MAPE (floor 3%).
    CHECK(g.tolerance.mape <= std::max(0.03, 1.5 * g.mape) + 1e-9);
  }
  CHECK(gated >= 8);
  CHECK(r.all_within_tolerance);
}

TEST_CASE("validate: the gate fails when device GEMM efficiency is perturbed by 10%") {
  ValidationSet set = load_validation_set({});
  for (TranslatedCase& c : set.cases) {
    if (!c.unsupported.empty()) continue;
    Json& cluster = c.scenario["cluster"];
    const std::string device = catalog_cluster(cluster.at("preset").get<std::string>()).device.name;
    const double f = catalog_device(device).matmul.max_fraction;
    cluster["device"]["efficiency"]["matmul"]["max_fraction"] = std::min(1.0, 1.1 * f);
  }
  const ValidationReport r = validate_published(set);
  CHECK_FALSE(r.all_within_tolerance);
}

TEST_CASE("validate: TorchTitan's selective means its per-op policy, its loss is eager until 2025") {
  // rules.json: the torchtitan stack maps a plain "selective" to op_selective; a compiled run
  // of the 2024 benchmarks leaves the loss eager (train.py: "TODO: compiling loss function
  // causes CUDA errors"), one of the 2025 releases compiles it (loss.py).
  auto translated = [](const std::string& venue) {
    Json c = probe_json();
    c["id"] = "titan_probe";
    c["parallel"]["recompute"] = "selective";
    c["parallel"]["notes"] = "torch.compile";
    c["source"] = {{"title", "probe"}, {"venue_year", venue}};
    return translate_probe(c);
  };
  const TranslatedCase y2024 = translated("GitHub benchmarks (2024-12)");
  CHECK(y2024.stack == "torchtitan");
  const Json& s24 = y2024.scenario.at("strategy");
  CHECK(s24.at("recompute") == "op_selective");
  CHECK(s24.at("fusion").at("fused_loss") == false);
  CHECK(s24.at("fusion").at("preset") == "all");
  const TranslatedCase y2025 = translated("GitHub benchmarks (2025-06)");
  const Json& s25 = y2025.scenario.at("strategy");
  CHECK(s25.at("fusion").at("fused_loss") == true);
}

TEST_CASE("validate: recomputation named on or off in the source's words") {
  auto recompute = [](const Json& text) {
    return expressible_probe([&](Json& c) { c["parallel"]["recompute"] = text; })
        .scenario.at("strategy")
        .at("recompute");
  };
  CHECK(recompute("full activation checkpointing") == "full");
  CHECK(recompute("activation checkpointing") == "full");
  CHECK(recompute("yes") == "full");
  CHECK(recompute(true) == "full");
  CHECK(recompute("no activation checkpointing") == "none");
  CHECK(recompute("without activation checkpointing") == "none");
  CHECK(recompute("activation checkpointing: no") == "none");
  CHECK(recompute("checkpointing disabled") == "none");
  CHECK(recompute("none") == "none");
  CHECK(recompute(false) == "none");
}

TEST_CASE("validate: Hugging Face Llama models run separate projections, and repeat K/V under SDPA") {
  auto strategy = [](const std::string& framework, const std::string& arch) {
    return expressible_probe([&](Json& c) {
             c["framework"] = framework;
             c["model"]["arch"] = arch;
           })
        .scenario.at("strategy");
  };
  const Json sdpa = strategy("Hugging Face Trainer with DeepSpeed ZeRO-3, SDPA attention", "Llama 3");
  CHECK(sdpa.at("fusion").at("separate_linears") == true);
  CHECK(sdpa.at("kv_repeat") == true);
  const Json flash = strategy("Hugging Face transformers, flash_attention_2, FSDP", "Llama 3");
  CHECK(flash.at("fusion").at("separate_linears") == true);
  CHECK_FALSE(flash.contains("kv_repeat"));
  // GPT-2's fused c_attn: not a Llama-family model, nothing changes.
  const Json gpt2 = strategy("Hugging Face transformers, SDPA", "GPT-2");
  CHECK_FALSE(gpt2.at("fusion").contains("separate_linears"));
  CHECK_FALSE(gpt2.contains("kv_repeat"));
}

TEST_CASE("validate: FSDP's sharding strategy names and ZeRO stages written as text") {
  // torch.distributed.fsdp's ShardingStrategy: FULL_SHARD is ZeRO-3, SHARD_GRAD_OP ZeRO-2,
  // NO_SHARD none, HYBRID_SHARD ZeRO-3 inside each node (FSDP's default intra-node groups)
  // with replicas across nodes; a zero_stage written "ZeRO-2" or "stage 1" is read as its digit.
  auto strategy = [](const Json& fsdp, const Json& zero) {
    return expressible_probe([&](Json& c) {
             c["parallel"]["fsdp"] = fsdp;
             c["parallel"]["zero_stage"] = zero;
             c["hardware"]["num_gpus"] = 16;
             c["parallel"]["dp"] = 16, c["parallel"]["global_batch"] = 16;
           })
        .scenario.at("strategy");
  };
  CHECK(strategy("FULL_SHARD", nullptr).at("zero_stage") == 3);
  CHECK(strategy("fully sharded (FSDP2)", nullptr).at("zero_stage") == 3);
  CHECK(strategy("SHARD_GRAD_OP", nullptr).at("zero_stage") == 2);
  const Json hybrid = strategy("HYBRID_SHARD", nullptr);
  CHECK(hybrid.at("zero_stage") == 3);
  CHECK(hybrid.at("shard_group") == 8);  // the probe's 8 GPUs a node
  CHECK(strategy("_HYBRID_SHARD_ZERO2", nullptr).at("zero_stage") == 2);
  CHECK(strategy("NO_SHARD", nullptr).value("zero_stage", 0) == 0);
  CHECK(strategy(nullptr, "ZeRO-2").at("zero_stage") == 2);
  CHECK(strategy(nullptr, "stage 1 (distributed optimizer)").at("zero_stage") == 1);
  CHECK(strategy(nullptr, 3).at("zero_stage") == 3);
  // Text that names no stage leaves the stack's choice (TorchTitan's: FSDP, ZeRO-3 by its stack
  // only where the case says so; the probe's none).
  CHECK(strategy(nullptr, "not stated").value("zero_stage", 0) == strategy(nullptr, nullptr).value("zero_stage", 0));
}

TEST_CASE("validate: a case that says it ran without torch.compile stays eager") {
  // rules.json's compile modifier matches the word "compile" in the framework or the notes;
  // the IBM/PyTorch FSDP blog's rows say "no torch.compile" (eager FSDP), which the word alone
  // had read as compiled (Inductor's fused norms, rotary and SwiGLU).
  auto strategy = [](const std::string& framework) {
    return expressible_probe([&](Json& c) {
             c["id"] = "fsdp_compile_probe";
             c["framework"] = framework;
           })
        .scenario.at("strategy");
  };
  // IBM's foundation-model-stack: separate q/k/v and wg/w1 linears, K/V expanded before SDPA.
  const Json fms = strategy("PyTorch FSDP, IBM foundation-model-stack, no torch.compile");
  CHECK(fms.at("fusion").at("separate_linears") == true);
  CHECK(fms.at("kv_repeat") == true);
  CHECK_FALSE(strategy("PyTorch FSDP").contains("kv_repeat"));
  const Json compiled = strategy("PyTorch FSDP, SDPA FlashAttention v2, torch.compile");
  CHECK(compiled.at("fusion").at("compiled") == true);
  CHECK(compiled.at("fusion").at("preset") == "all");
  for (const char* eager : {"PyTorch FSDP, SDPA FlashAttention v2, no torch.compile",
                            "PyTorch FSDP without torch.compile", "PyTorch FSDP (not compiled)",
                            "PyTorch FSDP, torch.compile=False"}) {
    CAPTURE(eager);
    const Json s = strategy(eager);
    CHECK_FALSE(s.at("fusion").contains("compiled"));
    CHECK_FALSE(s.at("fusion").contains("preset"));
  }
}

TEST_CASE("validate: TorchTitan's compiled context parallelism waits for each exchange where it is issued") {
  // rules.json modifier: TorchTitan compiles each block with fullgraph=True, so its ring
  // attention is traced and each functional collective waited at once (cp_overlap false); an
  // eager TorchTitan run keeps PyTorch's asynchronous collectives (the default, true), and so
  // does a compiled run of another trainer, whose attention the rule does not claim is traced.
  auto translated = [](const std::string& framework, const std::string& notes) {
    return expressible_probe([&](Json& c) {
      c["id"] = "titan_cp_probe";
      c["parallel"]["cp"] = 2, c["parallel"]["dp"] = 4;
      c["parallel"]["notes"] = notes;
      c["framework"] = framework;
    });
  };
  const TranslatedCase compiled = translated("TorchTitan", "context parallel, torch.compile, Float8");
  CHECK(compiled.stack == "torchtitan");
  CHECK(compiled.scenario.at("strategy").at("cp_overlap") == false);
  const TranslatedCase eager = translated("TorchTitan", "context parallel");
  CHECK_FALSE(eager.scenario.at("strategy").contains("cp_overlap"));
  const TranslatedCase off = translated("TorchTitan", "context parallel, compile=False");
  CHECK_FALSE(off.scenario.at("strategy").contains("cp_overlap"));
  const TranslatedCase other = translated("NeMo AutoModel", "PyTorch's context_parallel, torch.compile");
  CHECK(other.stack != "torchtitan");
  CHECK_FALSE(other.scenario.at("strategy").contains("cp_overlap"));
}

TEST_CASE("validate: Megatron-Core overlaps interleaved sends, NeMo 24.03/24.07 rows run their launcher's settings") {
  // rules.json: the megatron-core stack sets overlap_p2p_interleaved (Megatron-Core's
  // overlap_p2p_comm, read by its interleaved schedule only); a modifier turns the stack's
  // userbuffers TP overlap off for NeMo 24.03's long-sequence Llama 2 7B rows, whose
  // configuration is unpublished (NeMo 1.x's ub_tp_comm_overlap default, False), and only them.
  auto translated = [](const std::string& id, const std::string& framework) {
    return expressible_probe([&](Json& c) {
      c["id"] = id;
      c["parallel"]["tp"] = 2, c["parallel"]["dp"] = 2;
      c["framework"] = framework;
    });
  };
  const TranslatedCase longseq = translated("nemo_longseq_h100_llama2_7b_s16k_probe", "NeMo 24.03.01 container");
  CHECK(longseq.stack == "megatron-core");
  CHECK(longseq.scenario.at("strategy").at("overlap_tp") == false);
  CHECK(longseq.scenario.at("strategy").at("overlap_p2p_interleaved") == true);
  const TranslatedCase table = translated("nemo2407_h100_fp8_probe", "NeMo 24.07 container");
  CHECK(table.stack == "megatron-core");
  CHECK(table.scenario.at("strategy").at("overlap_tp") == true);
  CHECK(table.scenario.at("strategy").at("overlap_p2p_interleaved") == true);
  // NeMo-Framework-Launcher 24.07 runs with NVTE_FUSED_ATTN=0: flash-attn 2, not cuDNN, except
  // in the GPT-3 175B script (NVTE_FUSED_ATTN=1); the long-sequence rows run the environment of
  // launcher 24.05 (their container's), NVTE_FUSED_ATTN=0 too.
  CHECK(table.scenario.at("strategy").at("fusion").at("attention_kernel") == "flash2");
  const TranslatedCase gpt175 = translated("nemo2407_h100_fp8_gpt3_175b_probe", "NeMo 24.07 container");
  CHECK(gpt175.scenario.at("strategy").at("fusion").at("attention_kernel") == "cudnn");
  CHECK(longseq.scenario.at("strategy").at("fusion").at("attention_kernel") == "flash2");
}

TEST_CASE("validate: NeMo 1.x launcher rows keep the master as remainders, Nemotron-4 340B's recipe keeps bf16 states") {
  // rules.json: the launcher's recipes of 2024 name distributed_fused_adam (Apex), for which
  // NeMo's setup_optimization sets store_param_remainders with bf16 parameters and fp32
  // states; Nemotron-4 340B's recipe at tag 24.07 sets optim dtype bf16 (no master at all);
  // the Nemotron 8B/22B example scripts leave grad_sync_dtype at the state dtype, fp32.
  auto translated = [](const std::string& id, const std::string& framework, const std::string& precision) {
    return expressible_probe([&](Json& c) {
      c["id"] = id;
      c["framework"] = framework;
      c["precision"] = precision;
    });
  };
  auto strategy = [](const TranslatedCase& t) { return t.scenario.at("strategy"); };
  const TranslatedCase llama = translated("nemo2407_h100_fp8_llama2_7b_probe", "NeMo 24.07 container", "FP8");
  CHECK(strategy(llama).value("master_param_remainders", false));
  CHECK(strategy(llama).value("master_weights_fp32", true));  // the default: an fp32 master
  CHECK_FALSE(strategy(llama).value("grad_reduce_fp32", false));
  CHECK(strategy(translated("nemo_longseq_h100_llama2_7b_probe", "NeMo 24.03.01 container", "FP8"))
            .value("master_param_remainders", false));
  const TranslatedCase n340 = translated("nemo2407_h100_fp8_nemotron_340b_probe", "NeMo 24.07 container", "FP8");
  CHECK_FALSE(strategy(n340).value("master_param_remainders", true));
  CHECK_FALSE(strategy(n340).value("master_weights_fp32", true));
  CHECK(strategy(n340).value("optimizer_moments", std::string()) == "bf16");
  CHECK(strategy(translated("nemo2407_h100_fp8_nemotron_8b_probe", "NeMo 24.07 container", "FP8"))
            .value("grad_reduce_fp32", false));
  // GPT-3 175B's and Nemotron-4 340B's recipes leave userbuffers off (ub_tp_comm_overlap
  // False): TP collectives in line but for the input gradient's reduce-scatter; 340B's does not
  // overlap the interleaved schedule's sends either. The other rows keep the stack's overlap.
  const TranslatedCase gpt175 = translated("nemo2407_h100_fp8_gpt3_175b_probe", "NeMo 24.07 container", "FP8");
  CHECK_FALSE(strategy(gpt175).value("overlap_tp", true));
  CHECK(strategy(gpt175).value("async_tp_grad_reduce", false));
  CHECK(strategy(gpt175).value("overlap_p2p_interleaved", false));
  CHECK_FALSE(strategy(n340).value("overlap_tp", true));
  CHECK_FALSE(strategy(n340).value("overlap_p2p_interleaved", true));
  CHECK(strategy(llama).value("overlap_tp", false));
  // The launcher's recipes named distributed_fused_adam from release 23.03; NeMo 2.0 (24.09 on)
  // uses Megatron-Core's distributed optimizer.
  CHECK(strategy(translated("nemo_2023_probe", "NeMo Megatron 23.05 container", "bf16")).value("master_param_remainders", false));
  CHECK_FALSE(strategy(translated("nemo_2412_probe", "NeMo 24.12 container", "bf16")).value("master_param_remainders", false));
  // Megatron-Bridge (Megatron-Core's distributed optimizer) and fp16 runs keep a whole master.
  CHECK_FALSE(strategy(translated("mbridge2511_h100_llama3_8b_probe", "Megatron-Bridge in NeMo 25.11 container", "FP8"))
                  .value("master_param_remainders", false));
  CHECK_FALSE(strategy(translated("nemo_fp16_probe", "NeMo 24.07 container", "fp16")).value("master_param_remainders", false));
}

TEST_CASE("validate: Megatron-Bridge's FP8 current-scaling rows gather FP8 parameters, and only they") {
  // rules.json: Megatron-Bridge's bf16_with_fp8_current_scaling_mixed sets fp8_param_gather,
  // which its performance scripts take for every FP8-CS row; NeMo 24.07's delayed scaling and
  // Megatron-Bridge's bf16 rows do not get it.
  auto translated = [](const std::string& framework, const std::string& precision) {
    return expressible_probe([&](Json& c) {
      c["parallel"]["dp"] = 2;
      c["framework"] = framework;
      c["precision"] = precision;
    });
  };
  auto gathers_fp8 = [](const TranslatedCase& t) {
    return t.scenario.at("strategy").value("fp8_param_gather", false);
  };
  const TranslatedCase cs = translated("Megatron-Bridge in NeMo 25.11 container (Megatron-Core, Transformer Engine)",
                                       "FP8 current (per-tensor) scaling");
  CHECK(cs.stack == "megatron-core");
  CHECK(cs.scenario.at("strategy").at("fp8_scaling") == "current");
  CHECK(gathers_fp8(cs));
  CHECK_FALSE(gathers_fp8(translated("Megatron-Bridge in NeMo 26.04.01 container (Megatron-Core, Transformer Engine)", "bf16")));
  CHECK_FALSE(gathers_fp8(translated("NeMo 24.07 container", "FP8 (delayed scaling, Transformer Engine)")));
}

TEST_CASE("validate: a TorchTitan pipeline the source leaves unstated runs the stack's defaults") {
  // rules.json, torchtitan stack "pipeline": n_microbatches = pp (pipelining_utils.py at the
  // benchmark commit), so a local batch of 256 / 8 = 32 sequences runs as 8 micro-batches of 4;
  // an interleaved schedule named without its depth has 2 stages per rank.
  auto translated = [](const std::string& schedule) {
    Json c = probe_json();
    c["id"] = "titan_pp_probe";
    c["parallel"]["tp"] = 8, c["parallel"]["pp"] = 8, c["parallel"]["dp"] = 8;
    c["parallel"]["global_batch"] = 256, c["parallel"]["micro_batch"] = nullptr;
    c["parallel"]["schedule"] = schedule;
    c["hardware"]["num_gpus"] = 512;
    return translate_probe(c);
  };
  const TranslatedCase one = translated("1F1B");
  CHECK(one.stack == "torchtitan");
  CHECK(one.scenario.at("strategy").at("micro_batch") == 4);
  CHECK(one.scenario.at("strategy").at("schedule") == "1f1b");
  const TranslatedCase interleaved = translated("interleaved 1F1B");
  const Json& inter = interleaved.scenario.at("strategy");
  CHECK(inter.at("micro_batch") == 4);
  CHECK(inter.at("schedule") == "interleaved");
  CHECK(inter.at("interleave") == 2);
  // Without pipeline parallelism the stack's free micro-batch sizes are searched as before.
  Json c = probe_json();
  c["parallel"]["micro_batch"] = nullptr;
  const TranslatedCase flat = translate_probe(c);
  CHECK_FALSE(flat.scenario.at("strategy").contains("micro_batch"));
}

TEST_CASE("validate: a speedup is the case's predicted samples/s over its baseline case's") {
  // torchgpipe's ResNet-101 rows are speedups over one P40 without pipelining
  // (gpipe_resnet101_baseline, predicted as the denominator and not compared itself).
  const ValidationSet set = load_validation_set({});
  const ValidationReport r = validate_published(set);
  auto direct = [&](const std::string& id) {  // the case's scenario, predicted on its own
    for (const TranslatedCase& c : set.cases) {
      if (c.id != id) continue;
      const Scenario s = read_scenario(c.scenario, id);
      Expected<Plan> plan = lower(s.model, s.strategy, s.hardware);
      REQUIRE(plan.has_value());
      return predict_analytical(*plan).samples_per_s;
    }
    FAIL("no case " << id);
    return 0.0;
  };
  const double baseline = direct("gpipe_resnet101_baseline");
  int speedups = 0;
  for (const CaseResult& c : r.cases) {
    if (c.id.rfind("gpipe_resnet101_pipeline", 0) != 0) continue;
    ++speedups;
    CAPTURE(c.id);
    CHECK(c.failure.empty());
    CHECK(c.metric == "speedup vs gpipe_resnet101_baseline");
    CHECK(c.predicted == doctest::Approx(direct(c.id) / baseline).epsilon(1e-12));
  }
  CHECK(speedups == 4);
  bool listed = false;
  for (const UnsupportedCase& u : r.unsupported) {
    listed = listed || (u.id == "gpipe_resnet101_baseline" &&
                        u.reason == "the baseline its group's speedups divide by (predicted, not compared)");
  }
  CHECK(listed);
}

TEST_CASE("validate: a setting a modifier reads from the run's code is not searched") {
  // rules.json: Megatron-Bridge 25.09's DeepSeek-V3 run_script.py recomputes the modules
  // mla_up_proj and mlp. The case leaves recompute null, which the megatron-core stack would
  // search over none, selective and full: the modifier's value is taken instead.
  Json c = probe_json();
  c["id"] = "mbridge2509_h100_deepseekv3_probe";
  c["framework"] = "NeMo Megatron-Bridge 25.09 (Megatron-Core)";
  c["parallel"]["recompute"] = nullptr;
  c["parallel"]["zero_stage"] = nullptr;
  const TranslatedCase t = translate_probe(c);
  CHECK(t.stack == "megatron-core");
  const Json& s = t.scenario.at("strategy");
  CHECK(s.at("recompute") == "selective");
  CHECK(s.at("recompute_modules") == Json::array({"mla_up_proj", "mlp"}));
  CHECK(s.at("overlap_dp") == false);
  auto searched = [](const TranslatedCase& x, const char* key) {
    return x.scenario.contains("search") && x.scenario.at("search").contains(key);
  };
  CHECK_FALSE(searched(t, "recompute"));
  // Another Megatron-Core case keeps recompute free.
  c["id"] = "mbridge2509_h100_llama3_probe";
  const TranslatedCase other = translate_probe(c);
  CHECK(searched(other, "recompute"));
}

TEST_CASE("validate: a measured memory is compared with the view its memory_kind names") {
  // One TorchTitan-like run measured three ways: the allocator's tensors, its reservation and
  // nvidia-smi's use of the device. A kind it cannot place is an error that names the rule.
  auto run_with = [](const std::string& kind_json) {
    const std::string text =
        R"([{"id": "memsrc_1", "source": "a test", "model": {"layers": 32, "hidden": 4096,
         "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "seq_len": 8192, "vocab": 128256,
         "arch": "Llama 3: RMSNorm, SwiGLU, RoPE, GQA, untied embeddings"},
         "parallel": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8,
                      "recompute": "full", "zero_stage": 3},
         "hardware": {"gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "num_gpus": 8},
         "framework": "TorchTitan", "precision": "bf16",
         "measured": {"tokens_per_s_per_gpu": 6000, "memory_gib": 40)" + kind_json + "}}]";
    const std::string path = write_temp("stratasim_memory_kind.json", text);
    return validate_published(load_validation_set({path}, false));
  };
  const ValidationReport reserved = run_with(R"x(, "memory_kind": "max reserved (GiB)")x");
  const ValidationReport allocated = run_with(R"x(, "memory_kind": "Max Allocated")x");
  const ValidationReport smi = run_with(R"x(, "memory_kind": "nvidia-smi")x");
  const ValidationReport unstated = run_with("");
  auto memory_row = [](const ValidationReport& r) {
    for (const CaseResult& c : r.cases) {
      if (c.group.find(":memory") != std::string::npos) return c;
    }
    FAIL("no memory row");
    return CaseResult{};
  };
  const CaseResult res = memory_row(reserved), alloc = memory_row(allocated),
                   dev = memory_row(smi), none = memory_row(unstated);
  CHECK(res.metric == "memory reserved B");
  CHECK(alloc.metric == "memory allocated B");
  CHECK(dev.metric == "memory nvidia-smi B");
  CHECK(none.metric == "memory B (kind not stated: nvidia-smi's)");
  // H100's catalog: reserved_memory 3 GiB, of which the CUDA context is 273.75 MiB (PyTorch's
  // lazy-loading context, pytorch/pytorch#86509). The views differ by exactly those amounts,
  // and the reservation holds the eager loss's 2 B hole per logit beside its fp32 gradients
  // (8192 tokens x 128,256 logits; test_allocator_replay.cpp).
  CHECK(res.predicted - alloc.predicted ==
        doctest::Approx(3.0 * kGiB - 273.75 * kMiB + 2.0 * 8192 * 128256));
  CHECK(dev.predicted - res.predicted == doctest::Approx(273.75 * kMiB));
  CHECK(none.predicted == doctest::Approx(dev.predicted));

  CHECK_THROWS_WITH_AS(run_with(R"x(, "memory_kind": "peak")x"),
                       doctest::Contains("[0].measured.memory_kind: \"peak\" must name the memory "
                                         "view measured: 'reserved'"),
                       InputError);
}

TEST_CASE("validate: a framework names its stack: NeMo, Megatron-Bridge and Megatron-LM on Hopper run Megatron-Core") {
  // rules.json, stack megatron-core: "when" is an array of condition maps, any of which may
  // hold; {"any": [...]} needs one of its substrings. A 2024 NeMo run or a Megatron-LM run on
  // H100 is Megatron-Core with Transformer Engine and the distributed optimizer, not the
  // Megatron-LM 2020-22 fallback (which would declare an 8B model on 8 GPUs out of memory).
  auto stack_of = [](const std::string& framework, const std::string& gpu) {
    Json c = probe_json();
    c["id"] = "stack_probe";
    c["framework"] = framework;
    c["hardware"]["gpu"] = gpu;
    return translate_probe(c);
  };
  const TranslatedCase nemo = stack_of("NeMo 24.05 container", "A100-SXM4-80GB");
  CHECK(nemo.stack == "megatron-core");
  CHECK(nemo.scenario.at("strategy").at("zero_stage") == 3);  // the case's own zero_stage wins
  CHECK(stack_of("Megatron-Bridge", "A100-SXM4-80GB").stack == "megatron-core");
  CHECK(stack_of("Megatron-LM (NVIDIA/Megatron-LM)", "H100-SXM5-80GB").stack == "megatron-core");
  CHECK(stack_of("Megatron-LM", "H200-SXM-141GB").stack == "megatron-core");
  CHECK(stack_of("Megatron-LM", "A100-SXM4-80GB").stack == "megatron-lm");
  CHECK(expressible_probe([](Json& c) {
          c["framework"] = "Megatron-LM";
          c["hardware"]["gpu"] = "A100-SXM4-80GB";
          c["source"] = {{"title", "a report"}, {"venue_year", "2024"}};
        }).stack == "megatron-core");
  CHECK(stack_of("Megatron-DeepSpeed", "H100-SXM5-80GB").stack == "megatron-deepspeed");
  // PyTorch FSDP trainers: ZeRO-3 by default (FULL_SHARD), flash attention, overlapped
  // reduction; an unnamed trainer on Hopper gets flash attention and overlap, not Megatron-LM
  // 2020-22's kernels; on A100 the Megatron-LM fallback stays.
  Json foundry = probe_json();
  foundry["framework"] = "LLM Foundry (Composer, PyTorch FSDP)";
  foundry["parallel"].erase("zero_stage");
  const TranslatedCase f = translate_probe(foundry);
  CHECK(f.stack == "pytorch-fsdp");
  CHECK(f.scenario.at("strategy").at("zero_stage") == 3);
  CHECK(f.scenario.at("strategy").at("fusion").at("flash_attention") == true);
  CHECK(f.scenario.at("strategy").at("overlap_dp") == true);
  CHECK(stack_of("metaseq", "A100-SXM4-80GB").stack == "pytorch-fsdp");
  const TranslatedCase hopper = stack_of("an in-house trainer", "H100-SXM5-80GB");
  CHECK(hopper.stack == "pytorch-modern");
  CHECK(hopper.scenario.at("strategy").at("fusion").at("flash_attention") == true);
  CHECK(hopper.scenario.at("strategy").at("uneven_stages") == true);  // Llama 3: 126 layers, 16 stages
  CHECK(stack_of("an in-house trainer", "A100-SXM4-80GB").stack == "megatron-lm");
  Json recent = probe_json();
  recent["framework"] = "an in-house trainer";
  recent["hardware"]["gpu"] = "A100-SXM4-80GB";
  recent["source"] = {{"title", "a paper"}, {"venue_year", "arXiv 2024"}};
  CHECK(translate_probe(recent).stack == "pytorch-modern");
  CHECK(stack_of("Megatron-LM with PyTorch FSDP", "A100-SXM4-80GB").stack == "megatron-lm");
  // DeepSpeed without Megatron: its config defaults (5e8-element reduce buckets, 1 GB of 16-bit
  // gradients); a case naming FlashAttention runs it fused. ZeRO-3's gathers and reduce-scatters
  // stay in series with the compute, as below ZeRO-3: DeepSpeed ZeRO-3 measured over 384 V100 at
  // 100-800 Gb/s (cases/zeropp_zero3_v100.json) runs no faster than that series, where crediting
  // its overlap_comm and one-submodule prefetch with the overlap rule made the model 9-57% fast.
  auto deepspeed = [](int zero, const std::string& framework) {
    Json x = probe_json();
    x["framework"] = framework;
    x["parallel"]["zero_stage"] = zero;
    return translate_probe(x);
  };
  const TranslatedCase ds2 = deepspeed(2, "DeepSpeed (Hugging Face Transformers)");
  CHECK(ds2.stack == "deepspeed");
  CHECK(ds2.scenario.at("strategy").at("overlap_dp") == false);
  CHECK(ds2.scenario.at("strategy").at("dp_bucket") == "1GB");
  CHECK(ds2.scenario.at("strategy").at("fusion").at("preset") == "none");
  const TranslatedCase ds3 = deepspeed(3, "DeepSpeed ZeRO-3 with FlashAttention-2");
  CHECK(ds3.stack == "deepspeed");
  CHECK(ds3.scenario.at("strategy").at("overlap_dp") == false);
  CHECK(ds3.scenario.at("strategy").at("fusion").at("preset") == "none");
  CHECK(ds3.scenario.at("strategy").at("fusion").at("flash_attention") == true);
  CHECK(deepspeed(1, "Megatron-DeepSpeed").stack == "megatron-deepspeed");
  // On H100 (the probe's GPU) Transformers' default SDPA runs FlashAttention-2's kernel.
  CHECK(ds2.scenario.at("strategy").at("fusion").at("flash_attention") == true);
}

TEST_CASE("validate: rule conditions with alternatives, and their errors") {
  const char* rules = R"({"stacks": [
    {"name": "either", "when": [{"framework": {"any": ["alpha", "beta"]}},
                                {"framework": "gamma", "hardware.gpu": ["h100", "!nvl"]}],
     "strategy": {}},
    {"name": "rest", "when": {"id": ""}, "strategy": {}}]})";
  const Json doc = parse_json_text(rules, "rules.json");
  const CaseRules r = read_case_rules(JsonNode(doc, "rules.json", ""));
  auto stack = [&](const std::string& framework, const std::string& gpu) {
    const Json c = {{"id", "x"}, {"framework", framework}, {"hardware", {{"gpu", gpu}}}};
    return first_match(r.stacks, c)->name;
  };
  CHECK(stack("Alpha 1.0", "") == "either");
  CHECK(stack("the BETA trainer", "A100") == "either");
  CHECK(stack("gamma", "H100 SXM") == "either");
  CHECK(stack("gamma", "H100 NVL") == "rest");
  CHECK(stack("gamma", "A100") == "rest");
  CHECK(stack("delta", "H100") == "rest");
  auto error_of = [](const std::string& text) {
    const Json d = parse_json_text(text, "rules.json");
    try {
      read_case_rules(JsonNode(d, "rules.json", ""));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string empty_any =
      error_of(R"({"stacks": [{"name": "s", "when": {"framework": {"any": []}}, "strategy": {}}]})");
  CHECK(empty_any.find("stacks[0].when.framework.any") != std::string::npos);
  CHECK(empty_any.find("non-empty array of substrings") != std::string::npos);
  const std::string empty_when = error_of(R"({"stacks": [{"name": "s", "when": [], "strategy": {}}]})");
  CHECK(empty_when.find("stacks[0].when") != std::string::npos);
  CHECK(empty_when.find("non-empty array") != std::string::npos);
  const std::string bad_key =
      error_of(R"({"stacks": [{"name": "s", "when": {"framework": {"all": ["x"]}}, "strategy": {}}]})");
  CHECK(bad_key.find("all") != std::string::npos);
}

TEST_CASE("validate: hardware rules for the export, PCIe and other parts read their datasheets") {
  // rules.json hardware rules; each value below is the datasheet's, per direction for links:
  // H800: H100 SXM5 compute, NVLink 400 GB/s bidirectional = 200 GB/s a direction;
  // A800: A100 SXM4 compute, the same 200 GB/s; H100 PCIe: 756 TFLOP/s dense bf16, 2.0 TB/s,
  // PCIe 5.0 (64 GB/s a direction) between the GPUs; H100 NVL 835 TFLOP/s, 3.9 TB/s, 94 GB;
  // A100 PCIe 80 GB: 312 TFLOP/s, 1.935 TB/s, PCIe 4.0.
  auto hardware_of = [](const std::string& gpu) {
    const TranslatedCase t = expressible_probe([&](Json& c) { c["hardware"]["gpu"] = gpu; });
    return read_scenario(t.scenario, "probe").hardware;
  };
  const double bf16 = static_cast<int>(DType::kBf16);
  const HardwareModel h800 = hardware_of("H800 80GB");
  const HardwareModel h100 = hardware_of("H100-SXM5-80GB");
  CHECK(h800.node.device_link.bandwidth_Bps == doctest::Approx(200e9));
  CHECK(h100.node.device_link.bandwidth_Bps == doctest::Approx(450e9));
  CHECK(h800.node.device_link.efficiency == h100.node.device_link.efficiency);
  CHECK(h800.device.peak_flops == h100.device.peak_flops);
  CHECK(hardware_of("A800-SXM4-80GB").node.device_link.bandwidth_Bps == doctest::Approx(200e9));
  const HardwareModel pcie = hardware_of("NVIDIA H100 PCIe");
  CHECK(pcie.device.peak_flops[bf16] == doctest::Approx(756e12));
  CHECK(pcie.device.memory_bandwidth_Bps == doctest::Approx(2.0e12));
  CHECK(pcie.node.device_link.bandwidth_Bps == doctest::Approx(64e9));
  const HardwareModel nvl = hardware_of("H100 NVL");
  CHECK(nvl.device.peak_flops[bf16] == doctest::Approx(835e12));
  CHECK(nvl.device.memory_bandwidth_Bps == doctest::Approx(3.9e12));
  CHECK(hardware_of("NVIDIA H100NVL 94GB").device.peak_flops[bf16] == doctest::Approx(835e12));
  // An SXM part a source describes by its NVLink ("NVLink 4th Generation", Megatron-MoE-ModelZoo's
  // Qwen3 readme) is not the NVL card: the substring "NVL" alone had read it as PCIe-linked.
  const HardwareModel sxm = hardware_of("H100-SXM5-80GB (source: 'H100', NVLink 4th Generation)");
  CHECK(sxm.device.peak_flops[bf16] == doctest::Approx(989e12));
  CHECK(sxm.node.device_link.bandwidth_Bps == doctest::Approx(450e9));
  const HardwareModel a100_pcie = hardware_of("A100 PCIe 80GB");
  CHECK(a100_pcie.device.peak_flops[bf16] == doctest::Approx(312e12));
  CHECK(a100_pcie.device.memory_bandwidth_Bps == doctest::Approx(1.935e12));
  CHECK(a100_pcie.node.device_link.bandwidth_Bps == doctest::Approx(32e9));
  CHECK(hardware_of("Tesla V100-SXM2-32GB").device.name == "V100-SXM2-32GB");
  CHECK(hardware_of("B200").device.name == "B200");
  CHECK(hardware_of("MI300X").device.name == "MI300X");
}

TEST_CASE("validate: a model family named without its features gets its paper's blocks") {
  // rules.json model rules: LLaMA (arXiv 2302.13971 Sec. 2.2) and its kin are RMSNorm, SwiGLU,
  // RoPE, untied, bias-free; Mixtral routes each token to 2 of 8 experts (arXiv 2401.04088);
  // BLOOM has ALiBi, no position embeddings (arXiv 2211.05100). An arch text "LLaMA-2 7B"
  // must not read as a GPT block (a two-matrix GeLU MLP: a third fewer MLP FLOP).
  auto model_of_arch = [](const std::string& arch) {
    return expressible_probe([&](Json& c) { c["model"]["arch"] = arch; }).scenario.at("model");
  };
  const Json llama = model_of_arch("LLaMA-2 7B");
  CHECK(llama.at("activation") == "swiglu");
  CHECK(llama.at("norm") == "rmsnorm");
  CHECK(llama.at("rotary") == true);
  CHECK(llama.at("tied_embeddings") == false);
  CHECK(llama.at("linear_bias") == false);
  CHECK(model_of_arch("Mistral 7B").at("activation") == "swiglu");
  const Json mixtral = model_of_arch("Mixtral 8x7B");
  CHECK(mixtral.at("moe").at("experts") == 8);
  CHECK(mixtral.at("moe").at("top_k") == 2);
  const Json bloom = model_of_arch("BLOOM-176B");
  CHECK(bloom.at("learned_positions") == false);
  CHECK(bloom.at("rotary") == false);
  CHECK_FALSE(model_of_arch("GPT-3 175B").contains("activation"));  // the GPT defaults
  CHECK(model_of_arch("GPT-3 175B").at("family") == "decoder");
  CHECK(model_of_arch("BERT-Large").at("family") == "encoder");  // bidirectional attention
  const Json mpt = model_of_arch("MPT-30B");
  CHECK(mpt.at("rotary") == false);
  CHECK(mpt.at("learned_positions") == false);
  CHECK(mpt.at("linear_bias") == false);
  // Multi-query attention implies one K/V head, but the case's own kv_heads (8, Llama 3's, in
  // the probe) wins over what an architecture's name implies.
  CHECK(model_of_arch("Falcon-40B (multi-query attention)").at("kv_heads") == 8);
  Json c = probe_json();
  c["model"]["arch"] = "Falcon-7B (multi-query attention)";
  c["model"].erase("kv_heads");
  const TranslatedCase falcon = translate_probe(c);
  CHECK(falcon.scenario.at("model").at("kv_heads") == 1);
  // Llama 3 (every size) and Llama 2 70B have 8 K/V heads; Llama 2 7B has as many as queries.
  for (const char* arch : {"Llama 3.1 405B", "Llama-2-70b", "Mistral 7B"}) {
    c["model"]["arch"] = arch;
    CHECK(translate_probe(c).scenario.at("model").at("kv_heads") == 8);
  }
  // A vocabulary the case leaves null is its family's (Llama 3: 128256; BLOOM 250880).
  c["model"].erase("vocab");
  c["model"]["arch"] = "Llama 3 8B";
  CHECK(translate_probe(c).scenario.at("model").at("vocab") == 128256);
  c["model"]["arch"] = "BLOOM-176B";
  CHECK(translate_probe(c).scenario.at("model").at("vocab") == 250880);
  // A SwiGLU width the case leaves null follows Meta's FeedForward: 2/3 of 4h, times the
  // multiplier, rounded up (their params.json: LLaMA 7B 11008, 65B 22016; Llama 3 8B 14336,
  // 70B 28672, 405B 53248).
  auto ffn_of = [&](const char* arch, int hidden) {
    Json x = c;
    x["model"]["arch"] = arch;
    x["model"]["hidden"] = hidden;
    x["model"].erase("ffn_hidden");
    return translate_probe(x).scenario.at("model").at("ffn_hidden");
  };
  CHECK(ffn_of("LLaMA-7B", 4096) == 11008);
  CHECK(ffn_of("LLaMA-65B", 8192) == 22016);
  CHECK(ffn_of("Llama 3 8B", 4096) == 14336);
  CHECK(ffn_of("Llama 3 70B", 8192) == 28672);
  CHECK(ffn_of("Llama 3.1 405B", 16384) == 53248);
  CHECK(ffn_of("Llama 2 70B", 8192) == 28672);
  c["model"]["vocab"] = 32000;
  c["model"]["arch"] = "Llama 2 7B";
  CHECK_FALSE(translate_probe(c).scenario.at("model").contains("kv_heads"));
}

TEST_CASE("validate: precision texts, FP8 by stack, and an unnamed precision on a GPU without bf16") {
  auto strategy_of = [](const Json& precision, const std::string& framework, const std::string& gpu) {
    return expressible_probe([&](Json& c) {
             c["precision"] = precision;
             c["framework"] = framework;
             c["hardware"]["gpu"] = gpu;
           }).scenario.at("strategy");
  };
  CHECK(strategy_of("bfloat16", "TorchTitan", "H100").at("dtype") == "bf16");
  CHECK(strategy_of("half", "TorchTitan", "H100").at("dtype") == "fp16");
  CHECK(strategy_of("TF32", "TorchTitan", "A100").at("dtype") == "tf32");
  // Megatron-Core reaches FP8 only through Transformer Engine (default recipe: delayed);
  // TorchTitan's Float8 is torchao's tensorwise recipe (the strategy default).
  const Json megatron_fp8 = strategy_of("FP8", "Megatron-LM", "H100-SXM5-80GB");
  CHECK(megatron_fp8.at("dtype") == "fp8");
  CHECK(megatron_fp8.at("fp8_scaling") == "delayed");
  const Json titan_fp8 = strategy_of("FP8", "TorchTitan", "H100-SXM5-80GB");
  CHECK(titan_fp8.at("dtype") == "fp8");
  CHECK_FALSE(titan_fp8.contains("fp8_scaling"));
  // Volta has no bfloat16: mixed precision left unnamed there is fp16.
  CHECK(strategy_of(nullptr, "Megatron-LM", "V100-SXM2-32GB").at("dtype") == "fp16");
  CHECK(strategy_of("fp32", "Megatron-LM", "V100-SXM2-32GB").at("dtype") == "fp32");
}

TEST_CASE("validate: a source outside the groups: its other throughput forms, unstated degrees, missing essentials") {
  auto translated = [](const std::function<void(Json&)>& edit) {
    Json c = probe_json();
    c["id"] = "outside_probe";  // no group: no FLOP convention to read a TFLOP/s figure with
    edit(c);
    return translate_probe(c);
  };
  // 8 GPUs, global batch 8 of 8192 tokens: 65,536 tokens an iteration.
  const TranslatedCase total = translated([](Json& c) { c["measured"] = {{"tokens_per_s_total", 32768}}; });
  REQUIRE(total.metrics.size() == 1);
  CHECK(total.metrics[0].published == doctest::Approx(65536.0 / 32768));
  const TranslatedCase samples = translated([](Json& c) { c["measured"] = {{"samples_per_s", 4}}; });
  CHECK(samples.metrics.at(0).published == doctest::Approx(8.0 / 4));
  const TranslatedCase ms = translated([](Json& c) { c["measured"] = {{"iteration_ms", 1500}}; });
  CHECK(ms.metrics.at(0).published == doctest::Approx(1.5));
  // An MFU figure without a convention: the curator's derived iteration time, labelled so.
  const TranslatedCase derived = translated([](Json& c) {
    c["measured"] = {{"mfu", 0.4}};
    c["derived"] = {{"iteration_s", 2.25}};
  });
  CHECK(derived.metrics.at(0).published == doctest::Approx(2.25));
  CHECK(derived.metrics.at(0).label.find("derived") != std::string::npos);
  const TranslatedCase eq3 = translated([](Json& c) {
    c["measured"] = {{"tflops_per_gpu", 150}};
    c["derived"] = {{"iteration_s_from_eq3", 31.5}, {"note", "Eq. 3"}};
  });
  CHECK(eq3.metrics.at(0).published == doctest::Approx(31.5));
  CHECK(eq3.metrics.at(0).label == "iteration s (the case's derived iteration_s_from_eq3)");
  // A zero throughput would make an infinite iteration: compared with nothing, and said so.
  const TranslatedCase zero = translated([](Json& c) { c["measured"] = {{"tokens_per_s_per_gpu", 0}}; });
  CHECK(zero.unsupported == "no measured value this tool can compare (measured: {\"tokens_per_s_per_gpu\":0})");
  CHECK(translated([](Json& c) { c["framework"] = "NeMo (LoRA fine-tuning)"; }).unsupported.find(
            "parameter-efficient fine-tuning (LoRA)") == 0);
  // A hardware-FLOPs utilization counts recomputation in a way no convention here states (an
  // MFU is read: "a FLOP rate of a source no group knows ...").
  const TranslatedCase none = translated([](Json& c) { c["measured"] = {{"hfu", 0.4}}; });
  CHECK(none.unsupported.find("no measured value this tool can compare") == 0);
  // A null dp follows from the GPUs; a null tp or pp is searched over 1, 2, 4, 8.
  const TranslatedCase degrees = translated([](Json& c) {
    c["parallel"]["dp"] = nullptr;
    c["parallel"]["tp"] = nullptr;
  });
  REQUIRE(degrees.unsupported.empty());
  CHECK_FALSE(degrees.scenario.at("strategy").contains("dp"));
  CHECK(degrees.scenario.at("search").at("tp") == Json::array({1, 2, 4, 8}));
  // What an iteration cannot do without is a reason, not an abort.
  CHECK(translated([](Json& c) { c["parallel"]["global_batch"] = nullptr; }).unsupported ==
        "the source states no global batch (parallel.global_batch): an iteration is undefined");
  CHECK(translated([](Json& c) { c["model"]["seq_len"] = nullptr; }).unsupported ==
        "the source states no sequence length (model.seq_len)");
  CHECK(translated([](Json& c) { c["hardware"].erase("num_gpus"); }).unsupported ==
        "the source states no GPU count (hardware.num_gpus)");
  // Recomputation as sources write it.
  auto recompute = [&](const Json& value) {
    return translated([&](Json& c) { c["parallel"]["recompute"] = value; }).scenario.at("strategy").at("recompute");
  };
  CHECK(recompute("Full activation checkpointing") == "full");
  CHECK(recompute("activation checkpointing") == "full");
  CHECK(recompute("uniform (Megatron)") == "full");
  CHECK(recompute(true) == "full");
  CHECK(recompute("no") == "none");
  CHECK(recompute(false) == "none");
  CHECK(recompute("Selective (Korthikanti et al.)") == "op_selective");  // TorchTitan: its per-op policy
  CHECK_THROWS_WITH_AS(translated([](Json& c) { c["parallel"]["tp"] = "eight"; }),
                       doctest::Contains("parallel.tp: \"eight\" must be a number or null"), InputError);
}

TEST_CASE("validate: NeMo AutoModel is an FSDP2 stack of its own, not Megatron-Core") {
  // rules.json "nemo-automodel", matched before the NeMo rule: FSDP2 (ZeRO-3, its copies, a
  // float32 reduction), bf16 parameters under torch.optim.Adam (no master copy, bf16 moments),
  // Transformer Engine's cuDNN attention and RMSNorm, DeepEP.
  const TranslatedCase t = expressible_probe([](Json& c) {
    c["framework"] = "NeMo AutoModel (PyTorch FSDP2 with Transformer Engine layers)";
    c["parallel"]["zero_stage"] = nullptr;
  });
  CHECK(t.stack == "nemo-automodel");
  const Json& s = t.scenario.at("strategy");
  CHECK(s.at("zero_stage") == 3);
  CHECK(s.at("fsdp_copies") == true);
  CHECK(s.at("grad_reduce_fp32") == true);
  CHECK(s.at("master_weights_fp32") == false);
  CHECK(s.at("optimizer_moments") == "bf16");
  CHECK(s.at("ep_dispatch") == "deepep");
  CHECK(s.at("fusion").at("attention_kernel") == "cudnn");
  // A bare "NeMo" is still Megatron-Core.
  const TranslatedCase nemo = expressible_probe([](Json& c) { c["framework"] = "NeMo 24.07"; });
  CHECK(nemo.stack == "megatron-core");
  // Its benchmarks' fake balanced gate routes a token to consecutive experts (rules.json's
  // model rule): an MoE row that says so gets model.moe.routing contiguous, others keep random.
  const auto moe_row = [](const char* caveats) {
    return expressible_probe([caveats](Json& c) {
      c["framework"] = "NeMo AutoModel (PyTorch FSDP2 with Transformer Engine layers; DeepEP)";
      c["model"]["arch"] = "Qwen3 MoE: RMSNorm, SwiGLU experts, RoPE, GQA";
      c["model"]["experts"] = 128, c["model"]["top_k"] = 8, c["model"]["moe_ffn_hidden"] = 768;
      c["parallel"]["ep"] = 8;
      c["caveats"] = caveats;
    });
  };
  const Json gated = moe_row("Mock data with the 'fake balanced gate' (balanced routing)").scenario.at("model");
  CHECK(gated.at("moe").at("routing") == "contiguous");
  const Json learned = moe_row("real data").scenario.at("model");
  CHECK_FALSE(learned.at("moe").contains("routing"));
}
