#include "strategies/search/derived_space.h"

#include <algorithm>

namespace stratasim {
namespace {

AxisValues axis(Axis a, std::vector<int> values) { return AxisValues{a, std::move(values), {}}; }

std::vector<int> powers_of_two(int limit, auto&& keep) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2) {
    if (keep(v)) out.push_back(v);
  }
  return out;
}

int enum_int(auto e) { return static_cast<int>(e); }

// The 16-bit dtypes the device runs, and fp8 when it has an fp8 peak (transformers only: fp8
// training applies to linear layers).
std::vector<int> dtypes(const DeviceSpec& d, bool fp8) {
  std::vector<int> out;
  const DType wide = d.peak_flops[enum_int(DType::kBf16)] > 0 ? DType::kBf16 : DType::kFp16;
  if (d.peak_flops[enum_int(wide)] > 0) out.push_back(enum_int(wide));
  if (fp8 && d.peak_flops[enum_int(DType::kFp8)] > 0) out.push_back(enum_int(DType::kFp8));
  return out;
}

// Fusion axis values are indices of the presets none, epilogues, megatron, all, chains.
constexpr int kFusionMegatron = 2, kFusionAll = 3, kFusionChains = 4;

void add(SearchSpace& space, AxisValues a) {
  if (a.values.size() > 1) space.axes.push_back(std::move(a));
}

// Whether some op's output feeds two ops: the graph has branches that streams could overlap.
bool has_branches(const OpGraphSpec& g) {
  std::vector<int> consumers(g.ops.size(), 0);
  int from_input = 0;
  for (const GraphOp& op : g.ops) {
    if (op.inputs.empty()) ++from_input;
    for (int in : op.inputs) ++consumers[in];
  }
  return from_input > 1 || std::any_of(consumers.begin(), consumers.end(), [](int c) { return c > 1; });
}

// Operator graphs (CNNs, RNNs, MLPs) train with large per-device batches: micro-batches are
// the powers of two up to the samples one replica sees per iteration (global batch / devices),
// the scenario's own micro-batch among them.
std::vector<int> graph_micro_batches(const HardwareModel& hw, const Strategy& base) {
  const int per_replica = std::max(1, base.global_batch / std::max(1, hw.num_devices));
  std::vector<int> out = powers_of_two(per_replica, [](int) { return true; });
  if (std::find(out.begin(), out.end(), base.micro_batch) == out.end() && base.micro_batch <= per_replica) {
    out.push_back(base.micro_batch);
    std::sort(out.begin(), out.end());
  }
  return out;
}

SearchSpace graph_space(const OpGraphSpec& graph, const HardwareModel& hw, const Strategy& base) {
  SearchSpace space;
  if (has_branches(graph)) add(space, axis(Axis::kStreams, {1, 2, 4}));
  add(space, axis(Axis::kMicroBatch, graph_micro_batches(hw, base)));
  // Pipeline stages over the op list (GPipe, torchgpipe): up to 16, each stage an op at least,
  // with GPipe's or 1F1B's order and stage-input checkpointing or none (memory for time).
  const int ops = static_cast<int>(graph.ops.size());
  // Inference streams forward only: no schedule but GPipe's order, nothing to recompute, no
  // gradients to sync or optimizer states to shard.
  const bool training = base.workload == Workload::kTraining;
  if (base.placement.empty()) {
    add(space, axis(Axis::kPp, powers_of_two(std::min({std::max(1, hw.num_devices), ops, 16}),
                                             [](int) { return true; })));
    if (hw.num_devices > 1 && ops > 1 && training) {
      // GPipe's and 1F1B's orders, 1F1B interleaved over 2 chunks a rank, zero-bubble H1.
      add(space, axis(Axis::kSchedule, {enum_int(ScheduleKind::kGPipe), enum_int(ScheduleKind::k1F1B),
                                        enum_int(ScheduleKind::kInterleaved1F1B),
                                        enum_int(ScheduleKind::kZeroBubbleH1)}));
      add(space, axis(Axis::kInterleave, {1, 2}));
      add(space, axis(Axis::kRecompute, {enum_int(Recompute::kNone), enum_int(Recompute::kFull)}));
    }
  }
  // A graph with rows (images, fields): their spatial split over up to 16 devices (the halo of
  // every op must fit the rows a device keeps; lower() refuses the rest).
  const std::vector<int> rows = spatial_heights(graph);
  if (base.placement.empty() && hw.num_devices > 1 && std::any_of(rows.begin(), rows.end(), [](int h) { return h > 0; })) {
    add(space, axis(Axis::kCp, powers_of_two(std::min(hw.num_devices, 16), [](int) { return true; })));
  }
  // Filters over a node's devices (channel parallelism, channel_split.h): 1, 2, 4 -- wider
  // splits gather every layer's input over more devices and rarely pay on a CNN.
  const bool filters = std::any_of(graph.ops.begin(), graph.ops.end(), holds_filters);
  if (base.placement.empty() && filters && hw.node.devices > 1 && hw.num_devices > 1) {
    add(space, axis(Axis::kTp, powers_of_two(std::min({hw.node.devices, hw.num_devices, 4}),
                                             [](int) { return true; })));
  }
  if (training) {
    add(space, axis(Axis::kZeroStage, {0, 1, 2, 3}));
    add(space, axis(Axis::kOverlapDp, {0, 1}));
  }
  add(space, axis(Axis::kFusion, {0, kFusionAll, kFusionChains}));
  add(space, axis(Axis::kDtype, dtypes(hw.device, false)));
  return space;
}

}  // namespace

SearchSpace derive_search_space(const ModelSpec& model, const HardwareModel& hw,
                                const Strategy& base) {
  if (model.family == ModelFamily::kOpGraph) return graph_space(model.graph, hw, base);
  const TransformerSpec& t = model.transformer;
  const int devices = std::max(1, hw.num_devices);
  const int node = std::max(1, std::min(hw.node.devices, devices));
  SearchSpace space;
  add(space, axis(Axis::kTp, powers_of_two(node, [&](int v) {
                    return t.heads % v == 0 && (t.kv_heads_or_heads() % v == 0 || v % t.kv_heads_or_heads() == 0);
                  })));
  add(space, axis(Axis::kPp, powers_of_two(std::min({t.layers, devices, 64}), [&](int) { return true; })));
  const bool moe = t.moe.enabled();
  if (t.seq_len >= 32768) {
    add(space, axis(Axis::kCp, powers_of_two(std::min(devices, 32), [&](int v) { return t.seq_len % (2 * v) == 0; })));
    // Ring attention hides its exchange behind the attention; all-gather (Llama 3) exposes
    // it but skips the per-step merges. Ulysses needs heads divisible by tp cp: left to the
    // scenario. At cp 1 the two points are one.
    add(space, axis(Axis::kCpComm, {enum_int(CpComm::kRing), enum_int(CpComm::kAllGather)}));
  }
  if (moe) {  // ep 1, then from 4 (2 spreads too few experts to pay its all-to-alls)
    add(space, axis(Axis::kEp, powers_of_two(std::min({t.moe.experts, devices, 64}), [&](int v) {
                      return t.moe.experts % v == 0 && v != 2;
                    })));
    add(space, axis(Axis::kOverlapEp, {0, 1}));
    add(space, axis(Axis::kEpDispatch, {enum_int(EpDispatch::kAllToAll), enum_int(EpDispatch::kDeepEP)}));
  }
  add(space, axis(Axis::kMicroBatch, {1, 2, 4}));
  add(space, axis(Axis::kSchedule, {enum_int(ScheduleKind::k1F1B), enum_int(ScheduleKind::kInterleaved1F1B)}));
  add(space, axis(Axis::kInterleave, {1, 2}));
  add(space, axis(Axis::kRecompute, {enum_int(Recompute::kNone), enum_int(Recompute::kSelective),
                                     enum_int(Recompute::kFull)}));
  // With full recomputation, only the first 1, 2 or 4 layers of each stage (Megatron's block
  // method: the memory it frees for the time it costs, near the memory limit); 0 = all.
  add(space, axis(Axis::kRecomputeLayers, {0, 1, 2, 4}));
  add(space, axis(Axis::kZeroStage, {0, 1, 2, 3}));
  add(space, axis(Axis::kSequenceParallel, {0, 1}));
  add(space, axis(Axis::kOverlapDp, {0, 1}));
  // MoE spaces are larger by ep and its overlap: TP overlap and fusion stay as the scenario
  // sets them there.
  if (!moe) add(space, axis(Axis::kOverlapTp, {0, 1}));
  if (!moe) add(space, axis(Axis::kFusion, {kFusionMegatron, kFusionAll}));
  add(space, axis(Axis::kDtype, dtypes(hw.device, true)));
  // A mixed cluster: layers balanced by the groups' speed, or split evenly.
  if (hw.mixed()) {
    add(space, axis(Axis::kStageLayers, {enum_int(StageSplit::kBalanced), enum_int(StageSplit::kEven)}));
  }
  return space;
}

}  // namespace stratasim
