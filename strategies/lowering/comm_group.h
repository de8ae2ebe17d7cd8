// Which devices a collective spans. Shared by the plan and the iteration program.
#pragma once

#include <cstdint>
#include <string_view>

namespace stratasim {

// kData: the ranks holding the same weights of a stage (data x context parallel).
// kPipelineEmbedding: the first and the last pipeline stage (same tp and dp index), which
// both hold the tied word embeddings. kContext: the cp ranks sharing one sequence. kExpert: the
// ep ranks that exchange tokens for their experts; kExpertData: the ranks holding the same
// experts (tp*cp*dp / ep), over which expert gradients are reduced and sharded. kShard: the
// ranks one ZeRO/FSDP shard spans when it is smaller than the data-parallel group (HSDP);
// kReplica: the ranks holding the same shard in the other shard groups. kPipelineMirror:
// DualPipe's pipeline ranks r and pp - 1 - r (same tp and dp index), which hold the same two
// stages (one per direction) and sum their gradients. kPlacement: the devices of one replica of
// an operator graph placed op by op (Strategy::placement), which send each other tensors.
// kStage: every rank of a pipeline stage (tp x cp x dp, consecutive in Megatron's rank order),
// over which Transformer Engine's delayed scaling reduces its amaxes (Strategy::
// fp8_amax_reduction).
enum class GroupKind : uint8_t {
  kTensor, kData, kPipelineEmbedding, kContext, kExpert, kExpertData, kShard, kReplica,
  kPipelineMirror, kPlacement, kStage
};
inline constexpr int kGroupKinds = 11;

// The group's name in reports and exported graphs.
inline std::string_view group_name(GroupKind g) {
  switch (g) {
    case GroupKind::kTensor: return "tensor";
    case GroupKind::kData: return "data";
    case GroupKind::kPipelineEmbedding: return "pipeline_embedding";
    case GroupKind::kContext: return "context";
    case GroupKind::kExpert: return "expert";
    case GroupKind::kExpertData: return "expert_data";
    case GroupKind::kShard: return "shard";
    case GroupKind::kReplica: return "replica";
    case GroupKind::kPipelineMirror: return "pipeline_mirror";
    case GroupKind::kPlacement: return "placement";
    case GroupKind::kStage: return "stage";
  }
  return "?";
}

// `size` ranks, `ranks_per_node` of them in each node.
struct CommGroup {
  GroupKind kind = GroupKind::kTensor;
  int size = 1;
  int ranks_per_node = 1;  // group members sharing one node's NVLink domain
  int nodes() const { return (size + ranks_per_node - 1) / ranks_per_node; }
};

}  // namespace stratasim
