// Per-virtual-stage forward/backward durations of one micro-batch, and the communication
// that happens once per micro-batch (tensor parallel inside the blocks, ZeRO gathers).
#pragma once

#include <vector>

#include "sim/cost/block_cost.h"
#include "strategies/pipeline/schedule_timing.h"

namespace stratasim {

struct StageCost {
  // Forward and backward of one micro-batch with their exposed ZeRO collectives (without the
  // point-to-point transfers); the backward includes recomputation.
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  // The blocks' kernels alone; with a split backward, compute_backward_s is B (with
  // recomputation) and compute_weight_s W.
  double compute_forward_s = 0, compute_backward_s = 0, compute_weight_s = 0;
  double weight_s = 0;       // W inside the backward (BlockCost::weight_s, summed)
  double weight_step_s = 0;  // a split backward's W step with its exposed ZeRO collectives
  double tp_total_s = 0, tp_exposed_s = 0, tp_bytes = 0;
  double cp_total_s = 0, cp_exposed_s = 0, cp_bytes = 0;
  double ep_total_s = 0, ep_exposed_s = 0, ep_bytes = 0;
  double mp_total_s = 0, mp_exposed_s = 0, mp_bytes = 0;  // placement's sends (per replica)
  double zero_total_s = 0, zero_exposed_s = 0, zero_bytes = 0;
  // FP8 amax reductions (IterOpKind::kFp8AmaxReduce): the compute waits for them, all exposed.
  double amax_s = 0, amax_bytes = 0;
  double model_flops = 0, hardware_flops = 0;
};

struct StageCosts {
  std::vector<StageCost> stages;  // per virtual stage
  StageDurations durations;       // for the schedule executor, transfers included
  StageDurations compute_only;    // the same without point-to-point transfers
  std::vector<double> transfer_s; // per boundary i -> i+1: one activation transfer
};

StageCosts stage_costs(const Plan& plan);

// Whether pipeline ranks r and r + 1 share a node (Megatron order: pp is the outermost
// rank dimension, so consecutive stages are tp * dp devices apart).
bool pipeline_neighbours_share_node(const Plan& plan, int rank);

}  // namespace stratasim
