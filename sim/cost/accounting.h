// What a prediction holds that does not depend on the order in which an engine runs the ops:
// FLOPs, the longest forward/backward step, each rank's compute, tensor-parallel and ZeRO
// communication per device, memory per pipeline rank, and the rates once the iteration time is
// known. Both engines fill these through here, so they report them alike.
#pragma once

#include "sim/cost/stage_costs.h"
#include "sim/prediction/prediction.h"

namespace stratasim {

// Sums over virtual stages: per-rank compute, FLOPs, and rank 0's per-device communication.
struct StageTotals {
  double tp_total = 0, tp_exposed = 0, tp_bytes = 0;
  double cp_total = 0, cp_exposed = 0, cp_bytes = 0;
  double ep_total = 0, ep_exposed = 0, ep_bytes = 0;
  double mp_total = 0, mp_exposed = 0, mp_bytes = 0;  // placement's sends, per replica
  double zero_total = 0, zero_exposed = 0, zero_bytes = 0;
  double amax_s = 0, amax_bytes = 0;  // FP8 amax reductions (exposed)
  double model_flops = 0, hardware_flops = 0;
};

// Fills p.forward_s, backward_s, compute_s, recompute_s; returns the sums.
StageTotals sum_stages(Prediction& p, const Plan& plan, const StageCosts& costs);

// Memory per pipeline rank (memory_model.h), the peak, the capacity and whether it fits.
void fill_memory(Prediction& p, const Plan& plan);

// FLOPs, throughput, MFU and HFU from p.iteration_s.
void fill_rates(Prediction& p, const Plan& plan, const StageTotals& t);

// Warnings about the strategy both engines attach to their Prediction's notes (ZeRO with
// dp = 1 shards nothing).
void add_plan_notes(Prediction& p, const Plan& plan);

// The data-parallel bytes per device of the rank that moves the most (gradient buckets and
// parameter gather, iteration.h).
double dp_sync_bytes(const Plan& plan);

// Inference: the time one micro-batch takes through the empty pipeline, the forward of every
// virtual stage in chain order and the transfers between them (no contention: it is alone).
double pipeline_latency_s(const StageCosts& costs);

// What the context group's communication is, for the reports: ring attention's K/V exchange for
// a transformer, a spatial split's halo exchanges and row gathers for an operator graph.
const char* context_comm_label(const Plan& plan);

// Transformer Engine's delayed-scaling amax reductions (IterOpKind::kFp8AmaxReduce): the
// report's line and the group they span (the stage's ranks or its tensor-parallel ones).
const char* fp8_amax_label(const Plan& plan);
const CommGroup& fp8_amax_group(const Plan& plan);

}  // namespace stratasim
