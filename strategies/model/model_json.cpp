#include "strategies/model/model_json.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>

#include "sim/core/kernel_families.h"
#include "strategies/model/hf_config.h"

namespace stratasim {
namespace {

constexpr std::array<EnumName<ModelFamily>, 3> kFamilies = {{
    {"decoder", ModelFamily::kDecoder}, {"encoder", ModelFamily::kEncoder},
    {"op_graph", ModelFamily::kOpGraph}}};
constexpr std::array<EnumName<Activation>, 3> kActivations = {{
    {"gelu", Activation::kGeLU}, {"relu", Activation::kReLU}, {"swiglu", Activation::kSwiGLU}}};
constexpr std::array<EnumName<MoeRouting>, 2> kMoeRoutings = {{
    {"random", MoeRouting::kRandom}, {"contiguous", MoeRouting::kContiguous}}};
constexpr std::array<EnumName<NormKind>, 2> kNorms = {{
    {"layernorm", NormKind::kLayerNorm}, {"rmsnorm", NormKind::kRMSNorm}}};
constexpr std::array<EnumName<GraphOpKind>, 9> kOpKinds = {{
    {"matmul", GraphOpKind::kMatmul}, {"conv", GraphOpKind::kConv}, {"norm", GraphOpKind::kNorm},
    {"elementwise", GraphOpKind::kElementwise}, {"pool", GraphOpKind::kPool},
    {"softmax", GraphOpKind::kSoftmax}, {"loss", GraphOpKind::kLoss},
    {"stencil", GraphOpKind::kStencil}, {"task", GraphOpKind::kTask}}};

MoeSpec read_moe(const JsonNode& n, MoeSpec m) {
  n.allow_keys({"experts", "top_k", "expert_ffn_hidden", "shared_experts", "shared_ffn_hidden",
                "capacity_factor", "load_imbalance", "first_dense_layers", "routing", "groups",
                "group_top_k", "description"});
  if (m.experts == 0) n.at("experts");  // required unless the preset has experts
  m.experts = static_cast<int>(n.integer_or("experts", m.experts, 1, 1 << 20));
  m.top_k = static_cast<int>(n.integer_or("top_k", m.top_k, 1, m.experts));
  m.expert_ffn_hidden =
      static_cast<int>(n.integer_or("expert_ffn_hidden", m.expert_ffn_hidden, 0, 100000000));
  m.shared_experts = static_cast<int>(n.integer_or("shared_experts", m.shared_experts, 0, 1024));
  m.shared_ffn_hidden =
      static_cast<int>(n.integer_or("shared_ffn_hidden", m.shared_ffn_hidden, 0, 100000000));
  m.first_dense_layers =
      static_cast<int>(n.integer_or("first_dense_layers", m.first_dense_layers, 0, 100000));
  m.capacity_factor = n.number_or("capacity_factor", m.capacity_factor);
  if (m.capacity_factor != 0 && !(m.capacity_factor >= 1 && m.capacity_factor <= 64)) {
    n.at("capacity_factor").fail("must be 0 (dropless) or between 1 and 64");
  }
  m.load_imbalance = n.number_or("load_imbalance", m.load_imbalance);
  if (!(m.load_imbalance >= 1 && m.load_imbalance <= 64)) {
    n.at("load_imbalance").fail("must be between 1 (balanced) and 64 (most loaded rank / mean)");
  }
  m.routing = n.enum_or("routing", kMoeRoutings, m.routing);
  m.groups = static_cast<int>(n.integer_or("groups", m.groups, 1, m.experts));
  if (m.experts % m.groups != 0) n.at("groups").fail("must divide experts (" + std::to_string(m.experts) + ")");
  m.group_top_k = static_cast<int>(n.integer_or("group_top_k", m.group_top_k, 0, m.groups));
  if (m.group_limited() && m.top_k % m.group_top_k != 0) {
    n.at("group_top_k").fail("must divide top_k (" + std::to_string(m.top_k) +
                             "): each chosen group gives a token top_k / group_top_k experts");
  }
  if (m.group_limited() && m.top_k / m.group_top_k > m.experts / m.groups) {
    n.at("group_top_k").fail("leaves a chosen group more experts to give (top_k / group_top_k) than it holds (" +
                             std::to_string(m.experts / m.groups) + ")");
  }
  return m;
}

MlaSpec read_mla(const JsonNode& n, MlaSpec m) {
  n.allow_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                "v_head_dim", "description"});
  if (m.kv_lora_rank == 0) n.at("kv_lora_rank");  // required unless the preset has MLA
  m.kv_lora_rank = static_cast<int>(n.integer_or("kv_lora_rank", m.kv_lora_rank, 1, 1 << 20));
  m.q_lora_rank = static_cast<int>(n.integer_or("q_lora_rank", m.q_lora_rank, 0, 1 << 20));
  m.qk_nope_head_dim = static_cast<int>(n.integer_or("qk_nope_head_dim", m.qk_nope_head_dim, 1, 1 << 16));
  m.qk_rope_head_dim = static_cast<int>(n.integer_or("qk_rope_head_dim", m.qk_rope_head_dim, 0, 1 << 16));
  m.v_head_dim = static_cast<int>(n.integer_or("v_head_dim", m.v_head_dim, 1, 1 << 16));
  if (m.q_lora_rank == 0) n.at("q_lora_rank").fail("must be at least 1 (queries projected down, as DeepSeek-V3 does)");
  return m;
}

void read_transformer_fields(const JsonNode& n, TransformerSpec& t) {
  t.layers = static_cast<int>(n.integer_or("layers", t.layers, 1, 100000));
  t.hidden = static_cast<int>(n.integer_or("hidden", t.hidden, 1, 10000000));
  t.heads = static_cast<int>(n.integer_or("heads", t.heads, 1, 100000));
  t.kv_heads = static_cast<int>(n.integer_or("kv_heads", t.kv_heads, 0, 100000));
  t.ffn_hidden = static_cast<int>(n.integer_or("ffn_hidden", t.ffn_hidden, 0, 100000000));
  t.activation = n.enum_or("activation", kActivations, t.activation);
  t.norm = n.enum_or("norm", kNorms, t.norm);
  t.seq_len = static_cast<int>(n.integer_or("seq_len", t.seq_len, 1, 100000000));
  t.vocab = static_cast<int>(n.integer_or("vocab", t.vocab, 1, 100000000));
  t.tied_embeddings = n.bool_or("tied_embeddings", t.tied_embeddings);
  t.learned_positions = n.bool_or("learned_positions", t.learned_positions);
  t.rotary = n.bool_or("rotary", t.rotary);
  t.qk_norm = n.bool_or("qk_norm", t.qk_norm);
  t.linear_bias = n.bool_or("linear_bias", t.linear_bias);
  t.dropout = n.bool_or("dropout", t.dropout);
  t.head_dim_override = static_cast<int>(n.integer_or("head_dim", t.head_dim_override, 0, 1000000));
  t.sliding_window = static_cast<int>(n.integer_or("sliding_window", t.sliding_window, 0, 100000000));
  t.windowed_layers = static_cast<int>(n.integer_or("windowed_layers", t.windowed_layers, 0, 100000));
  t.glu_limit = n.number_or("glu_limit", t.glu_limit);
  t.rope_attention_factor = n.number_or("rope_attention_factor", t.rope_attention_factor);
  t.mtp_layers = static_cast<int>(n.integer_or("mtp_layers", t.mtp_layers, 0, TransformerSpec::kMaxMtpLayers));
  if (auto moe = n.find("moe")) t.moe = read_moe(*moe, t.moe);
  if (auto mla = n.find("mla")) t.mla = read_mla(*mla, t.mla);
}

void check_transformer(const JsonNode& n, const TransformerSpec& t) {
  if (t.mtp_layers > TransformerSpec::kMaxMtpLayers) {  // a Hugging Face num_nextn_predict_layers is read unbounded
    n.fail("has mtp_layers=" + std::to_string(t.mtp_layers) + " multi-token prediction depths; at most " +
           std::to_string(TransformerSpec::kMaxMtpLayers) + " are modelled");
  }
  if (t.head_dim_override == 0 && t.hidden % t.heads != 0) {
    n.fail("has hidden=" + std::to_string(t.hidden) + " not divisible by heads=" +
           std::to_string(t.heads));
  }
  if (n.has("glu_limit") && !(t.glu_limit >= 0 && t.glu_limit <= 1e6)) {
    n.at("glu_limit").fail("must be 0 (no clamp) or a positive limit of at most 1e6");
  }
  if (n.has("glu_limit") && t.glu_limit > 0 && t.activation != Activation::kSwiGLU) {
    n.at("glu_limit").fail("clamps a gated activation's inputs; it needs activation swiglu");
  }
  if (n.has("rope_attention_factor") && !(t.rope_attention_factor > 0 && t.rope_attention_factor <= 100)) {
    n.at("rope_attention_factor").fail("must be a positive factor of at most 100 (1: plain RoPE)");
  }
  if (n.has("windowed_layers") && t.sliding_window == 0) {
    n.at("windowed_layers").fail("needs sliding_window (the window's keys) > 0");
  }
  if (t.windowed_layers > t.layers) {
    n.at("windowed_layers").fail("must be at most layers=" + std::to_string(t.layers));
  }
  const int kv = t.kv_heads_or_heads();
  if (kv > t.heads || t.heads % kv != 0) {
    n.at("kv_heads").fail("must divide heads=" + std::to_string(t.heads));
  }
}

// Bounds on an op's figures, far above any real layer (GPT-3's whole forward is 3.5e11 FLOP a
// token), so sums over a graph repeated a million times stay finite in every output.
constexpr double kMaxOpFlops = 1e18;
constexpr double kMaxOpElements = 1e15;
constexpr double kMaxModelParams = 1e15;

double bounded(const JsonNode& n, double v, double max, const char* what) {
  if (v > max) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", max);
    n.fail(std::string("must be at most ") + buf + " " + what);
  }
  return v;
}

// Rows of a spatial op (GraphOp::height): its output's rows, the halo rows it reads beyond them
// on each side, the model input's rows. A halo needs rows to be beside.
void read_geometry(const JsonNode& n, GraphOp& op) {
  constexpr int kMaxRows = 10'000'000;
  op.height = static_cast<int>(n.integer_or("height", 0, 0, kMaxRows));
  op.halo = static_cast<int>(n.integer_or("halo", 0, 0, 1000));
  op.input_height = static_cast<int>(n.integer_or("input_height", 0, 0, kMaxRows));
  if (op.height == 0 && op.halo > 0) {
    n.at("halo").fail("needs the op's height (rows of its output): a halo is rows of a spatial op's input");
  }
  if (op.height == 0 && op.input_height > 0) {
    n.at("input_height").fail("needs the op's height: only a spatial op has rows to split");
  }
  if (op.height > 0 && op.output_elements > 0 && op.output_elements < op.height) {
    n.at("height").fail("is more rows than the op's " + std::to_string(static_cast<long long>(op.output_elements)) +
                        " output elements");
  }
}

GraphOp read_graph_op(const JsonNode& n, const std::map<std::string, int>& index) {
  n.allow_keys({"name", "kind", "flops", "output_elements", "params", "inputs",
                "input_elements", "height", "halo", "input_height", "family"});
  GraphOp op;
  op.name = n.string("name");
  op.kind = n.at("kind").as_enum(kOpKinds);
  const JsonNode flops = n.at("flops");
  op.flops = bounded(flops,
                     flops.as_quantity(flops.raw().is_string() ? Dimension::kFlops : Dimension::kCount),
                     kMaxOpFlops, "FLOP per sample");
  op.output_elements = bounded(n.at("output_elements"),
                               n.at("output_elements").as_quantity(Dimension::kCount),
                               kMaxOpElements, "elements per sample");
  if (auto params = n.find("params")) {
    op.params = bounded(*params, params->as_quantity(Dimension::kCount), kMaxModelParams, "parameters");
  }
  if (auto in = n.find("input_elements")) {
    op.input_elements =
        bounded(*in, in->as_quantity(Dimension::kCount), kMaxOpElements, "elements per sample");
  }
  read_geometry(n, op);
  if (auto family = n.find("family")) {
    op.family = kernel_family_index(family->as_string());
    if (op.family < 0) family->fail("names no kernel family (one of: " + kernel_family_list() + ")");
  }
  if (auto inputs = n.find("inputs")) {
    if (inputs->size() > 3) {
      inputs->fail("lists " + std::to_string(inputs->size()) +
                   " inputs; an op reads at most 3 (join more branches with a chain of ops)");
    }
    for (size_t i = 0; i < inputs->size(); ++i) {
      JsonNode in = inputs->element(i);
      auto it = index.find(in.as_string());
      if (it == index.end()) in.fail("names no earlier op (inputs must refer to ops above)");
      op.inputs.push_back(it->second);
    }
  }
  return op;
}

OpGraphSpec read_graph(const JsonNode& n) {
  OpGraphSpec g;
  g.repeat = static_cast<int>(n.integer_or("repeat", 1, 1, 1000000));
  JsonNode ops = n.at("ops");
  std::map<std::string, int> index;
  for (size_t i = 0; i < ops.size(); ++i) {
    g.ops.push_back(read_graph_op(ops.element(i), index));
    if (!index.emplace(g.ops.back().name, static_cast<int>(i)).second) {
      ops.element(i).at("name").fail("is used by two ops");
    }
  }
  if (g.ops.empty()) ops.fail("must list at least one op");
  double params = 0;
  for (const GraphOp& op : g.ops) params += op.params;
  if (params * g.repeat > kMaxModelParams) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", params * g.repeat);
    ops.fail(std::string("holds ") + buf + " parameters in all (ops x repeat); at most 1e+15 are modelled");
  }
  // A graph that neither computes nor moves data would be predicted at its launch overheads
  // alone, with a throughput that means nothing.
  const bool works = std::any_of(g.ops.begin(), g.ops.end(), [](const GraphOp& op) {
    return op.flops > 0 || op.output_elements > 0 || op.input_elements > 0 || op.params > 0;
  });
  if (!works) {
    ops.fail("does no work: every op has 0 flops, 0 output and input elements and 0 params");
  }
  return g;
}

ModelSpec preset_for(const JsonNode& name_node) {
  const std::string name = name_node.as_string();
  auto names = model_preset_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const auto& k : names) known += (known.empty() ? "" : ", ") + k;
    name_node.fail("is not a known model preset (known: " + known + ")");
  }
  return model_preset(name);
}

// {"hf_config": "config.json", "seq_len": ...}: the config file relative to the file that names
// it; the training sequence length must be stated (see hf_config.h).
ModelSpec from_hf_config(const JsonNode& n) {
  if (n.has("preset")) n.at("hf_config").fail("cannot be combined with preset (choose one)");
  const JsonNode path_node = n.at("hf_config");
  std::filesystem::path path(path_node.as_string());
  if (path.is_relative()) path = std::filesystem::path(n.file()).parent_path() / path;
  const std::string resolved = path.lexically_normal().generic_string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(resolved, ec)) {
    path_node.fail(std::filesystem::exists(resolved, ec)
                       ? "names something that is not a regular file: " + resolved
                       : "names a file that does not exist: " + resolved);
  }
  if (!n.has("seq_len")) {
    n.fail("needs seq_len beside hf_config: a config's max_position_embeddings is the context "
           "the model supports, not the length it is trained at");
  }
  const Json doc = load_json_file(resolved);
  return read_hf_config(JsonNode(doc, resolved, ""));
}

}  // namespace

ModelSpec read_model(const JsonNode& n) {
  if (n.is_string()) return preset_for(n);
  n.allow_keys({"preset", "hf_config", "name", "family", "layers", "hidden", "heads", "kv_heads",
                "ffn_hidden", "activation", "norm", "seq_len", "vocab", "tied_embeddings",
                "learned_positions", "rotary", "qk_norm", "linear_bias", "dropout", "head_dim",
                "sliding_window", "windowed_layers", "glu_limit", "rope_attention_factor", "mtp_layers", "moe", "mla", "ops", "repeat",
                "description"});
  ModelSpec m;
  if (n.has("hf_config")) {
    m = from_hf_config(n);
  } else if (auto preset = n.find("preset")) {
    m = preset_for(*preset);
  } else {
    m.family = n.at("family").as_enum(kFamilies);
    if (m.family != ModelFamily::kOpGraph) {
      for (auto key : {"layers", "hidden", "heads", "seq_len", "vocab"}) n.at(key);
    }
  }
  m.name = n.string_or("name", m.name.empty() ? "custom" : m.name);
  if (m.family == ModelFamily::kOpGraph) {
    n.allow_keys({"preset", "name", "family", "ops", "repeat", "description"});
    if (!n.has("preset") || n.has("ops")) m.graph = read_graph(n);
    return m;
  }
  n.allow_keys({"preset", "hf_config", "name", "family", "layers", "hidden", "heads", "kv_heads",
                "ffn_hidden", "activation", "norm", "seq_len", "vocab", "tied_embeddings",
                "learned_positions", "rotary", "qk_norm", "linear_bias", "dropout", "head_dim",
                "sliding_window", "windowed_layers", "glu_limit", "rope_attention_factor", "mtp_layers", "moe", "mla",
                "description"});
  read_transformer_fields(n, m.transformer);
  check_transformer(n, m.transformer);
  return m;
}

Json to_json(const ModelSpec& m) {
  Json j;
  j["name"] = m.name;
  j["family"] = std::string(family_name(m.family));
  if (m.family == ModelFamily::kOpGraph) {
    j["repeat"] = m.graph.repeat;
    Json ops = Json::array();
    for (const GraphOp& op : m.graph.ops) {
      Json o{{"name", op.name}, {"kind", std::string(graph_op_kind_name(op.kind))},
             {"flops", op.flops}, {"output_elements", op.output_elements}, {"params", op.params}};
      if (op.input_elements > 0) o["input_elements"] = op.input_elements;
      if (op.height > 0) o["height"] = op.height;
      if (op.halo > 0) o["halo"] = op.halo;
      if (op.input_height > 0) o["input_height"] = op.input_height;
      if (op.family >= 0) o["family"] = std::string(kKernelFamilyNames[op.family]);
      Json inputs = Json::array();
      for (int i : op.inputs) inputs.push_back(m.graph.ops[i].name);
      o["inputs"] = inputs;
      ops.push_back(o);
    }
    j["ops"] = ops;
    return j;
  }
  const TransformerSpec& t = m.transformer;
  j.update({{"layers", t.layers}, {"hidden", t.hidden}, {"heads", t.heads},
            {"kv_heads", t.kv_heads}, {"ffn_hidden", t.ffn_hidden},
            {"activation", std::string(activation_name(t.activation))},
            {"norm", t.norm == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"},
            {"seq_len", t.seq_len}, {"vocab", t.vocab}, {"tied_embeddings", t.tied_embeddings},
            {"learned_positions", t.learned_positions}, {"rotary", t.rotary},
            {"linear_bias", t.linear_bias},
            {"dropout", t.dropout}});
  if (t.head_dim_override > 0) j["head_dim"] = t.head_dim_override;
  if (t.qk_norm) j["qk_norm"] = true;
  if (t.sliding_window > 0) {
    j["sliding_window"] = t.sliding_window;
    if (t.windowed_layers >= 0) j["windowed_layers"] = t.windowed_layers;
  }
  if (t.glu_limit > 0) j["glu_limit"] = t.glu_limit;
  if (t.rope_attention_factor != 1) j["rope_attention_factor"] = t.rope_attention_factor;
  if (t.mtp_layers > 0) j["mtp_layers"] = t.mtp_layers;
  if (t.moe.enabled()) {
    const MoeSpec& m = t.moe;
    j["moe"] = Json{{"experts", m.experts}, {"top_k", m.top_k},
                    {"expert_ffn_hidden", t.expert_ffn()}, {"shared_experts", m.shared_experts},
                    {"shared_ffn_hidden", m.shared_experts > 0 ? t.shared_ffn() : 0},
                    {"capacity_factor", m.capacity_factor}, {"load_imbalance", m.load_imbalance},
                    {"first_dense_layers", m.first_dense_layers}};
    if (m.routing != MoeRouting::kRandom) j["moe"]["routing"] = std::string(enum_to_name(kMoeRoutings, m.routing));
    if (m.groups > 1) j["moe"]["groups"] = m.groups;
    if (m.group_top_k > 0) j["moe"]["group_top_k"] = m.group_top_k;
  }
  if (t.mla.enabled()) {
    const MlaSpec& a = t.mla;
    j["mla"] = Json{{"q_lora_rank", a.q_lora_rank}, {"kv_lora_rank", a.kv_lora_rank},
                    {"qk_nope_head_dim", a.qk_nope_head_dim}, {"qk_rope_head_dim", a.qk_rope_head_dim},
                    {"v_head_dim", a.v_head_dim}};
  }
  return j;
}

}  // namespace stratasim
