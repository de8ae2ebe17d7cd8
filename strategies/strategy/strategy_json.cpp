#include "strategies/strategy/strategy_json.h"

#include <array>
#include <charconv>

namespace stratasim {
namespace {

// `attention_kernel` ("flash1", "flash2", "flash3", "cudnn", "flash_triton"), or the older
// `flash_attention_version` (1, 2 or 3), which names the same choice; both at once must agree.
AttentionKernel read_attention_kernel(const JsonNode& n, AttentionKernel preset) {
  const AttentionKernel kernel = n.enum_or("attention_kernel", kAttentionKernelNames, preset);
  const auto version = n.find("flash_attention_version");
  if (!version) return kernel;
  const int v = static_cast<int>(version->as_integer(1, 3));
  const AttentionKernel by_version = v == 3   ? AttentionKernel::kFlash3
                                     : v == 1 ? AttentionKernel::kFlash1
                                              : AttentionKernel::kFlash2;
  if (n.has("attention_kernel") && kernel != by_version) {
    version->fail("names another kernel than attention_kernel; give only attention_kernel");
  }
  return by_version;
}

FusionPlan read_fusion(const JsonNode& n) {
  FusionPlan f;
  if (n.is_string()) {
    if (!fusion_preset(n.as_string(), &f)) n.fail("is not one of: none, epilogues, megatron, all, chains");
    return f;
  }
  n.allow_keys({"preset", "elementwise_epilogue", "bias_dropout_residual", "norm_residual",
                "fused_softmax", "fused_norm", "fused_loss", "megatron_loss_ops", "loss_parallel", "complex_rope", "fused_rope_unscaled", "qkv_split_copies", "separate_linears", "compiled", "gemm_activation", "flash_attention",
                "flash_attention_version", "attention_kernel", "whole_chain", "graph_groups"});
  if (auto p = n.find("preset")) {
    if (!fusion_preset(p->as_string(), &f)) p->fail("is not one of: none, epilogues, megatron, all, chains");
  }
  f.elementwise_epilogue = n.bool_or("elementwise_epilogue", f.elementwise_epilogue);
  f.bias_dropout_residual = n.bool_or("bias_dropout_residual", f.bias_dropout_residual);
  f.norm_residual = n.bool_or("norm_residual", f.norm_residual);
  f.fused_softmax = n.bool_or("fused_softmax", f.fused_softmax);
  f.fused_norm = n.bool_or("fused_norm", f.fused_norm);
  f.fused_loss = n.bool_or("fused_loss", f.fused_loss);
  if (n.has("megatron_loss_ops")) {
    f.megatron_loss_ops = n.at("megatron_loss_ops").as_bool();
  } else if (!f.fused_loss) {
    f.megatron_loss_ops = false;  // a preset's Megatron loss ops go with its fused loss
  }
  if (f.megatron_loss_ops && !f.fused_loss) {
    n.at("megatron_loss_ops")
        .fail("asks for Megatron's vocab-parallel cross-entropy ops without fused_loss; with fused_loss "
              "false the loss is PyTorch's eager F.cross_entropy (give fused_loss true, or megatron_loss_ops false)");
  }
  f.loss_parallel = n.bool_or("loss_parallel", f.loss_parallel);
  if (f.loss_parallel && f.fused_loss) {
    n.at("loss_parallel")
        .fail("asks for PyTorch's loss_parallel with fused_loss; loss_parallel is the eager F.cross_entropy "
              "on vocabulary-sharded logits (give fused_loss false, or loss_parallel false)");
  }
  f.complex_rope = n.bool_or("complex_rope", f.complex_rope);
  f.fused_rope_unscaled = n.bool_or("fused_rope_unscaled", f.fused_rope_unscaled);
  f.qkv_split_copies = n.bool_or("qkv_split_copies", f.qkv_split_copies);
  f.separate_linears = n.bool_or("separate_linears", f.separate_linears);
  f.compiled = n.bool_or("compiled", f.compiled);
  f.gemm_activation = n.bool_or("gemm_activation", f.gemm_activation);
  f.flash_attention = n.bool_or("flash_attention", f.flash_attention);
  f.whole_chain = n.bool_or("whole_chain", f.whole_chain);
  f.attention_kernel = read_attention_kernel(n, f.attention_kernel);
  if (auto groups = n.find("graph_groups")) {
    for (size_t i = 0; i < groups->size(); ++i) {
      JsonNode g = groups->element(i);
      std::vector<std::string> names;
      for (size_t k = 0; k < g.size(); ++k) names.push_back(g.element(k).as_string());
      if (names.size() < 2) g.fail("must name at least two ops to fuse");
      f.graph_groups.push_back(std::move(names));
    }
  }
  return f;
}

Json fusion_to_json(const FusionPlan& f) {
  Json j{{"elementwise_epilogue", f.elementwise_epilogue},
         {"bias_dropout_residual", f.bias_dropout_residual},
         {"norm_residual", f.norm_residual},
         {"fused_softmax", f.fused_softmax},
         {"fused_norm", f.fused_norm},
         {"fused_loss", f.fused_loss},
         {"megatron_loss_ops", f.megatron_loss_ops},
         {"flash_attention", f.flash_attention}};
  if (f.attention_kernel != AttentionKernel::kFlash2) {
    j["attention_kernel"] = std::string(enum_to_name(kAttentionKernelNames, f.attention_kernel));
  }
  if (f.loss_parallel) j["loss_parallel"] = true;
  if (f.complex_rope) j["complex_rope"] = true;
  if (f.fused_rope_unscaled) j["fused_rope_unscaled"] = true;
  if (f.qkv_split_copies) j["qkv_split_copies"] = true;
  if (f.separate_linears) j["separate_linears"] = true;
  if (f.compiled) j["compiled"] = true;
  if (f.gemm_activation) j["gemm_activation"] = true;
  if (f.whole_chain) j["whole_chain"] = true;
  if (!f.graph_groups.empty()) j["graph_groups"] = f.graph_groups;
  return j;
}

// {"tower0": 0, "tower1": 1, "*": 0}: op name or prefix -> device index in the replica.
std::vector<PlacementRule> read_placement(const JsonNode& n) {
  n.require_object();
  if (n.raw().empty()) n.fail("must place at least one op (an op name, a name prefix or \"*\" -> device)");
  std::vector<PlacementRule> rules;
  for (const auto& item : n.raw().items()) {
    if (item.key().empty()) n.fail("has an empty key; name an op, a name prefix or \"*\"");
    rules.push_back({item.key(), static_cast<int>(n.at(item.key()).as_integer(0, 63))});
  }
  return rules;
}

// "stage_layers": "auto" | "even" | "balanced" | [layers of stage 0, stage 1, ...].
void read_stage_layers(const JsonNode& c, Strategy& s) {
  if (!c.is_array()) {
    s.stage_split = c.as_enum(kStageSplitNames);
    return;
  }
  if (c.size() < 1) c.fail("must list the layers of each pipeline stage (or be auto, even or balanced)");
  s.stage_split = StageSplit::kExplicit;
  for (size_t i = 0; i < c.size(); ++i) {
    s.stage_layers.push_back(static_cast<int>(c.element(i).as_integer(1, 1 << 20)));
  }
}

// Megatron-Core's recompute_modules, for selective recomputation.
void read_recompute_modules(const JsonNode& m, Strategy& s) {
  if (s.recompute != Recompute::kSelective) {
    m.fail("applies to recompute \"selective\" only (Megatron-Core's --recompute-modules); set "
           "recompute to \"selective\" or remove recompute_modules");
  }
  s.recompute_modules = read_recompute_module_list(m);
}

// Strategy::autocast_weights: torch.autocast casts fp32 parameters to a 16-bit dtype, and
// with fp32 parameters the optimizer keeps no master copy.
void check_autocast_keys(const JsonNode& n, Strategy& s) {
  if (s.dtype != DType::kBf16 && s.dtype != DType::kFp16) {
    n.at("autocast_weights")
        .fail("needs a 16-bit dtype (\"bf16\" or \"fp16\"): torch.autocast casts the fp32 "
              "parameters to it");
  }
  if (n.find("master_weights_fp32") && s.master_weights_fp32) {
    n.at("master_weights_fp32")
        .fail("conflicts with autocast_weights: the parameters are fp32 already and the optimizer "
              "updates them in place");
  }
  s.master_weights_fp32 = false;
}

}  // namespace

uint8_t read_recompute_module_list(const JsonNode& m) {
  if (!m.is_array() || m.size() < 1) m.fail("must list at least one module: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts");
  uint8_t bits = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    const JsonNode e = m.element(i);
    const uint8_t bit = e.as_enum(kRecomputeModuleNames);
    if (bits & bit) e.fail("names a module twice");
    bits |= bit;
  }
  return bits;
}

Strategy read_strategy(const JsonNode& n) {
  n.allow_keys({"tp", "pp", "dp", "cp", "cp_comm", "cp_merge", "cp_rotate", "cp_overlap", "kv_repeat", "ep", "expert_gemm", "ep_dispatch", "shard_group", "zero_stage", "zero3_reshard", "fsdp_root_gather", "sequence_parallel", "schedule", "interleave",
                "uneven_stages", "first_stage_layers", "last_stage_layers", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split", "stage_layers", "micro_batch", "global_batch", "recompute", "recompute_modules", "recompute_layers", "recompute_last_micro_batch", "fusion",
                "overlap_dp", "overlap_tp", "overlap_ep", "overlap_p2p", "overlap_p2p_interleaved", "streams", "placement", "dp_bucket", "collective", "dtype", "fp8_saved_inputs", "fp8_scaling", "fp8_amax_reduction", "tp_overlap", "async_tp_grad_reduce",
                "master_weights_fp32", "master_param_remainders", "autocast_weights", "hp_grad_accumulation", "grad_reduce_fp32", "sp_reorder_copies", "fp8_tp_all_gather", "fp8_fsdp_all_gather", "fp8_param_gather", "expert_fp8_padding", "fsdp_copies", "pp_keeps_outputs", "host_overhead", "optimizer", "optimizer_moments", "workload", "offload", "description"});
  Strategy s;
  s.tp = static_cast<int>(n.integer_or("tp", 1, 1, 1 << 20));
  s.pp = static_cast<int>(n.integer_or("pp", 1, 1, 1 << 20));
  s.dp = static_cast<int>(n.integer_or("dp", 0, 1, 1 << 24));
  s.cp = static_cast<int>(n.integer_or("cp", 1, 1, 1 << 16));
  s.cp_comm = n.enum_or("cp_comm", kCpCommNames, CpComm::kRing);
  s.cp_merge = n.enum_or("cp_merge", kCpMergeNames, CpMerge::kFused);
  s.cp_rotate = n.enum_or("cp_rotate", kCpRotateNames, CpRotate::kPass);
  if (s.cp_rotate != CpRotate::kPass && s.cp_comm != CpComm::kRing) {
    n.at("cp_rotate").fail("moves ring attention's K/V blocks (cp_comm \"ring\"); cp_comm \"" +
                           std::string(enum_to_name(kCpCommNames, s.cp_comm)) + "\" has no ring to rotate");
  }
  s.cp_overlap = n.bool_or("cp_overlap", true);
  s.kv_repeat = n.bool_or("kv_repeat", false);
  s.ep = static_cast<int>(n.integer_or("ep", 1, 1, 1 << 20));
  s.expert_gemm = n.enum_or("expert_gemm", kExpertGemmNames, ExpertGemm::kGrouped);
  s.ep_dispatch = n.enum_or("ep_dispatch", kEpDispatchNames, EpDispatch::kAllToAll);
  s.shard_group = static_cast<int>(n.integer_or("shard_group", 0, 0, 1 << 24));
  s.zero_stage = static_cast<int>(n.integer_or("zero_stage", 0, 0, 3));
  s.zero3_reshard = n.enum_or("zero3_reshard", kZero3ReshardNames, Zero3Reshard::kAuto);
  s.fsdp_root_gather = n.enum_or("fsdp_root_gather", kFsdpRootGatherNames, FsdpRootGather::kMicroBatch);
  s.sequence_parallel = n.bool_or("sequence_parallel", false);
  s.schedule = n.enum_or("schedule", kScheduleNames, ScheduleKind::k1F1B);
  s.interleave = static_cast<int>(n.integer_or("interleave", 1, 1, 1024));
  s.uneven_stages = n.bool_or("uneven_stages", false);
  s.first_stage_layers = static_cast<int>(n.integer_or("first_stage_layers", 0, 0, 1 << 20));
  s.embedding_as_layer = n.bool_or("account_for_embedding_in_pipeline_split", false);
  s.loss_as_layer = n.bool_or("account_for_loss_in_pipeline_split", false);
  s.last_stage_layers = static_cast<int>(n.integer_or("last_stage_layers", 0, 0, 1 << 20));
  if (auto c = n.find("stage_layers")) read_stage_layers(*c, s);
  s.micro_batch = static_cast<int>(n.integer_or("micro_batch", 1, 1, 1 << 24));
  s.global_batch = static_cast<int>(n.at("global_batch").as_integer(1, 1 << 30));
  s.recompute = n.enum_or("recompute", kRecomputeNames, Recompute::kNone);
  if (auto m = n.find("recompute_modules")) read_recompute_modules(*m, s);
  if (auto m = n.find("recompute_layers")) {
    s.recompute_layers = static_cast<int>(m->as_integer(0, 1 << 20));
    if (s.recompute_layers > 0 && s.recompute != Recompute::kFull) {
      m->fail("applies to recompute \"full\" only (Megatron's --recompute-method block: the first N "
              "layers of each pipeline stage recompute whole); set recompute to \"full\" or remove it");
    }
  }
  s.recompute_last_micro_batch = n.bool_or("recompute_last_micro_batch", true);
  if (auto f = n.find("fusion")) s.fusion = read_fusion(*f);
  s.overlap_dp = n.bool_or("overlap_dp", false);
  s.overlap_tp = n.bool_or("overlap_tp", false);
  s.tp_overlap = n.enum_or("tp_overlap", kTpOverlapNames, TpOverlap::kUserbuffers);
  s.async_tp_grad_reduce = n.bool_or("async_tp_grad_reduce", false);
  s.overlap_ep = n.bool_or("overlap_ep", false);
  s.overlap_p2p = n.bool_or("overlap_p2p", false);
  s.overlap_p2p_interleaved = n.bool_or("overlap_p2p_interleaved", false);
  s.streams = static_cast<int>(n.integer_or("streams", 1, 1, 64));
  if (auto p = n.find("placement")) s.placement = read_placement(*p);
  s.dp_bucket_B = n.quantity_or("dp_bucket", Dimension::kBytes, 0);
  s.collective = n.enum_or("collective", kAlgorithmNames, CollectiveAlgorithm::kAuto);
  s.dtype = n.enum_or("dtype", kDTypeNames, DType::kBf16);
  s.fp8_saved_inputs = n.bool_or("fp8_saved_inputs", true);
  s.fp8_scaling = n.enum_or("fp8_scaling", kFp8ScalingNames, Fp8Scaling::kTensorwise);
  if (s.fp8_scaling != Fp8Scaling::kTensorwise && s.dtype != DType::kFp8) {
    n.at("fp8_scaling").fail("applies to FP8 training only; set dtype to \"fp8\"");
  }
  s.fp8_amax_reduction = n.enum_or("fp8_amax_reduction", kFp8AmaxReductionNames, Fp8AmaxReduction::kStage);
  if (n.find("fp8_amax_reduction") && s.fp8_scaling != Fp8Scaling::kDelayed) {
    n.at("fp8_amax_reduction").fail("applies to Transformer Engine's delayed scaling only; set fp8_scaling to \"delayed\"");
  }
  s.master_weights_fp32 = n.bool_or("master_weights_fp32", s.dtype != DType::kFp32);
  s.master_param_remainders = n.bool_or("master_param_remainders", false);
  if (s.master_param_remainders && (!s.master_weights_fp32 || storage_dtype(s.dtype) != DType::kBf16)) {
    n.at("master_param_remainders")
        .fail("needs bf16 parameters with an fp32 master copy (dtype \"bf16\" or \"fp8\", "
              "master_weights_fp32 true): the remainders are the fp32 master's low 16 bits");
  }
  s.grad_reduce_fp32 = n.bool_or("grad_reduce_fp32", false);
  s.autocast_weights = n.bool_or("autocast_weights", false);
  if (s.autocast_weights) check_autocast_keys(n, s);
  s.hp_grad_accumulation = n.bool_or("hp_grad_accumulation", false);
  if (s.hp_grad_accumulation && s.dtype != DType::kBf16) {
    n.at("hp_grad_accumulation")
        .fail("needs dtype \"bf16\": it is DeepSpeed's BF16_Optimizer adding bf16 gradients into "
              "fp32 buffers after each micro-batch");
  }
  s.sp_reorder_copies = n.bool_or("sp_reorder_copies", false);
  s.fp8_tp_all_gather = n.bool_or("fp8_tp_all_gather", false);
  s.fp8_fsdp_all_gather = n.bool_or("fp8_fsdp_all_gather", false);
  s.fp8_param_gather = n.bool_or("fp8_param_gather", false);
  s.expert_fp8_padding = n.bool_or("expert_fp8_padding", false);
  s.fsdp_copies = n.bool_or("fsdp_copies", false);
  s.pp_keeps_outputs = n.bool_or("pp_keeps_outputs", false);
  s.host_overhead_s = n.quantity_or("host_overhead", Dimension::kTime, 0);
  if (s.host_overhead_s > kMilli) {
    n.at("host_overhead").fail("must be at most 1ms: it is the host's time to issue one kernel");
  }
  s.optimizer = n.enum_or("optimizer", kOptimizerNames, Optimizer::kAdam);
  s.optimizer_moments = n.enum_or("optimizer_moments", kMomentDtypeNames, MomentDtype::kFp32);
  s.workload = n.enum_or("workload", kWorkloadNames, Workload::kTraining);
  s.offload = n.enum_or("offload", kOffloadNames, Offload::kNone);
  return s;
}

Json to_json(const Strategy& s) {
  Json j{{"tp", s.tp}, {"pp", s.pp}, {"zero_stage", s.zero_stage},
         {"sequence_parallel", s.sequence_parallel},
         {"schedule", std::string(enum_to_name(kScheduleNames, s.schedule))},
         {"interleave", s.interleave}, {"uneven_stages", s.uneven_stages},
         {"micro_batch", s.micro_batch}, {"global_batch", s.global_batch},
         {"recompute", std::string(recompute_name(s.recompute))},
         {"fusion", fusion_to_json(s.fusion)}, {"overlap_dp", s.overlap_dp},
         {"overlap_tp", s.overlap_tp},
         {"overlap_p2p", s.overlap_p2p},
         {"collective", std::string(collective_algorithm_name(s.collective))},
         {"dtype", std::string(dtype_name(s.dtype))},
         {"master_weights_fp32", s.master_weights_fp32},
         {"grad_reduce_fp32", s.grad_reduce_fp32},
         {"optimizer", s.optimizer == Optimizer::kAdam ? "adam" : "sgd"}};
  if (s.master_param_remainders) j["master_param_remainders"] = true;
  if (!s.recompute_last_micro_batch) j["recompute_last_micro_batch"] = false;
  if (s.recompute_layers > 0) j["recompute_layers"] = s.recompute_layers;
  if (s.recompute == Recompute::kSelective && s.recompute_modules != kModuleCoreAttn) {
    Json modules = Json::array();
    for (const auto& [name, bit] : kRecomputeModuleNames) {
      if (s.recompute_modules & bit) modules.push_back(std::string(name));
    }
    j["recompute_modules"] = modules;
  }
  if (s.sp_reorder_copies) j["sp_reorder_copies"] = true;
  if (s.fp8_tp_all_gather) j["fp8_tp_all_gather"] = true;
  if (s.fp8_fsdp_all_gather) j["fp8_fsdp_all_gather"] = true;
  if (s.fp8_param_gather) j["fp8_param_gather"] = true;
  if (s.expert_fp8_padding) j["expert_fp8_padding"] = true;
  if (s.fsdp_copies) j["fsdp_copies"] = true;
  if (s.pp_keeps_outputs) j["pp_keeps_outputs"] = true;
  if (s.autocast_weights) j["autocast_weights"] = true;
  if (s.hp_grad_accumulation) j["hp_grad_accumulation"] = true;
  if (s.dp > 0) j["dp"] = s.dp;
  if (s.cp > 1) j["cp"] = s.cp;
  if (s.ep > 1) j["ep"] = s.ep;
  if (s.shard_group > 0) j["shard_group"] = s.shard_group;
  if (s.zero3_reshard != Zero3Reshard::kAuto) {
    j["zero3_reshard"] = std::string(enum_to_name(kZero3ReshardNames, s.zero3_reshard));
  }
  if (s.fsdp_root_gather != FsdpRootGather::kMicroBatch) {
    j["fsdp_root_gather"] = std::string(enum_to_name(kFsdpRootGatherNames, s.fsdp_root_gather));
  }
  if (s.overlap_ep) j["overlap_ep"] = true;
  if (s.workload != Workload::kTraining) {
    j["workload"] = std::string(enum_to_name(kWorkloadNames, s.workload));
  }
  if (s.streams > 1) j["streams"] = s.streams;
  if (s.offload != Offload::kNone) j["offload"] = std::string(enum_to_name(kOffloadNames, s.offload));
  if (!s.placement.empty()) {
    Json p = Json::object();
    for (const PlacementRule& r : s.placement) p[r.ops] = r.device;
    j["placement"] = p;
  }
  if (s.dtype == DType::kFp8) j["fp8_saved_inputs"] = s.fp8_saved_inputs;
  if (s.async_tp_grad_reduce) j["async_tp_grad_reduce"] = true;
  if (s.tp_overlap != TpOverlap::kUserbuffers) {
    j["tp_overlap"] = std::string(enum_to_name(kTpOverlapNames, s.tp_overlap));
  }
  if (s.fp8_scaling != Fp8Scaling::kTensorwise) {
    j["fp8_scaling"] = std::string(enum_to_name(kFp8ScalingNames, s.fp8_scaling));
  }
  if (s.fp8_scaling == Fp8Scaling::kDelayed && s.fp8_amax_reduction != Fp8AmaxReduction::kStage) {
    j["fp8_amax_reduction"] = std::string(enum_to_name(kFp8AmaxReductionNames, s.fp8_amax_reduction));
  }
  if (s.cp_comm != CpComm::kRing) j["cp_comm"] = std::string(enum_to_name(kCpCommNames, s.cp_comm));
  if (s.cp_merge != CpMerge::kFused) j["cp_merge"] = std::string(enum_to_name(kCpMergeNames, s.cp_merge));
  if (s.cp_rotate != CpRotate::kPass) j["cp_rotate"] = std::string(enum_to_name(kCpRotateNames, s.cp_rotate));
  if (!s.cp_overlap) j["cp_overlap"] = false;
  if (s.overlap_p2p_interleaved) j["overlap_p2p_interleaved"] = true;
  if (s.kv_repeat) j["kv_repeat"] = true;
  if (s.expert_gemm != ExpertGemm::kGrouped) {
    j["expert_gemm"] = std::string(enum_to_name(kExpertGemmNames, s.expert_gemm));
  }
  if (s.ep_dispatch != EpDispatch::kAllToAll) {
    j["ep_dispatch"] = std::string(enum_to_name(kEpDispatchNames, s.ep_dispatch));
  }
  if (s.first_stage_layers > 0) j["first_stage_layers"] = s.first_stage_layers;
  if (s.embedding_as_layer) j["account_for_embedding_in_pipeline_split"] = true;
  if (s.loss_as_layer) j["account_for_loss_in_pipeline_split"] = true;
  if (s.last_stage_layers > 0) j["last_stage_layers"] = s.last_stage_layers;
  if (s.stage_split == StageSplit::kExplicit) {
    j["stage_layers"] = s.stage_layers;
  } else if (s.stage_split != StageSplit::kAuto) {
    j["stage_layers"] = std::string(enum_to_name(kStageSplitNames, s.stage_split));
  }
  if (s.optimizer_moments != MomentDtype::kFp32) {
    j["optimizer_moments"] = std::string(enum_to_name(kMomentDtypeNames, s.optimizer_moments));
  }
  if (s.host_overhead_s > 0) j["host_overhead"] = std::to_string(s.host_overhead_s / kMicro) + "us";
  if (s.dp_bucket_B > 0) j["dp_bucket"] = std::to_string(static_cast<long long>(s.dp_bucket_B)) + "B";
  return j;
}

Json json_value_from_text(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  long long i = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (ec == std::errc() && end == text.data() + text.size()) return i;
  double d = 0;
  auto [end2, ec2] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec2 == std::errc() && end2 == text.data() + text.size()) return d;
  if (!text.empty() && (text.front() == '{' || text.front() == '[')) {
    Json parsed = Json::parse(text, nullptr, false);
    if (parsed.is_discarded()) {
      throw InputError("--set", text, "\"" + text + "\"", "is not valid JSON");
    }
    return parsed;
  }
  return text;
}

std::string stage_layers_text(const Strategy& s) {
  if (s.stage_split != StageSplit::kExplicit) return std::string(enum_to_name(kStageSplitNames, s.stage_split));
  std::string text;
  for (size_t i = 0; i < s.stage_layers.size(); ++i) text += (i ? "/" : "") + std::to_string(s.stage_layers[i]);
  return text;
}

}  // namespace stratasim
