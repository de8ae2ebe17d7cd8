#include "sim/simgrid/simgrid_engine.h"

#include <algorithm>
#include <cstdio>

#include "sim/cost/accounting.h"
#include "sim/cost/stage_costs.h"
#include "sim/core/error.h"
#include "sim/simgrid/child_process.h"
#include "sim/simgrid/executor.h"
#include "sim/simgrid/op_segments.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

using simgrid_detail::HostResult;
using simgrid_detail::SimRun;

// Compute operations the simulation would hold: one per pass (F, B and W when the schedule
// splits the backward) of every micro-batch on every virtual stage, per layer at layer
// granularity (embedding and head add one each).
double simulated_operations(const Plan& plan, const SimgridOptions& options) {
  const double passes = splits_backward(plan.strategy.schedule) ? 3 : 2;
  double per_micro_batch = 0;
  for (const VirtualStage& s : plan.stages) {
    per_micro_batch += options.granularity == SimGranularity::kLayer
                           ? double(s.layers) + s.has_embedding + s.has_head
                           : 1.0;
  }
  return per_micro_batch * passes * double(plan.micro_batches_per_stage()) *
         double(plan.block_repeat);
}

void check_supported(const Plan& plan, const SimgridOptions& options) {
  const double ops = simulated_operations(plan, options);
  if (ops > options.max_operations) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "%d micro-batches on %zu virtual stages make %.3g simulated operations, more "
                  "than the SimGrid engine's limit of %.3g; predict this plan with `evaluate` "
                  "(the analytical engine), or use fewer micro-batches or stage granularity",
                  plan.micro_batches, plan.stages.size(), ops, options.max_operations);
    throw InputError("plan", "strategy.global_batch", std::to_string(plan.micro_batches) +
                     " micro-batches", text);
  }
  if (options.max_ring_steps < 1) {
    throw InputError("simgrid options", "max_ring_steps", std::to_string(options.max_ring_steps),
                     "must be >= 1");
  }
  if (options.max_ring_messages < 1) {
    throw InputError("simgrid options", "max_ring_messages",
                     std::to_string(options.max_ring_messages), "must be >= 1");
  }
  if (options.max_dp_buckets < 1) {
    throw InputError("simgrid options", "max_dp_buckets", std::to_string(options.max_dp_buckets),
                     "must be >= 1");
  }
}

void add_comm(Prediction& p, CommCategory c, const char* what, const CommGroup* group, double bytes,
              double total, double exposed) {
  if (total <= 0) return;
  p.comms.push_back(CommStat{c, what, group ? group->size : 0, group ? group->nodes() : 0, bytes,
                             total, std::min(total, std::max(0.0, exposed))});
  p.comm_total_s += p.comms.back().total_s;
  p.comm_exposed_s += p.comms.back().exposed_s;
}

// Data-parallel, point-to-point and embedding communication as simulated: the busiest host's
// time in each, and the part of it that lengthened the host's iteration. Tensor-parallel
// collectives inside the op durations (not simulated as messages) and the bytes come from the
// cost model (accounting.h), as for the analytical engine.
void measured_comms(Prediction& p, const Plan& plan, const SimgridOptions& options,
                    const SimRun& run, const StageCosts& costs, const StageTotals& totals) {
  const HostResult* dp = &run.hosts[0];
  const HostResult* p2p = &run.hosts[0];
  const HostResult* emb = &run.hosts[0];
  for (const HostResult& h : run.hosts) {
    if (h.dp_end_s - h.pipeline_end_s > dp->dp_end_s - dp->pipeline_end_s) dp = &h;
    if (h.p2p_s > p2p->p2p_s) p2p = &h;
    if (h.embedding_s > emb->embedding_s) emb = &h;
  }
  if (totals.tp_total > 0) {
    if (simgrid_detail::tp_as_messages(plan, options)) {  // rank 0, as the analytical engine
      add_comm(p, CommCategory::kTensorParallel, "tp collectives (simulated messages)",
               &plan.tp_group, totals.tp_bytes, run.hosts[0].tp_s, run.hosts[0].tp_exposed_s);
    } else {  // inside the compute durations (stage_costs)
      add_comm(p, CommCategory::kTensorParallel, "tp collectives", &plan.tp_group,
               totals.tp_bytes, totals.tp_total, totals.tp_exposed);
    }
  }
  // Inside the compute durations in both engines (op_segments: TP and, at layer granularity,
  // EP all-to-alls become messages).
  add_comm(p, CommCategory::kContextParallel, context_comm_label(plan), &plan.cp_group,
           totals.cp_bytes, totals.cp_total, totals.cp_exposed);
  if (simgrid_detail::ep_as_messages(plan, options) && totals.ep_total > 0) {  // rank 0
    add_comm(p, CommCategory::kExpertParallel, "ep token dispatch/combine all-to-all (simulated messages)",
             &plan.ep_group, totals.ep_bytes, run.hosts[0].ep_s, run.hosts[0].ep_s);
  } else {
    add_comm(p, CommCategory::kExpertParallel, "ep token dispatch/combine all-to-all",
             &plan.ep_group, totals.ep_bytes, totals.ep_total, totals.ep_exposed);
  }
  add_comm(p, CommCategory::kPlacement, "placement sends between a replica's devices",
           &plan.mp_group, totals.mp_bytes, totals.mp_total, totals.mp_exposed);
  if (totals.zero_total > 0) {  // rank 0, as the analytical engine
    add_comm(p, CommCategory::kZero,
             plan.shards_experts_per_micro_batch()
                 ? "zero per-micro-batch collectives (simulated messages; routed experts' over the expert-data ranks)"
                 : "zero per-micro-batch collectives (simulated messages)",
             plan.shard < plan.dp ? &plan.shard_group : &plan.dp_group, totals.zero_bytes,
             run.hosts[0].zero_s, run.hosts[0].zero_exposed_s);
  }
  add_comm(p, CommCategory::kFp8Amax, fp8_amax_label(plan), &fp8_amax_group(plan),
           totals.amax_bytes, run.hosts[0].amax_s, run.hosts[0].amax_s);  // rank 0, as the analytical engine
  add_comm(p, CommCategory::kDataParallel, "dp gradient sync", &plan.dp_group, dp_sync_bytes(plan),
           dp->dp_s, dp->dp_end_s - dp->pipeline_end_s);
  add_comm(p, CommCategory::kEmbeddingSync, "tied embedding all-reduce (first/last stage)", nullptr,
           double(plan.model.transformer.vocab) * plan.model.transformer.hidden / plan.tp *
               plan.grad_bytes_per_param,
           emb->embedding_s, emb->embedding_s);
  if (plan.pp > 1) {
    // Blocking sends are exposed by definition; detached ones only where they lengthen the
    // pipeline compared with free transfers.
    const double free_makespan = time_schedule(plan.strategy.schedule, plan.pp, plan.micro_batches,
                                               plan.chunks, costs.compute_only)
                                     .makespan_s;
    const double exposed = plan.strategy.overlap_p2p ? p.pipeline_s - free_makespan : p2p->p2p_s;
    add_comm(p, CommCategory::kPipelineP2P, "pp activations/gradients point-to-point", nullptr,
             2.0 * plan.micro_batches_per_stage() * plan.p2p_bytes * plan.chunks, p2p->p2p_s,
             exposed);
  }
}

Prediction assemble(const Plan& plan, const SimgridOptions& options, const SimRun& run) {
  // What does not depend on the order of the ops (FLOP, per-op durations, memory, which is not
  // simulated: memory_model.h) comes from the cost model's accounting, as in the analytical
  // engine; every time that depends on ordering or on the network is measured.
  Prediction p;
  p.engine = "simgrid";
  const StageCosts costs = stage_costs(plan);
  const StageTotals totals = sum_stages(p, plan, costs);
  fill_memory(p, plan);
  p.uniform_bubble_fraction =
      uniform_bubble_fraction(plan.strategy.schedule, plan.pp, plan.micro_batches, plan.chunks);
  p.timeline = run.events;
  for (const HostResult& h : run.hosts) {
    p.pipeline_s = std::max(p.pipeline_s, h.pipeline_end_s);
    p.iteration_s = std::max(p.iteration_s, h.finish_s);
    p.optimizer_s = std::max(p.optimizer_s, h.optimizer_s);
  }
  double idle = 0;  // the bubble: idle time of each host's compute stream in the pipeline
  for (const HostResult& h : run.hosts) idle += std::max(0.0, p.pipeline_s - h.busy_s);
  p.bubble_fraction = p.pipeline_s > 0 ? idle / run.hosts.size() / p.pipeline_s : 0;
  p.bubble_s = p.bubble_fraction * p.pipeline_s;
  measured_comms(p, plan, options, run, costs, totals);
  fill_rates(p, plan, totals);
  add_plan_notes(p, plan);
  // One micro-batch alone in the pipeline meets no contention: the stage costs' sum.
  if (plan.inference()) p.latency_s = pipeline_latency_s(costs);

  char note[512];
  std::snprintf(note, sizeof note,
                "simgrid: %zu hosts simulated for %d devices, %d nodes, %lld activities",
                run.hosts.size(), plan.hardware.num_devices, run.nodes, run.activities);
  p.notes.push_back(note);
  if (plan.tp > 1) {
    const char* tp_how =
        simgrid_detail::tp_as_messages(plan, options)
            ? "; tensor-parallel collectives run as messages through the host's own NVLink port "
              "to a mirror of its ring neighbours, contending with its point-to-point and "
              "data-parallel traffic"
        : plan.tp_group.nodes() > 1
            ? "; the tensor-parallel group spans nodes: its collectives stay inside the op "
              "durations (not contended)"
            : "; stage granularity: tensor-parallel collectives stay inside the op durations "
              "(not contended; layer granularity or tp_messages_at_stage simulates them)";
    std::snprintf(note, sizeof note,
                  "simgrid: symmetry: one host per pipeline rank x data-parallel replica stands "
                  "for its %d identical tensor-parallel peers (%s)%s",
                  plan.tp,
                  plan.hardware.network.topology == NetworkTopology::kRailOptimized &&
                          plan.hardware.num_nodes() > 1
                      ? "each peer has its own rail NIC; the host's NIC carries its share"
                      : "links above the device port carry 1/tp of their bandwidth, exact under "
                        "max-min sharing",
                  tp_how);
    p.notes.push_back(note);
  }
  if (plan.mp > 1) {
    std::snprintf(note, sizeof note,
                  "simgrid: placement: one host per replica stands for its %d placed devices; the "
                  "sends between them stay inside the compute durations (placed_kernels.h: not "
                  "contended with the data-parallel traffic)",
                  plan.mp);
    p.notes.push_back(note);
  }
  if (plan.hardware.network.topology == NetworkTopology::kRailOptimized &&
      plan.hardware.num_nodes() > 1) {
    p.notes.push_back(
        "simgrid: rail-optimized network: NIC i of every node on rail switch i (one per "
        "nodes_per_leaf x nics nodes), other rails and scalable units through the spine");
  }
  p.notes.push_back(options.granularity == SimGranularity::kLayer
                        ? "simgrid: layer granularity (each forward/backward executed layer by "
                          "layer; embedding and head attached to their stages)"
                        : "simgrid: stage granularity (one execution per forward/backward of a "
                          "virtual stage)");
  if (plan.strategy.schedule == ScheduleKind::kPipeDreamAsync) {
    p.notes.push_back(
        "simgrid: PipeDream async: iterations simulated back to back without flush; iteration "
        "time = steady-state distance between iteration boundaries (+ the gradient sync and "
        "optimizer step, simulated once after the stream); the trace shows one steady-state "
        "iteration");
  }
  if (simgrid_detail::tp_as_messages(plan, options)) {
    p.notes.push_back(options.granularity == SimGranularity::kLayer
                          ? "simgrid: tensor-parallel collectives at their kernel positions"
                          : "simgrid: tensor-parallel collectives of an op aggregated into one "
                            "exchange at its end (summed bytes and latencies)");
  }
  std::snprintf(note, sizeof note,
                "simgrid: data-parallel, ZeRO and embedding collectives as point-to-point "
                "messages (%s, as collective_cost.h picks); memory is not simulated (memory "
                "model)",
                plan.strategy.collective == CollectiveAlgorithm::kAuto
                    ? "algorithm auto"
                    : std::string(collective_algorithm_name(plan.strategy.collective)).c_str());
  p.notes.push_back(note);
  return p;
}

}  // namespace

Prediction predict_simgrid(const Plan& plan, const SimgridOptions& options) {
  check_supported(plan, options);
  const std::string wire = simgrid_detail::run_in_child(
      [&] { return simgrid_detail::to_wire(simgrid_detail::run_simulation(plan, options)); });
  return assemble(plan, options, simgrid_detail::from_wire(wire));
}

}  // namespace stratasim
