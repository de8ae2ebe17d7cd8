#include <cstdio>
#include <string>

#include "sim/core/text.h"
#include "sim/core/units.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/mixed_cluster.h"

namespace stratasim {
namespace {

std::string op_name(const Plan& plan, const LayerGraph& g, int i) {
  const LayerOp& op = g.ops[i];
  if (op.source_op >= 0) return plan.model.graph.ops[op.source_op].name;
  return std::string(op.name);
}

std::string kernel_name(const Plan& plan, const LayerGraph& g, const Kernel& k) {
  std::string name;
  for (int i = k.first_op; i <= k.last_op; ++i) name += (name.empty() ? "" : "+") + op_name(plan, g, i);
  if (name.size() > 44) name = name.substr(0, 41) + "...";
  return name;
}

std::string_view class_name(OpClass c) {
  switch (c) {
    case OpClass::kMatmul: return "matmul";
    case OpClass::kMemoryBound: return "memory";
    case OpClass::kFlashAttention: return "flash";
    case OpClass::kCollective: return "comm";
  }
  return "?";
}

std::string kernels_text(const Plan& plan, const Block& b, const std::vector<Kernel>& ks) {
  std::string out = format_text("    %-3s %-10s %-44s %10s %12s %s\n", "#", "phase", "kernel", "GFLOP",
                         "bytes", "class");
  int i = 0;
  for (const Kernel& k : ks) {
    const std::string name = kernel_name(plan, b.graph, k);
    if (k.cls == OpClass::kCollective) {
      out += format_text("    %-3d %-10s %-44s %10s %12s %s %s over %s(%d)\n", i++,
                  std::string(phase_name(k.phase)).c_str(), name.c_str(), "-",
                  format_bytes(k.comm_bytes).c_str(), "comm",
                  std::string(comm_kind_name(k.comm)).c_str(),
                  std::string(group_name(k.group)).c_str(), plan.iteration.group(k.group).size);
      continue;
    }
    const std::string on = plan.mp > 1 ? format_text(" on device %d", k.device) : std::string();
    out += format_text("    %-3d %-10s %-44s %10.2f %12s %s%s%s\n", i++,
                std::string(phase_name(k.phase)).c_str(), name.c_str(),
                (k.matmul_flops + k.other_flops) / kGiga, format_bytes(k.bytes).c_str(),
                std::string(class_name(k.cls)).c_str(),
                k.fused_ops > 1 ? format_text(" (%d ops fused)", k.fused_ops).c_str() : "", on.c_str());
  }
  return out;
}

std::string block_text(const Plan& plan, const char* title, const Block& b) {
  std::string out = format_text("  %s: %zu forward kernels, %zu backward kernels, saved activations "
                         "%s per micro-batch, params/device %s\n",
                         title, b.forward.size(), b.backward.size(),
                         format_bytes(b.saved_activation_B).c_str(), format_count(b.params).c_str());
  out += "   forward:\n" + kernels_text(plan, b, b.forward);
  out += "   backward (recomputation first):\n" + kernels_text(plan, b, b.backward);
  return out;
}

}  // namespace

std::string explain(const Plan& plan) {
  const Strategy& s = plan.strategy;
  std::string out = format_text("plan: %s on %s x%d\n", plan.model.name.c_str(),
                         plan.hardware.name.c_str(), plan.hardware.num_devices);
  out += format_text("  tp=%d pp=%d dp=%d cp=%d v=%d zero=%d%s sp=%s | schedule %s, %d micro-batches of %d | "
              "recompute %s | fusion %s\n",
              plan.tp, plan.pp, plan.data_parallel(), plan.cp, plan.chunks, s.zero_stage,
              plan.zero3_resident ? " (gathered per iteration)" : "",
              s.sequence_parallel ? "on" : "off", std::string(schedule_name(s.schedule)).c_str(),
              plan.micro_batches, s.micro_batch, recompute_label(s).c_str(),
              describe_fusion(s.fusion).c_str());
  out += format_text("  groups: tp %d ranks (%d per node) | cp %d ranks (%d per node) | gradients "
              "over dp x cp = %d ranks (%d per node, %d nodes) | p2p message %s\n",
              plan.tp_group.size, plan.tp_group.ranks_per_node, plan.cp_group.size,
              plan.cp_group.ranks_per_node, plan.dp_group.size,
              plan.dp_group.ranks_per_node, plan.dp_group.nodes(),
              format_bytes(plan.p2p_bytes).c_str());
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const VirtualStage& st = plan.stages[i];
    // A mixed cluster: the group (and device) the stage's rank runs on.
    const std::string on =
        plan.hardware.mixed()
            ? format_text(" on %s", plan.hardware.groups[pipeline_rank_group(plan, st.rank)].device.name.c_str())
            : "";
    // An operator graph's stage holds a range of its ops (st.ops), a transformer's of layers.
    const int units = st.block >= 0 ? st.ops : st.layers;
    const std::string range = units > 0 ? format_text("%s %d-%d", st.block >= 0 ? "ops" : "layers", st.first_layer,
                                                      st.first_layer + units - 1)
                                        : std::string("no layers");
    const int mtp = plan.model.family == ModelFamily::kOpGraph ? 0 : plan.model.transformer.mtp_layers;
    const std::string head = !st.has_head ? std::string()
                             : mtp > 0    ? format_text(" + head + %d multi-token prediction depth%s", mtp, mtp > 1 ? "s" : "")
                                          : std::string(" + head");
    out += format_text("  stage %zu (rank %d, chunk %d%s): %s%s%s | params/device %s | "
                "activations %s per micro-batch\n",
                i, st.rank, st.chunk, on.c_str(), range.c_str(),
                st.has_embedding ? " + embedding" : "", head.c_str(),
                format_count(st.params).c_str(), format_bytes(st.activation_B).c_str());
  }
  for (size_t d = 0; d < plan.placed.size(); ++d) {
    const PlacedDevice& p = plan.placed[d];
    out += format_text("  placement device %zu of each replica: %d ops | params %s | activations %s per "
                       "micro-batch\n",
                       d, p.ops, format_count(p.params).c_str(),
                       format_bytes(p.activation_B * plan.block_repeat).c_str());
  }
  const bool graph = plan.model.family == ModelFamily::kOpGraph;
  out += block_text(plan, graph ? "op graph block" : "transformer layer", *plan.layer);
  if (plan.dense_layer) out += block_text(plan, "dense transformer layer (the first layers)", *plan.dense_layer);
  if (plan.recomputed_layer) {
    out += block_text(plan, "recomputed transformer layer (the first recompute_layers of each stage)",
                      *plan.recomputed_layer);
  }
  if (!graph) {
    out += block_text(plan, "embedding", *plan.embedding);
    out += block_text(plan, "head", *plan.head);
  }
  return out;
}

}  // namespace stratasim
