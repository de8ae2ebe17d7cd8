#pragma once

#include <array>

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

// The JSON names of the strategy enums (the first name of a value is the one written back).
inline constexpr std::array<EnumName<ScheduleKind>, 10> kScheduleNames = {{
    {"gpipe", ScheduleKind::kGPipe}, {"1f1b", ScheduleKind::k1F1B},
    {"pipedream_flush", ScheduleKind::k1F1B}, {"interleaved", ScheduleKind::kInterleaved1F1B},
    {"pipedream_async", ScheduleKind::kPipeDreamAsync},
    {"all_forward_all_backward", ScheduleKind::kGPipe}, {"zb_h1", ScheduleKind::kZeroBubbleH1},
    {"zb_h2", ScheduleKind::kZeroBubbleH2}, {"dualpipe", ScheduleKind::kDualPipe},
    {"zb_v", ScheduleKind::kZeroBubbleV}}};
inline constexpr std::array<EnumName<Recompute>, 4> kRecomputeNames = {{
    {"none", Recompute::kNone}, {"selective", Recompute::kSelective}, {"full", Recompute::kFull},
    {"op_selective", Recompute::kOpSelective}}};
// Megatron-Core's --recompute-modules names, in its order.
inline constexpr std::array<EnumName<RecomputeModule>, 7> kRecomputeModuleNames = {{
    {"core_attn", kModuleCoreAttn}, {"moe_act", kModuleMoeAct}, {"layernorm", kModuleLayernorm},
    {"mla_up_proj", kModuleMlaUpProj}, {"mlp", kModuleMlp}, {"moe", kModuleMoe},
    {"shared_experts", kModuleSharedExperts}}};
inline constexpr std::array<EnumName<CollectiveAlgorithm>, 4> kAlgorithmNames = {{
    {"auto", CollectiveAlgorithm::kAuto}, {"ring", CollectiveAlgorithm::kRing},
    {"tree", CollectiveAlgorithm::kTree}, {"hierarchical", CollectiveAlgorithm::kHierarchical}}};
inline constexpr std::array<EnumName<CpComm>, 6> kCpCommNames = {{
    {"ring", CpComm::kRing}, {"a2a", CpComm::kAllToAll}, {"all_gather", CpComm::kAllGather},
    {"p2p", CpComm::kRing}, {"ulysses", CpComm::kAllToAll}, {"allgather", CpComm::kAllGather}}};
inline constexpr std::array<EnumName<AttentionKernel>, 5> kAttentionKernelNames = {{
    {"flash2", AttentionKernel::kFlash2}, {"flash3", AttentionKernel::kFlash3},
    {"cudnn", AttentionKernel::kCudnn}, {"flash1", AttentionKernel::kFlash1},
    {"flash_triton", AttentionKernel::kFlashTriton}}};
inline constexpr std::array<EnumName<CpMerge>, 2> kCpMergeNames = {{
    {"fused", CpMerge::kFused}, {"eager_fp32", CpMerge::kEagerFp32}}};
inline constexpr std::array<EnumName<CpRotate>, 4> kCpRotateNames = {{
    {"pass", CpRotate::kPass}, {"all_gather", CpRotate::kAllGather},
    {"alltoall", CpRotate::kPass}, {"allgather", CpRotate::kAllGather}}};
inline constexpr std::array<EnumName<ExpertGemm>, 2> kExpertGemmNames = {{
    {"grouped", ExpertGemm::kGrouped}, {"multi_stream", ExpertGemm::kMultiStream}}};
// "hybridep": NVIDIA's HybridEP (Megatron-Core's flex dispatcher backend), DeepEP's
// node-deduplicated RDMA send and NVLink forward after an all-gather of the routing maps.
inline constexpr std::array<EnumName<EpDispatch>, 3> kEpDispatchNames = {{
    {"alltoall", EpDispatch::kAllToAll}, {"deepep", EpDispatch::kDeepEP},
    {"hybridep", EpDispatch::kHybridEP}}};
inline constexpr std::array<EnumName<Zero3Reshard>, 3> kZero3ReshardNames = {{
    {"auto", Zero3Reshard::kAuto}, {"per_micro_batch", Zero3Reshard::kPerMicroBatch},
    {"per_iteration", Zero3Reshard::kPerIteration}}};
inline constexpr std::array<EnumName<FsdpRootGather>, 2> kFsdpRootGatherNames = {{
    {"micro_batch", FsdpRootGather::kMicroBatch}, {"iteration", FsdpRootGather::kIteration}}};
inline constexpr std::array<EnumName<StageSplit>, 3> kStageSplitNames = {{
    {"auto", StageSplit::kAuto}, {"even", StageSplit::kEven}, {"balanced", StageSplit::kBalanced}}};
inline constexpr std::array<EnumName<Offload>, 2> kOffloadNames = {{
    {"none", Offload::kNone}, {"optimizer", Offload::kOptimizer}}};
inline constexpr std::array<EnumName<Workload>, 2> kWorkloadNames = {{
    {"training", Workload::kTraining}, {"inference", Workload::kInference}}};
inline constexpr std::array<EnumName<DType>, 5> kDTypeNames = {{
    {"fp32", DType::kFp32}, {"tf32", DType::kTf32}, {"bf16", DType::kBf16},
    {"fp16", DType::kFp16}, {"fp8", DType::kFp8}}};
inline constexpr std::array<EnumName<TpOverlap>, 2> kTpOverlapNames = {{
    {"userbuffers", TpOverlap::kUserbuffers}, {"micro_pipeline", TpOverlap::kMicroPipeline}}};
inline constexpr std::array<EnumName<Fp8Scaling>, 4> kFp8ScalingNames = {{
    {"tensorwise", Fp8Scaling::kTensorwise}, {"rowwise", Fp8Scaling::kRowwise},
    {"delayed", Fp8Scaling::kDelayed}, {"current", Fp8Scaling::kCurrent}}};
inline constexpr std::array<EnumName<Fp8AmaxReduction>, 3> kFp8AmaxReductionNames = {{
    {"stage", Fp8AmaxReduction::kStage}, {"tensor", Fp8AmaxReduction::kTensor},
    {"none", Fp8AmaxReduction::kNone}}};
inline constexpr std::array<EnumName<Optimizer>, 2> kOptimizerNames = {{
    {"adam", Optimizer::kAdam}, {"sgd", Optimizer::kSgd}}};
inline constexpr std::array<EnumName<MomentDtype>, 2> kMomentDtypeNames = {{
    {"fp32", MomentDtype::kFp32}, {"bf16", MomentDtype::kBf16}}};

Strategy read_strategy(const JsonNode& node);
// A list of Megatron-Core module names (recompute_modules) as RecomputeModule bits.
uint8_t read_recompute_module_list(const JsonNode& list);
Json to_json(const Strategy& s);

// For "--set strategy.tp=4" style overrides: the JSON value of one text ("4" -> 4,
// "true" -> true, "interleaved" -> "interleaved").
Json json_value_from_text(const std::string& text);

// How the strategy splits the layers over its stages: "auto", "even", "balanced" or the
// explicit list "7/7/13/13" (tables and CSV).
std::string stage_layers_text(const Strategy& s);

}  // namespace stratasim
