#include "strategies/strategy/strategy.h"

#include <algorithm>

namespace stratasim {

int Strategy::placement_devices() const {
  int devices = 1;
  for (const PlacementRule& r : placement) devices = std::max(devices, r.device + 1);
  return devices;
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    case Recompute::kOpSelective: return "op_selective";
  }
  return "?";
}

std::string recompute_modules_text(uint8_t modules, char separator) {
  static constexpr std::pair<uint8_t, std::string_view> kNames[] = {
      {kModuleCoreAttn, "core_attn"}, {kModuleMoeAct, "moe_act"}, {kModuleLayernorm, "layernorm"},
      {kModuleMlaUpProj, "mla_up_proj"}, {kModuleMlp, "mlp"}, {kModuleMoe, "moe"},
      {kModuleSharedExperts, "shared_experts"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(modules & bit)) continue;
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

std::string recompute_label(const Strategy& s) {
  std::string out(recompute_name(s.recompute));
  if (s.recompute == Recompute::kFull && s.recompute_layers > 0) {
    return out + "(first " + std::to_string(s.recompute_layers) + " layers of each stage)";
  }
  if (s.recompute != Recompute::kSelective || s.recompute_modules == kModuleCoreAttn) return out;
  return out + "(" + recompute_modules_text(s.recompute_modules, ',') + ")";
}

std::string_view collective_algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kTree: return "tree";
    case CollectiveAlgorithm::kHierarchical: return "hierarchical";
  }
  return "?";
}

std::vector<std::string> fusion_preset_names() { return {"none", "epilogues", "megatron", "all", "chains"}; }

bool fusion_preset(std::string_view name, FusionPlan* out) {
  FusionPlan f;
  if (name == "none") {
  } else if (name == "epilogues") {
    f.elementwise_epilogue = f.bias_dropout_residual = true;
  } else if (name == "megatron") {
    // Megatron-LM (2021) defaults: fused bias+GeLU, bias+dropout+add, scale+mask+softmax,
    // apex's fused norms.
    f.elementwise_epilogue = f.bias_dropout_residual = f.fused_softmax = f.fused_norm = true;
    f.fused_loss = true;  // vocab-parallel cross-entropy, in place on the fp32 logits,
    f.megatron_loss_ops = true;  // as Megatron's separate PyTorch ops
  } else if (name == "chains") {
    // Operator graphs: whole chains of memory-bound ops fused with the op before them.
    f.elementwise_epilogue = f.whole_chain = true;
  } else if (name == "all") {
    f.elementwise_epilogue = f.bias_dropout_residual = f.fused_softmax = f.fused_norm = true;
    f.fused_loss = true;
    f.norm_residual = f.flash_attention = true;
  } else {
    return false;
  }
  *out = f;
  return true;
}

std::string fusion_label(const FusionPlan& f) {
  for (const std::string& name : fusion_preset_names()) {
    FusionPlan preset;
    fusion_preset(name, &preset);
    if (preset == f) return name;
  }
  return "custom";
}

std::string describe_fusion(const FusionPlan& f) {
  std::string s;
  auto add = [&](bool on, const char* what) {
    if (on) s += (s.empty() ? "" : ", ") + std::string(what);
  };
  add(f.elementwise_epilogue, "bias+act");
  add(f.gemm_activation, "gemm+bias+act");
  add(f.bias_dropout_residual, "bias+dropout+add");
  add(f.norm_residual, "add+norm");
  add(f.fused_softmax, "softmax");
  add(f.fused_norm, "norm/rope");
  add(f.flash_attention, "flash-attention");
  add(f.fused_loss, "loss");
  add(f.whole_chain, "whole chains");
  if (!f.graph_groups.empty()) add(true, (std::to_string(f.graph_groups.size()) + " op groups").c_str());
  return s.empty() ? "none" : s;
}

}  // namespace stratasim
