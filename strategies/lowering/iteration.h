// The iteration as data: the last lowering pass. Every operation of one training iteration
// beyond the blocks' kernels — the compute of a virtual stage for one micro-batch, ZeRO
// gathers and reduce-scatters, pipeline sends, data-parallel gradient buckets, the parameter
// gather, the tied-embedding all-reduce and the optimizer step — as ops with the stream they
// occupy, the group they span, their bytes and their dependencies. Both engines replay these
// ops; no engine decides again which collectives a ZeRO stage implies, how many bytes the
// embedding sync moves or which sends block. Costs are the engines' business: an op carries
// work (bytes, FLOPs), never a duration.
//
// Compact by construction: per virtual stage, the op sequence of one micro-batch's forward
// and of its backward (`StepProgram`); per pipeline rank, the ops after its last backward
// (`tail`). The schedule's order (make_schedule) expands them. One pipeline rank stands for
// its tp x dp devices: they run the same ops on the same sizes (tensor-parallel shards are
// equal by the divisibility checks; data-parallel replicas differ only in their data).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "strategies/lowering/comm_group.h"
#include "strategies/lowering/layer_graph.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

struct Plan;

enum class IterOpKind : uint8_t {
  kForward,            // compute: the virtual stage's forward kernels for one micro-batch
  kRecompute,          // compute: the recomputed forward before the backward
  kBackward,           // compute: the backward kernels (without recomputation; without the
                       // weight gradients when the schedule splits the backward)
  kWeightGradient,     // compute: the weight gradients (W) of a schedule that splits them off
  kZeroGather,         // ZeRO-3: all-gather of the stage's weight shards, one per layer
  kZeroReduceScatter,  // ZeRO-2/3: reduce-scatter of the stage's gradients, one per layer
  kSendActivation,     // to the next virtual stage
  kSendGradient,       // to the previous virtual stage
  kGradientReduce,     // data-parallel gradient sync in buckets (ZeRO 0: all-reduce, 1: reduce-scatter)
  kParameterGather,    // ZeRO-1/2: all-gather of the updated weight shards
  kEmbeddingSync,      // tied word embeddings: all-reduce of the gradient, first and last stage
  kOptimizerStep,      // compute: reads and writes every optimizer state of the device once
  // Optimizer offload (Strategy::offload), in place of kOptimizerStep: the gradient shard to
  // host memory over PCIe, the optimizer step on the CPU (one pass over the host's states),
  // the updated 16-bit weight shard back.
  kOffloadGradients,
  kHostOptimizerStep,
  kUploadParameters,
  // compute: Transformer Engine's FP8 recipes cast the rank's linear-layer weights to fp8 and
  // fp8-transposed once per iteration (the first micro-batch's forward; is_first_microbatch
  // keeps the casts for the others); `bytes` the pass moves.
  kFp8WeightCast,
  // Transformer Engine's delayed scaling (Strategy::fp8_amax_reduction): at the end of a
  // chunk's forward and of its backward, one all-reduce (MAX) of the rank's amaxes over the
  // stage's ranks (or its tensor-parallel ones), which the compute stream waits for; `bytes`
  // the amax buffer. On the comm stream after the compute; what follows waits for it.
  kFp8AmaxReduce,
};
std::string_view iter_op_kind_name(IterOpKind k);

// kHost: the host side of optimizer offload (PCIe copies and the CPU's optimizer step).
enum class Stream : uint8_t { kCompute, kComm, kHost };
std::string_view stream_name(Stream s);

inline constexpr int kMaxIterDeps = 3;

struct IterOp {
  IterOpKind kind = IterOpKind::kForward;
  Stream stream = Stream::kCompute;
  int vstage = -1;   // virtual stage (compute, sends, ZeRO); -1 for the tail
  // Collectives: which group, what kind, which algorithm (kAuto: the engine's choice for the
  // message size), and `repeats` equal collectives of bytes / repeats back to back.
  GroupKind group = GroupKind::kTensor;
  CommKind comm = CommKind::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  int repeats = 1;
  double bytes = 0;  // collective buffer per rank (all of its repeats) | message | memory traffic
  double flops = 0;  // compute ops: model FLOPs of the step (per device)
  // Sends: the sender waits until the message has arrived (Megatron's default p2p).
  bool blocking = true;
  // Gradient buckets: bucket k of `repeats` becomes ready after (k + 1) / repeats of the
  // rank's last backward (DDP's bucketed all-reduce overlapped with the backward); otherwise
  // every bucket waits for that backward's end.
  bool overlaps_last_backward = false;
  // Ops of the same sequence this op waits for, besides the previous op on its stream.
  std::array<int8_t, kMaxIterDeps> deps{-1, -1, -1};
};

inline bool is_send(const IterOp& op) {
  return op.kind == IterOpKind::kSendActivation || op.kind == IterOpKind::kSendGradient;
}

// The ops of one step (a virtual stage's forward or backward of one micro-batch), in an order
// that respects their dependencies. Ops on one stream run one after another in this order.
// The step is over when every op but a non-blocking send is over; a send's receiver waits
// for the message.
struct StepProgram {
  std::vector<IterOp> ops;
};

// `weight`: the W step of a schedule that splits the backward (its weight gradients, then the
// ZeRO-2/3 reduce-scatter of them); empty otherwise.
struct StageProgram {
  StepProgram forward, backward, weight;
};

struct IterationProgram {
  std::vector<StageProgram> stages;           // per virtual stage
  std::vector<std::vector<IterOp>> tail;      // per pipeline rank: after its last backward, in order
  std::vector<double> rank_params;            // per pipeline rank: parameters on one device
  // Groups of the collectives, by GroupKind.
  CommGroup group(GroupKind k) const { return groups[static_cast<int>(k)]; }
  std::array<CommGroup, kGroupKinds> groups{};
};

// The pass: reads the plan's stages, groups and state bytes, writes plan.iteration.
void lower_iteration(Plan& plan);

}  // namespace stratasim
