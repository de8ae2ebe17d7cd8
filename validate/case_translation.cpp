#include "validate/case_translation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/units.h"
#include "strategies/model/model_json.h"
#include "validate/flop_conventions.h"

namespace stratasim {
namespace {

bool has_number(const Json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj.at(key).is_number();
}

// How a source names its sharding, in `parallel.fsdp` or a text `parallel.zero_stage`: the ZeRO
// stage it means, with the shard group it implies (0: the whole data-parallel group), or none.
// PyTorch FSDP's ShardingStrategy names (torch/distributed/fsdp/api.py): FULL_SHARD is ZeRO-3,
// SHARD_GRAD_OP ZeRO-2, NO_SHARD plain data parallelism, HYBRID_SHARD ZeRO-3 inside each node
// and replicas across the nodes (FSDP's default process groups for it: the intra-node ranks),
// _HYBRID_SHARD_ZERO2 the same at ZeRO-2; and "ZeRO-n" / "stage n" / a bare digit.
struct ShardingText {
  int stage = -1;
  bool node_groups = false;
};
ShardingText sharding_from_text(std::string text) {
  std::replace(text.begin(), text.end(), '-', '_');
  std::replace(text.begin(), text.end(), ' ', '_');
  auto has = [&](const char* s) { return text.find(s) != std::string::npos; };
  if (has("no_shard")) return {0, false};
  if (has("hybrid_shard_zero2")) return {2, true};
  if (has("hybrid_shard") || has("hsdp")) return {3, true};
  if (has("shard_grad_op") || has("grad_op")) return {2, false};
  if (has("full_shard") || has("fully_shard") || has("fsdp")) return {3, false};
  for (const char* prefix : {"zero_stage_", "zero_", "zero", "stage_", "stage"}) {
    const size_t at = text.find(prefix);
    if (at == std::string::npos) continue;
    const size_t digit = at + std::string(prefix).size();
    if (digit < text.size() && text[digit] >= '0' && text[digit] <= '3') return {text[digit] - '0', false};
  }
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '3') return {text[0] - '0', false};
  return {};
}

// Half a unit of the last digit the source printed, relative: 1.9 -> 0.05 / 1.9.
double relative_rounding(const Json& value) {
  const std::string text = json_text(value);
  const size_t dot = text.find('.');
  const size_t exponent = text.find_first_of("eE");
  if (exponent != std::string::npos) return 0;
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(text.size() - dot - 1);
  const double v = std::fabs(value.get<double>());
  return v > 0 ? 0.5 * std::pow(10.0, -decimals) / v : 0;
}

// Merges `fragment` into `target` key by key (objects recursively, other values replaced).
void merge_into(Json& target, const Json& fragment) {
  if (!fragment.is_object()) return;
  for (auto it = fragment.begin(); it != fragment.end(); ++it) {
    // A preset named by a string ("fusion": "all") refined by an object keeps the preset.
    if (it.value().is_object() && target.contains(it.key()) && target[it.key()].is_string()) {
      target[it.key()] = Json{{"preset", target[it.key()]}};
    }
    if (it.value().is_object() && target.contains(it.key()) && target[it.key()].is_object()) {
      merge_into(target[it.key()], it.value());
    } else {
      target[it.key()] = it.value();
    }
  }
}

// `word` in `text` with no letter or digit on either side ("moe" is not in "amoebanet").
bool has_word(const std::string& text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const size_t end = at + word.size();
    const bool right = end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
  }
  return false;
}

// `m`: the model as translated (the case's fields and the model rules of rules.json).
std::string reason_not_expressible(const Json& c, const Json& m) {
  const Json& p = c.value("parallel", Json::object());
  const std::string arch = lowercase(case_field_text(c, "model.arch"));
  const bool moe = m.contains("moe") || has_word(arch, "moe") || arch.find("experts") != std::string::npos;
  if (has_word(arch, "mla") && !m.contains("mla")) {
    return "multi-head latent attention whose ranks no rule states (" + case_field_text(c, "model.arch") + ")";
  }
  if (m.contains("preset")) return "";  // an operator-graph preset (ResNet-101, ...)
  const Json& e = m.value("moe", Json::object());
  if (moe && (!has_number(e, "experts") || !has_number(e, "top_k") ||
              !has_number(m, "layers") || !has_number(m, "hidden") || !has_number(m, "heads"))) {
    return "mixture of experts whose architecture the source does not state (" +
           case_field_text(c, "model.arch") + ")";
  }
  if (!has_number(m, "layers") || !has_number(m, "hidden") || !has_number(m, "heads")) {
    return "not a transformer (" + case_field_text(c, "model.arch") +
           ") and no model rule names an operator-graph preset for it";
  }
  const std::string training = lowercase(case_field_text(c, "framework") + " " + case_field_text(c, "model.arch") +
                                         " " + case_field_text(c, "parallel.notes") + " " + case_field_text(c, "kind"));
  if (has_word(training, "lora") || has_word(training, "qlora") || training.find("peft") != std::string::npos) {
    return "parameter-efficient fine-tuning (LoRA): frozen base weights without weight gradients or "
           "optimizer states are not modelled";
  }
  if (!moe && has_number(p, "ep") && p.at("ep").get<double>() > 1) {
    return "expert parallelism (ep=" + json_text(p.at("ep")) + ") on a model with no experts stated";
  }
  return "";
}

// The SwiGLU width a Llama-style model derives from its hidden size h when a case leaves
// ffn_hidden null (Meta's llama model.py FeedForward): 2/3 of 4h, times ffn_dim_multiplier,
// rounded up to multiple_of. LLaMA and Llama 2 7B-13B: no multiplier, multiple_of 256 (h 4096 ->
// 11008, 8192 -> 22016); Llama 2 70B and Llama 3: 1.3, or 1.2 at 405B's h 16384, multiple_of
// 1024 at h 4096 and 4096 above (8B 14336, 70B 28672, 405B 53248; their params.json).
double llama_ffn_hidden(double h, const std::string& arch) {
  const bool llama3 = arch.find("llama 3") != std::string::npos || arch.find("llama-3") != std::string::npos ||
                      arch.find("llama3") != std::string::npos;
  const bool llama2_70b = arch.find("llama") != std::string::npos && arch.find("70b") != std::string::npos;
  double width = std::floor(2 * 4 * h / 3);
  double multiple = 256;
  if (llama3 || llama2_70b) {
    width = std::floor(width * (h >= 16384 ? 1.2 : 1.3));
    multiple = h <= 4096 ? 1024 : 4096;
  }
  return multiple * std::ceil(width / multiple);
}

Json model_of(const JsonNode& c, const CaseRules& rules) {
  const JsonNode m = c.at("model");
  // The architecture rules first, then what the case itself states on top: a source's own
  // figure (kv_heads, experts, ...) wins over what its architecture's name implies.
  Json model = {{"name", c.string("id")}, {"family", "decoder"}};
  for (const CaseRule& r : rules.model) {
    if (rule_matches(r, c.raw())) merge_into(model, r.apply);
  }
  // An operator-graph preset (a CNN): the preset alone, the transformer fields do not apply.
  if (model.contains("preset")) return Json{{"preset", model.at("preset")}};
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"}) {
    if (has_number(m.raw(), key)) model[key] = m.raw().at(key);
  }
  if (has_number(m.raw(), "experts") && m.raw().at("experts").get<double>() > 1) {
    Json moe = {{"experts", m.raw().at("experts")}};
    // Group-limited routing as the source configures it (Megatron-Core's moe_router_num_groups /
    // moe_router_group_topk, Hugging Face's n_group / topk_group).
    for (auto [from, to] : {std::pair{"top_k", "top_k"}, {"moe_ffn_hidden", "expert_ffn_hidden"},
                            {"shared_experts", "shared_experts"}, {"router_groups", "groups"},
                            {"router_group_top_k", "group_top_k"}}) {
      if (has_number(m.raw(), from)) moe[to] = m.raw().at(from);
    }
    merge_into(model, Json{{"moe", moe}});
  }
  if (model.value("activation", "") == "swiglu" && !has_number(model, "ffn_hidden") && has_number(model, "hidden")) {
    model["ffn_hidden"] = llama_ffn_hidden(model.at("hidden").get<double>(), lowercase(case_field_text(c.raw(), "model.arch")));
  }
  return model;
}

Json cluster_of(const JsonNode& c, const CaseRules& rules) {
  const CaseRule* rule = first_match(rules.hardware, c.raw());
  if (!rule) {
    c.at("hardware").fail("names a GPU no hardware rule in validate/data/rules.json matches");
  }
  Json cluster = rule->apply;
  const Json& hw = c.at("hardware").raw();
  if (!has_number(hw, "num_gpus")) c.at("hardware").fail("needs num_gpus");
  cluster["devices"] = hw.at("num_gpus");
  Json node = Json::object();
  if (has_number(hw, "gpus_per_node")) node["devices"] = hw.at("gpus_per_node");
  if (has_number(hw, "nvlink_GBps")) {
    node["device_link"] = {{"bandwidth", json_text(hw.at("nvlink_GBps")) + "GBps"}};
  }
  if (has_number(hw, "inter_node_Gbps_per_gpu")) {
    node["nic"] = {{"bandwidth", json_text(hw.at("inter_node_Gbps_per_gpu")) + "Gbps"}};
    if (has_number(hw, "gpus_per_node")) node["nics"] = hw.at("gpus_per_node");
  }
  if (!node.empty()) merge_into(cluster, Json{{"node", node}});
  return cluster;
}

// The recomputation a source's text names: "full" (Megatron's uniform or block methods, plain
// activation or gradient checkpointing, yes/on), "selective" (or TorchTitan's per-op policy),
// "none" (no/off/false); "" for a text this reads as none of them.
std::string recompute_text(const std::string& raw) {
  const std::string text = lowercase(raw);
  auto has = [&](const char* w) { return text.find(w) != std::string::npos; };
  auto is = [&](std::initializer_list<const char*> words) {
    for (const char* w : words) {
      if (text == w) return true;
    }
    return false;
  };
  if (has("selective")) {
    // TorchTitan's per-op policy ("op SAC") saves every other matmul; Megatron's selective
    // recomputation recomputes the attention core only.
    return has("op sac") || has("per-op") || has("'op'") ? "op_selective" : "selective";
  }
  // Said off: "none", "no", "no activation checkpointing", "without recomputation",
  // "checkpointing: no", "disabled" (before the words that name it on).
  if (text.rfind("none", 0) == 0 || text.rfind("no ", 0) == 0 || has("without") ||
      has("disabled") || has("not used") || has(": no") || has("=false") || has("= false") ||
      is({"no", "off", "false", "disabled", "0"})) {
    return "none";
  }
  if (text.rfind("full", 0) == 0 || text.rfind("all but last", 0) == 0 || has("uniform") ||
      has("block") || has("checkpointing") || has("full recompute") || is({"yes", "on", "true", "enabled", "1"})) {
    return "full";
  }
  return "";
}

std::string recompute_of(const JsonNode& n) {
  if (n.raw().is_boolean()) return n.raw().get<bool>() ? "full" : "none";
  const std::string r = recompute_text(n.as_string());
  if (r.empty()) n.fail("is not a recomputation this tool knows (full, selective, none)");
  return r;
}

// The schedule the source names, or "" when it names none.
std::string schedule_of(const Json& p) {
  const std::string text = lowercase(case_field_text(p, "schedule"));
  if (text.find("interleaved") != std::string::npos) return "interleaved";
  if (text.find("gpipe") != std::string::npos) return "gpipe";
  if (text.find("1f1b") != std::string::npos || text.find("pipedream-flush") != std::string::npos ||
      text.find("pipedream flush") != std::string::npos) {
    return "1f1b";  // PipeDream-Flush is 1F1B (Narayanan et al. 2021, Sec. 2.2.1)
  }
  return "";
}

// A free knob: the stack's values for `key`, when it lists any.
bool add_free(Json& search, const Json& free, const char* key) {
  if (!free.is_object() || !free.contains(key)) return false;
  search[key] = free.at(key);
  return true;
}

// A null micro-batch size under a stack whose pipeline runs pp micro-batches: the local batch
// (global / dp) split pp ways; 0 when that does not divide.
int pipeline_micro_batch(const Json& pr, const Json& global_batch, const CaseRule* stack) {
  if (stack == nullptr || !stack->pipeline_micro_batches_pp) return 0;
  if (!has_number(pr, "pp") || !has_number(pr, "dp") || !global_batch.is_number_integer()) return 0;
  if (!pr.at("pp").is_number_integer() || !pr.at("dp").is_number_integer()) return 0;
  const long long pp = pr.at("pp").get<long long>(), dp = pr.at("dp").get<long long>();
  const long long global = global_batch.get<long long>();
  if (pp <= 1 || pp >= (1 << 30) || dp <= 0 || dp >= (1 << 30) || global <= 0 || global % (dp * pp) != 0) return 0;
  const long long mb = global / dp / pp;
  return mb < (1 << 30) ? static_cast<int>(mb) : 0;
}

// The data replicas a case's stated degrees give (its dp, or the GPUs over tp pp cp); 0 when a
// degree is left to the search.
long long data_replicas(const Json& c) {
  // A whole number in [1, 2^31), or 0 (unknown, or for the scenario reader to reject).
  auto whole = [](const Json& obj, const char* key) -> long long {
    if (!has_number(obj, key)) return 0;
    const double v = obj.at(key).get<double>();
    return v >= 1 && v < 2147483648.0 && v == std::floor(v) ? static_cast<long long>(v) : 0;
  };
  const Json& pr = c.at("parallel");
  if (has_number(pr, "dp")) return whole(pr, "dp");
  const long long tp = whole(pr, "tp"), pp = whole(pr, "pp");
  const long long cp = has_number(pr, "cp") ? std::max(1LL, whole(pr, "cp")) : 1;
  const long long gpus = whole(c.at("hardware"), "num_gpus");
  if (tp == 0 || pp == 0 || gpus == 0) return 0;
  return gpus % (tp * pp * cp) == 0 ? gpus / (tp * pp * cp) : 0;
}

// The global batch the scenario runs: the stated one, or, when the data replicas do not divide
// it, the nearest multiple of them (at least one sample each).
// Anything but a whole number in range goes through as stated, for the scenario reader to
// reject with its rule.
Json runnable_global_batch(const Json& c) {
  const Json& stated = c.at("parallel").at("global_batch");
  const double g = stated.get<double>();
  if (!(g >= 1 && g <= 1e12 && g == std::floor(g))) return stated;
  const long long global = static_cast<long long>(g);
  const long long replicas = data_replicas(c);
  if (replicas <= 0 || global % replicas == 0) return stated;
  const long long per_replica = std::max(1LL, (global + replicas / 2) / replicas);
  return per_replica * replicas;
}

void stated_parallel(const JsonNode& c, Json& strategy, Json& search, const Json& free,
                     const CaseRule* stack) {
  const JsonNode p = c.at("parallel");
  const Json& pr = p.raw();
  if (!has_number(pr, "global_batch")) p.at("global_batch").fail("is required (a number)");
  strategy["global_batch"] = runnable_global_batch(c.raw());
  // A degree the source leaves null: dp follows from the GPUs (strategy dp 0), tp and pp are
  // searched as the authors would have tuned them; 0 below means unknown.
  for (const char* key : {"tp", "pp", "dp"}) {
    if (has_number(pr, key)) {
      strategy[key] = pr.at(key);
    } else if (pr.contains(key) && !pr.at(key).is_null()) {
      p.at(key).fail("must be a number or null");
    } else if (std::string_view(key) != "dp") {
      search[key] = Json::array({1, 2, 4, 8});
    }
  }
  const int tp = has_number(pr, "tp") ? pr.at("tp").get<int>() : 0;
  const int pp = has_number(pr, "pp") ? pr.at("pp").get<int>() : 0;
  if (has_number(pr, "cp") && pr.at("cp").get<double>() > 1) strategy["cp"] = pr.at("cp");
  if (has_number(pr, "ep") && pr.at("ep").get<double>() > 1) strategy["ep"] = pr.at("ep");
  if (has_number(pr, "micro_batch")) {
    strategy["micro_batch"] = pr.at("micro_batch");
  } else if (const int mb = pipeline_micro_batch(pr, strategy.at("global_batch"), stack); mb > 0) {
    strategy["micro_batch"] = mb;
  } else if (!add_free(search, free, "micro_batch")) {
    p.fail("does not report micro_batch and its stack lists no values to search");
  }
  if (pr.contains("recompute") && (pr.at("recompute").is_string() || pr.at("recompute").is_boolean())) {
    strategy["recompute"] = recompute_of(p.at("recompute"));
    // torchgpipe's checkpoint='except_last': the last micro-batch keeps its activations.
    if (lowercase(case_field_text(pr, "recompute")).rfind("all but last", 0) == 0) {
      strategy["recompute_last_micro_batch"] = false;
    }
  } else if (const std::string implied = recompute_implied_by_flops(c.raw()); !implied.empty()) {
    strategy["recompute"] = implied;
  } else {
    add_free(search, free, "recompute");
    add_free(search, free, "recompute_layers");  // the stack's partial (block) recomputation
  }
  if (pr.contains("sequence_parallel") && pr.at("sequence_parallel").is_boolean()) {
    strategy["sequence_parallel"] = pr.at("sequence_parallel").get<bool>() && tp != 1;
  } else if (tp != 1) {
    add_free(search, free, "sequence_parallel");
  }
  if (tp == 1) strategy["sequence_parallel"] = false;
  if (has_number(pr, "zero_stage")) {
    strategy["zero_stage"] = pr.at("zero_stage");
  } else if (const ShardingText z = sharding_from_text(lowercase(case_field_text(pr, "zero_stage"))); z.stage >= 0) {
    strategy["zero_stage"] = z.stage;
  }
  // The source's own split of layers (an operator graph's ops) over the pipeline stages.
  if (pr.contains("stage_layers") && pr.at("stage_layers").is_array()) strategy["stage_layers"] = pr.at("stage_layers");
  if (has_number(pr, "fsdp")) {
    if (pr.at("fsdp") > 0) strategy["zero_stage"] = 3;
  } else if (const ShardingText z = sharding_from_text(lowercase(case_field_text(pr, "fsdp"))); z.stage >= 0) {
    strategy["zero_stage"] = z.stage;
    const Json& hw = c.raw().contains("hardware") ? c.raw().at("hardware") : Json::object();
    const int per_node = has_number(hw, "gpus_per_node") ? hw.at("gpus_per_node").get<int>() : 0;
    if (z.node_groups && per_node > 0) strategy["shard_group"] = per_node;
  }
  const std::string schedule = pp > 1 ? schedule_of(pr) : "1f1b";
  if (pp <= 1) {  // no pipeline, or its depth searched: plain 1F1B where it has one
    strategy["schedule"] = "1f1b";
    strategy["interleave"] = 1;
  } else if (has_number(pr, "interleave")) {
    const int v = pr.at("interleave").get<int>();
    strategy["interleave"] = v;
    strategy["schedule"] = v > 1 ? "interleaved" : (schedule.empty() ? "1f1b" : schedule);
  } else if (schedule == "1f1b" || schedule == "gpipe") {
    strategy["schedule"] = schedule;
    strategy["interleave"] = 1;
  } else if (schedule == "interleaved" && stack != nullptr && stack->pipeline_interleave > 0) {
    strategy["schedule"] = "interleaved";
    strategy["interleave"] = stack->pipeline_interleave;
  } else {
    // Interleaving named without its depth, or no schedule named: search the stack's depths.
    if (add_free(search, free, "interleave")) {
      search["schedule"] = schedule == "interleaved" ? Json::array({"interleaved"})
                                                     : Json::array({"1f1b", "interleaved"});
    } else {
      strategy["schedule"] = "1f1b";
    }
  }
}

Json strategy_of(const JsonNode& c, const CaseRules& rules, std::string* stack, Json* search) {
  Json strategy = Json::object();
  Json free = Json::object();
  const CaseRule* s = first_match(rules.stacks, c.raw());
  if (s != nullptr) {
    *stack = s->name;
    merge_into(strategy, s->apply);
    free = s->free;
  }
  if (const CaseRule* p = first_match(rules.precision, c.raw())) merge_into(strategy, p->apply);
  Json modified = Json::object();  // what the matching modifiers set, from a source's code
  for (const CaseRule& m : rules.modifiers) {
    if (rule_matches(m, c.raw())) merge_into(modified, m.apply);
  }
  merge_into(strategy, modified);
  stated_parallel(c, strategy, *search, free, s);
  // A setting a modifier reads from the run's own code is no longer free: the knob the case
  // file leaves null takes the modifier's value instead of being searched.
  for (auto it = modified.begin(); it != modified.end(); ++it) {
    if (search->contains(it.key())) {
      search->erase(it.key());
      strategy[it.key()] = it.value();
    }
  }
  // The recomputed layers' count is searched with the recomputation only.
  if (!search->contains("recompute")) search->erase("recompute_layers");
  // A stack's ring rotation applies to ring attention only (a source may run another).
  if (strategy.contains("cp_comm") && strategy.at("cp_comm") != "ring") strategy.erase("cp_rotate");
  if (s && !s->selective_recompute.empty() && strategy.value("recompute", "") == "selective") {
    strategy["recompute"] = s->selective_recompute;
  }
  return strategy;
}

double iteration_tokens(const Json& c) {
  return c.at("parallel").at("global_batch").get<double>() *
         c.at("model").at("seq_len").get<double>();
}

// Which view of device memory `measured.memory_kind` names: a text such as "max reserved
// (GiB)", "max allocated", "nvidia-smi". Absent, the figure is taken as nvidia-smi's (what a
// user reads when a source does not say), and the label says so.
std::pair<MetricKind, std::string> memory_metric(const JsonNode& measured) {
  if (!measured.has("memory_kind") || measured.at("memory_kind").raw().is_null()) {
    return {MetricKind::kMemoryDevice, "memory B (kind not stated: nvidia-smi's)"};
  }
  const JsonNode& k = measured.at("memory_kind");
  const std::string text = lowercase(k.as_string());
  if (text.find("reserved") != std::string::npos) return {MetricKind::kMemoryReserved, "memory reserved B"};
  if (text.find("allocated") != std::string::npos) return {MetricKind::kMemoryAllocated, "memory allocated B"};
  if (text.find("nvidia-smi") != std::string::npos || text.find("device") != std::string::npos) {
    return {MetricKind::kMemoryDevice, "memory nvidia-smi B"};
  }
  k.fail("must name the memory view measured: 'reserved' (torch.cuda.max_memory_reserved), "
         "'allocated' (max_memory_allocated) or 'nvidia-smi' (the device's use)");
}

// A field the source left out or null. One that is there but not a number is malformed, not
// missing: the readers reject it.
bool left_null(const Json& obj, const char* key) {
  return obj.is_object() && (!obj.contains(key) || obj.at(key).is_null());
}

// What every iteration needs and a source may leave null: the batch, the sequence length, the
// GPU count. Empty: all stated. `model`: the model as translated (an operator-graph preset has
// no sequence).
std::string missing_essentials(const Json& c, const Json& model) {
  const Json& p = c.value("parallel", Json::object());
  const Json& m = c.value("model", Json::object());
  const Json& h = c.value("hardware", Json::object());
  if (left_null(p, "global_batch")) {
    return "the source states no global batch (parallel.global_batch): an iteration is undefined";
  }
  if (left_null(h, "num_gpus")) return "the source states no GPU count (hardware.num_gpus)";
  if (!model.contains("preset") && left_null(m, "seq_len")) {
    return "the source states no sequence length (model.seq_len)";
  }
  return "";
}

// A case measured in none of the forms above (a source outside the development groups, whose
// FLOP convention no group states): its iteration time from the other throughput forms a
// source prints (milliseconds, total tokens/s, samples/s), or else the iteration time the
// case's curator derived from the printed figure (`derived.iteration_s`, computed with the
// source's own FLOP formula: a conversion, not a measurement, and labelled so).
void add_fallback_time(const JsonNode& c, std::vector<CaseMetric>& out) {
  const Json& m = c.at("measured").raw();
  const Json& p = c.at("parallel").raw();
  const bool batch_known = has_number(p, "global_batch") && has_number(c.at("model").raw(), "seq_len");
  if (has_number(m, "iteration_ms")) {
    out.push_back({MetricKind::kIterationTime, "iteration s (from ms)",
                   m.at("iteration_ms").get<double>() * kMilli, relative_rounding(m.at("iteration_ms"))});
    return;
  }
  for (const char* key : {"tokens_per_s_total", "tokens_per_s"}) {
    if (batch_known && has_number(m, key)) {
      out.push_back({MetricKind::kIterationTime, "iteration s (from total tokens/s)",
                     iteration_tokens(c.raw()) / m.at(key).get<double>(), relative_rounding(m.at(key))});
      return;
    }
  }
  for (const char* key : {"throughput_samples_per_s", "samples_per_s"}) {
    if (has_number(p, "global_batch") && has_number(m, key)) {
      out.push_back({MetricKind::kIterationTime, "iteration s (from samples/s)",
                     p.at("global_batch").get<double>() / m.at(key).get<double>(), relative_rounding(m.at(key))});
      return;
    }
  }
  const Json& d = c.raw().value("derived", Json::object());
  if (!d.is_object()) return;
  // "iteration_s", or a variant naming its formula ("iteration_s_from_eq3").
  const char* key = has_number(d, "iteration_s") ? "iteration_s" : nullptr;
  for (auto it = d.begin(); key == nullptr && it != d.end(); ++it) {
    if (it.key().rfind("iteration_s_", 0) == 0 && it.value().is_number()) key = it.key().c_str();
  }
  if (key == nullptr) return;
  const double value = d.at(key).get<double>();
  if (!(value > 0)) return;
  out.push_back({MetricKind::kIterationTime, "iteration s (the case's derived " + std::string(key) + ")",
                 value, relative_rounding(d.at(key))});
}

// What a FLOP-rate figure needs to become an iteration time: the case's transformer (as
// translated, architecture rules applied; none for an operator-graph preset) and the 16-bit
// and fp8 dense peaks an MFU is a fraction of.
struct FlopContext {
  std::optional<TransformerSpec> transformer;
  double peak_16bit = 0, peak_fp8 = 0;  // FLOP/s per GPU
};

// The peak an MFU divides by: the case's own nominal figure (hardware.peak_tflops) or else the
// catalog device the hardware rules chose; fp8 only where the source says its MFU is of the
// fp8 peak (most sources state MFU against the 16-bit peak even for fp8 runs).
double mfu_peak(const Json& c, const FlopContext& x) {
  const bool fp8 = lowercase(case_field_text(c, "flop_convention")).find("fp8 peak") != std::string::npos;
  const Json& stated = c.at("hardware").value("peak_tflops", Json::object());
  const char* key = fp8 ? "fp8_dense" : "bf16_dense";
  if (stated.is_object() && has_number(stated, key) && stated.at(key).get<double>() > 0) {
    return stated.at(key).get<double>() * kTera;
  }
  return fp8 ? x.peak_fp8 : x.peak_16bit;
}

// A FLOP-rate figure of a source no group describes, in the FLOP convention the case's own
// `flop_convention` text states (flop_conventions.h convention_from_text): TFLOP/s per GPU,
// or a utilization of the peak (a fraction, or a percentage above 1). An MFU whose text names
// no convention is PaLM's, which defined the term (Chowdhery et al. 2022, App. B); a TFLOP/s
// figure or a hardware utilization (Megatron's "percentage of theoretical peak", an HFU)
// without one compares with nothing: hardware or model FLOPs, causal or not, it could be any.
struct RateKey {
  const char* key;
  bool utilization;    // a fraction of the peak, not TFLOP/s
  bool palm_default;   // without a stated convention: PaLM's MFU
};
constexpr RateKey kRateKeys[] = {
    {"tflops_per_gpu", false, false},      {"model_tflops_per_gpu", false, false},
    {"mfu", true, true},                   {"mfu_pct", true, true},
    {"model_flops_utilization", true, true}, {"pct_of_peak", true, false},
    {"percent_of_peak", true, false},      {"hfu", true, false},
    {"hardware_flops_utilization", true, false}};

void add_own_convention_time(const JsonNode& c, const FlopContext& x, std::vector<CaseMetric>& out) {
  if (!x.transformer) return;
  const Json& m = c.at("measured").raw();
  std::string convention = convention_from_text(case_field_text(c.raw(), "flop_convention"));
  const bool stated = !convention.empty();
  // The first rate the case gives that can be read: any, under a stated convention; else an
  // MFU (PaLM's definition), even where a TFLOP/s figure comes first (Llama 3 gives both).
  const RateKey* rate = nullptr;
  for (const RateKey& k : kRateKeys) {
    if (!rate && has_number(m, k.key) && (stated || k.palm_default)) rate = &k;
  }
  if (!rate) return;
  if (!stated) convention = "six_n_attention";
  const double gpus = c.at("hardware").at("num_gpus").as_number();
  const double flops = iteration_flops(convention, c.raw(), *x.transformer);
  const std::string how = convention + (stated ? ", the case's flop_convention" : ", PaLM's MFU");
  const Json& value = m.at(rate->key);
  if (!rate->utilization) {
    out.push_back({MetricKind::kIterationTime, "iteration s (from TFLOP/s/GPU, " + how + ")",
                   flops / (value.get<double>() * kTera * gpus), relative_rounding(value)});
    return;
  }
  double fraction = value.get<double>();
  const std::string key = rate->key;
  if (fraction > 1 || key.find("pct") != std::string::npos || key.find("percent") != std::string::npos) {
    fraction /= 100;
  }
  const double peak = mfu_peak(c.raw(), x);
  if (!(peak > 0)) return;
  out.push_back({MetricKind::kIterationTime,
                 "iteration s (from " + key + " of " + format_flop_rate(peak) + ", " + how + ")",
                 flops / (fraction * peak * gpus), relative_rounding(value)});
}

// The measured values this tool can predict, converted to SI and to what the engine reports.
std::vector<CaseMetric> metrics_of(const JsonNode& c, const GroupRule* group, const FlopContext& x) {
  std::vector<CaseMetric> out;
  const Json& m = c.at("measured").raw();
  const double gpus = c.at("hardware").at("num_gpus").as_number();
  if (has_number(m, "iteration_s")) {
    out.push_back({MetricKind::kIterationTime, "iteration s", m.at("iteration_s").get<double>(),
                   relative_rounding(m.at("iteration_s"))});
  } else if (has_number(m, "tokens_per_s_per_gpu")) {
    const double tps = m.at("tokens_per_s_per_gpu").get<double>();
    out.push_back({MetricKind::kIterationTime, "iteration s (from tokens/s/GPU)",
                   iteration_tokens(c.raw()) / (tps * gpus),
                   relative_rounding(m.at("tokens_per_s_per_gpu"))});
  } else if (has_number(m, "tflops_per_gpu") && group && !group->flop_convention.empty() && x.transformer) {
    const double flops = iteration_flops(group->flop_convention, c.raw(), *x.transformer);
    const double rate = m.at("tflops_per_gpu").get<double>() * kTera * gpus;
    out.push_back({MetricKind::kIterationTime,
                   "iteration s (from TFLOP/s/GPU, " + group->flop_convention + ")",
                   flops / rate, relative_rounding(m.at("tflops_per_gpu"))});
  } else if (has_number(m, "moe_layer_forward_ms") && has_number(m, "moe_layer_backward_ms")) {
    out.push_back({MetricKind::kMoeLayerTime, "MoE layer fwd+bwd s",
                   (m.at("moe_layer_forward_ms").get<double>() + m.at("moe_layer_backward_ms").get<double>()) * kMilli,
                   relative_rounding(m.at("moe_layer_forward_ms"))});
  } else if (has_number(m, "layer_total_ms")) {
    out.push_back({MetricKind::kLayerTime, "layer fwd+bwd s",
                   m.at("layer_total_ms").get<double>() * kMilli,
                   relative_rounding(m.at("layer_total_ms"))});
  }
  if (group && !group->speedup_baseline.empty()) {
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (it.key().rfind("speedup_vs_", 0) != 0 || !it.value().is_number()) continue;
      out.push_back({MetricKind::kSpeedup, "speedup vs " + group->speedup_baseline,
                     it.value().get<double>(), relative_rounding(it.value()), group->speedup_baseline});
    }
  }
  if (out.empty()) add_fallback_time(c, out);
  if (out.empty()) add_own_convention_time(c, x, out);
  if (has_number(m, "memory_gib")) {
    const auto [kind, label] = memory_metric(c.at("measured"));
    out.push_back({kind, label, m.at("memory_gib").get<double>() * kGiB,
                   relative_rounding(m.at("memory_gib"))});
  }
  // A zero, negative or overflowing figure compares with nothing (and would print inf).
  std::erase_if(out, [](const CaseMetric& x) { return !(std::isfinite(x.published) && x.published > 0); });
  return out;
}

std::string source_text(const Json& c) {
  if (!c.contains("source")) return "";
  const Json& s = c.at("source");
  if (s.is_string()) return s.get<std::string>();
  return case_field_text(c, "source.title") + ", " + case_field_text(c, "source.table");
}

// The translated model and the chosen device's peaks, for metrics given as FLOP rates. A
// model or cluster the rules make invalid leaves them unknown here: the case's scenario is
// rejected with its reason when it is evaluated (published.cpp), not the whole file.
FlopContext flop_context(const JsonNode& c, const CaseRules& rules) {
  FlopContext x;
  const std::string where = "validation case " + c.string("id");
  try {
    const ModelSpec model = read_model(JsonNode(model_of(c, rules), where, "model"));
    if (model.family != ModelFamily::kOpGraph) x.transformer = model.transformer;
    const HardwareModel hw = read_cluster(JsonNode(cluster_of(c, rules), where, "cluster"));
    x.peak_16bit = hw.device.peak_flops[static_cast<size_t>(DType::kBf16)];
    x.peak_fp8 = hw.device.peak_flops[static_cast<size_t>(DType::kFp8)];
  } catch (const InputError&) {
    // left unknown: the scenario is rejected, with its reason, when the case is evaluated
  }
  return x;
}

// Names sources give the same quantity, mapped to the one this file reads, per section of a
// case (a case's own usual name wins where it gives both).
struct KeyAlias {
  const char* section;
  const char* alias;
  const char* name;
};
constexpr KeyAlias kKeyAliases[] = {
    {"measured", "iteration_time_s", "iteration_s"},       {"measured", "step_time_s", "iteration_s"},
    {"measured", "time_per_iteration_s", "iteration_s"},   {"measured", "seconds_per_iteration", "iteration_s"},
    {"measured", "iteration_time_ms", "iteration_ms"},     {"measured", "step_time_ms", "iteration_ms"},
    {"measured", "time_per_iteration_ms", "iteration_ms"}, {"measured", "tokens_per_gpu_per_s", "tokens_per_s_per_gpu"},
    {"measured", "tokens_per_second_per_gpu", "tokens_per_s_per_gpu"},
    {"measured", "tps_per_gpu", "tokens_per_s_per_gpu"},   {"measured", "tokens_per_second", "tokens_per_s_total"},
    {"measured", "throughput_tokens_per_s", "tokens_per_s_total"},
    {"measured", "samples_per_second", "throughput_samples_per_s"},
    {"measured", "sequences_per_s", "throughput_samples_per_s"},
    {"measured", "sequences_per_second", "throughput_samples_per_s"},
    {"measured", "teraflops_per_gpu", "tflops_per_gpu"},   {"measured", "achieved_tflops_per_gpu", "tflops_per_gpu"},
    {"model", "num_layers", "layers"},                     {"model", "n_layers", "layers"},
    {"model", "hidden_size", "hidden"},                    {"model", "d_model", "hidden"},
    {"model", "num_attention_heads", "heads"},             {"model", "n_heads", "heads"},
    {"model", "num_kv_heads", "kv_heads"},                 {"model", "num_key_value_heads", "kv_heads"},
    {"model", "n_kv_heads", "kv_heads"},                   {"model", "ffn_hidden_size", "ffn_hidden"},
    {"model", "intermediate_size", "ffn_hidden"},          {"model", "vocab_size", "vocab"},
    {"model", "seq_length", "seq_len"},                    {"model", "sequence_length", "seq_len"},
    {"parallel", "tensor_parallel", "tp"},                 {"parallel", "pipeline_parallel", "pp"},
    {"parallel", "data_parallel", "dp"},                   {"parallel", "context_parallel", "cp"},
    {"parallel", "expert_parallel", "ep"},                 {"parallel", "micro_batch_size", "micro_batch"},
    {"parallel", "global_batch_size", "global_batch"},     {"parallel", "virtual_pipeline", "interleave"},
    {"hardware", "gpu_count", "num_gpus"}};

Json with_key_aliases(const Json& c) {
  Json out = c;
  for (const KeyAlias& a : kKeyAliases) {
    if (!out.contains(a.section) || !out.at(a.section).is_object()) continue;
    Json& section = out[a.section];
    if (section.contains(a.alias) && (!section.contains(a.name) || section.at(a.name).is_null())) {
      section[a.name] = section.at(a.alias);
    }
  }
  return out;
}

}  // namespace

TranslatedCase translate_case(const JsonNode& given, const CaseRules& rules) {
  given.require_object();
  const Json normalized = with_key_aliases(given.raw());
  const JsonNode c(normalized, given.file(), given.path());
  TranslatedCase t;
  t.id = c.string("id");
  const GroupRule* group = group_of(rules, t.id);
  t.group = group ? group->group : "ungrouped";
  t.measured = !group || group->measured;
  t.source = source_text(c.raw());
  if (!t.measured) {
    t.unsupported = "not a measurement: " + (group->why.empty() ? group->group : group->why);
    return t;
  }
  t.unsupported = reason_not_expressible(c.raw(), model_of(c, rules));
  if (!t.unsupported.empty()) return t;
  if (const Json& p = c.raw().value("parallel", Json::object());
      p.is_object() && p.contains("recompute") && p.at("recompute").is_string() &&
      recompute_text(p.at("recompute").get<std::string>()).empty()) {
    t.unsupported = "a recomputation this tool cannot read (parallel.recompute: \"" +
                    p.at("recompute").get<std::string>() + "\"; it knows full, selective, none)";
    return t;
  }
  if (const std::string missing = missing_essentials(c.raw(), model_of(c, rules)); !missing.empty()) {
    t.unsupported = missing;
    return t;
  }
  if (!first_match(rules.hardware, c.raw())) {
    c.at("hardware").require_object();
    t.unsupported = "a GPU no hardware rule in validate/data/rules.json describes (hardware.gpu: \"" +
                    case_field_text(c.raw(), "hardware.gpu") + "\"; add a rule for it)";
    return t;
  }
  t.metrics = metrics_of(c, group, flop_context(c, rules));
  if (group && group->speedup_baseline == t.id) {
    t.speedup_reference = true;
    t.metrics.clear();
  } else if (t.metrics.empty()) {
    t.unsupported = "no measured value this tool can compare (measured: " +
                    c.at("measured").value_text() + ")";
    return t;
  }
  Json search = Json::object();
  t.scenario = {{"name", t.id},
                {"model", model_of(c, rules)},
                {"cluster", cluster_of(c, rules)},
                {"strategy", strategy_of(c, rules, &t.stack, &search)}};
  if (!search.empty()) t.scenario["search"] = search;
  const Json& stated = c.at("parallel").at("global_batch").raw();
  const Json& run = t.scenario.at("strategy").at("global_batch");
  if (run != stated) {
    t.batch_scale = stated.get<double>() / run.get<double>();
    t.batch_note = "global batch " + json_text(stated) + " -> " + json_text(run) + " (" +
                   std::to_string(data_replicas(c.raw())) + " data replicas; time scaled back)";
  }
  if (t.speedup_reference) t.unsupported = "the baseline its group's speedups divide by (predicted, not compared)";
  return t;
}

bool is_memory(MetricKind k) {
  return k == MetricKind::kMemoryAllocated || k == MetricKind::kMemoryReserved ||
         k == MetricKind::kMemoryDevice;
}

}  // namespace stratasim
