// Prediction: what every engine returns for one (model, strategy, hardware). The analytical
// and the SimGrid engine fill the same fields; the report, JSON, CSV and GUI read them.
#pragma once

#include <string>
#include <vector>

#include "strategies/lowering/plan.h"

namespace stratasim {

struct MemoryBreakdown {
  double weights_B = 0;      // incl. stashed versions (PipeDream) and ZeRO-3 gathered layers
  double gradients_B = 0;
  double optimizer_B = 0;
  double activations_B = 0;  // saved for backward, all in-flight micro-batches
  double transient_B = 0;    // rematerialised by recomputation, largest live working set
  double buffers_B = 0;      // communication buffers (p2p, gradient buckets)
  double workspace_B = 0;    // the caching allocator's slack and library workspaces
  // Reserved by the caching allocator in holes its later tensors do not fit (the eager loss's
  // bf16 logits under its fp32 gradients): part of reserved(), not of allocated().
  double fragmentation_B = 0;
  double context_B = 0;      // the CUDA context: outside the framework's allocator
  // Held in host memory for this device (optimizer offload: its optimizer-state shard and fp32
  // gradient shard); not part of total(), which is the device's.
  double host_B = 0;
  // Three views of one device's memory, as its users read them:
  // allocated() is what the framework's tensors hold (torch.cuda.max_memory_allocated),
  // reserved() adds what its caching allocator holds beyond them (torch.cuda.max_memory_reserved),
  // total() adds the CUDA context: the process's use as nvidia-smi shows it, which must fit.
  double allocated() const {
    return weights_B + gradients_B + optimizer_B + activations_B + transient_B + buffers_B;
  }
  double reserved() const { return allocated() + workspace_B + fragmentation_B; }
  double total() const { return reserved() + context_B; }
};

// Splits a device's reserved_memory into the allocator's share and the CUDA context.
void set_runtime_reserve(MemoryBreakdown& m, double reserved_memory_B, double cuda_context_B);

enum class CommCategory {
  kTensorParallel, kDataParallel, kZero, kPipelineP2P, kEmbeddingSync, kContextParallel,
  kExpertParallel, kPlacement,
  kFp8Amax  // Transformer Engine's delayed-scaling amax reductions (IterOpKind::kFp8AmaxReduce)
};
std::string_view comm_category_name(CommCategory c);

struct CommStat {
  CommCategory category;
  const char* what = "";    // static text: "tp collectives", "dp gradient sync", ...
  int group_size = 0;       // ranks in the group (0 when not a group collective)
  int group_nodes = 0;      // nodes the group spans
  std::string description() const;  // "tp collectives over 8 ranks (1 node)"
  double bytes = 0;         // per device per iteration
  double total_s = 0;       // time the communication takes on the busiest device
  double exposed_s = 0;     // part of it not hidden behind computation
};

// kWeightGrad: the W pass (weight gradients) of a schedule that splits the backward.
enum class EventKind { kForward, kBackward, kRecompute, kComm, kIdle, kOptimizer, kWeightGrad };
std::string_view event_kind_name(EventKind k);

struct TimelineEvent {
  int device = 0;  // pipeline rank (all tp/dp peers of a rank behave alike)
  EventKind kind = EventKind::kForward;
  int micro_batch = -1;
  int chunk = 0;
  double start_s = 0;
  double end_s = 0;
  std::string name;
  double bytes = 0;  // communication events: the bytes this rank sends in them (0: unknown)
};

struct Prediction {
  std::string engine;  // "analytical" or "simgrid"
  double iteration_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double model_flops = 0;     // per iteration, whole job (no recomputation)
  double hardware_flops = 0;  // per iteration, whole job (with recomputation)
  double model_flops_per_device_s = 0;     // model FLOP/s per device
  double hardware_flops_per_device_s = 0;  // hardware FLOP/s per device
  double mfu = 0;  // model FLOP/s / peak
  double hfu = 0;  // hardware FLOP/s / peak

  double compute_s = 0;         // busiest device's compute time (incl. recompute)
  double recompute_s = 0;       // of which recomputation
  double bubble_s = 0;          // pipeline idle time, from the schedule
  double bubble_fraction = 0;   // bubble_s / pipeline makespan
  double uniform_bubble_fraction = 0;  // the schedule's bubble if all stages were equal, no p2p
  double pipeline_s = 0;        // forward/backward makespan of all micro-batches
  double optimizer_s = 0;
  // Inference: one micro-batch's time through the empty pipeline (every stage's forward and
  // the transfers between them); 0 for training.
  double latency_s = 0;
  double forward_s = 0;         // per micro-batch, busiest virtual stage
  double backward_s = 0;        // per micro-batch, busiest virtual stage (incl. recompute)

  std::vector<CommStat> comms;
  double comm_total_s = 0;
  double comm_exposed_s = 0;

  std::vector<MemoryBreakdown> rank_memory;  // per pipeline rank
  int peak_rank = 0;
  double peak_memory_B = 0;     // the peak rank's total() (nvidia-smi's view)
  double peak_reserved_B = 0;   // the largest reserved() over ranks (the allocator's view)
  double peak_allocated_B = 0;  // the largest allocated() over ranks (the tensors')
  double capacity_B = 0;
  bool fits = true;

  std::vector<TimelineEvent> timeline;  // filled when asked for
  std::vector<std::string> notes;
};

}  // namespace stratasim
