#include "sim/analytical/analytical_engine.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/cost/accounting.h"
#include "sim/cost/optimizer_cost.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/group_views.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/stage_costs.h"
#include "sim/cost/step_timing.h"
#include "sim/core/units.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

struct RankSync {
  double dp_total_s = 0, dp_exposed_s = 0, dp_bytes = 0;
  double embedding_s = 0, embedding_bytes = 0;
  double optimizer_s = 0;
};

// The rank's ops after its last backward (iteration.h), in order: the data-parallel gradient
// buckets (overlapped with that backward when the plan says so), the parameter gather, the
// tied-embedding all-reduce and the optimizer step.
RankSync rank_sync(const Plan& plan, int rank, double last_backward_s, double delay_s) {
  RankSync r;
  for (const IterOp& op : plan.iteration.tail[rank]) {
    switch (op.kind) {
      case IterOpKind::kGradientReduce: {
        const BucketedReduce b = bucketed_reduce(op, plan, last_backward_s, delay_s);
        r.dp_total_s += b.total_s;
        r.dp_exposed_s += b.exposed_s;
        r.dp_bytes += op.bytes;
        break;
      }
      case IterOpKind::kParameterGather: {
        const double t = comm_op_s(op, plan);
        r.dp_total_s += t;
        r.dp_exposed_s += t;
        r.dp_bytes += op.bytes;
        break;
      }
      case IterOpKind::kEmbeddingSync:
        r.embedding_s += comm_op_s(op, plan);
        r.embedding_bytes += op.bytes;
        break;
      case IterOpKind::kOffloadGradients:  // after the reduction's exposed part (optimizer_cost.h)
        r.optimizer_s += offload_copy_exposed_s(op, plan, last_backward_s, r.dp_exposed_s);
        break;
      case IterOpKind::kOptimizerStep:
      case IterOpKind::kHostOptimizerStep:
      case IterOpKind::kUploadParameters:
      case IterOpKind::kFp8WeightCast:
        r.optimizer_s += optimizer_op_s(op, plan);
        break;
      default: break;
    }
  }
  return r;
}

void add_comm(Prediction& p, CommCategory c, const char* what, const CommGroup* group,
              double bytes, double total, double exposed) {
  if (total <= 0) return;
  p.comms.push_back(CommStat{c, what, group ? group->size : 0, group ? group->nodes() : 0, bytes,
                             total, exposed});
  p.comm_total_s += total;
  p.comm_exposed_s += exposed;
}

// Strategies that differ only in what the pipeline does not see (ZeRO stage 0 vs 1, DP
// overlap, the optimizer) time the same schedule with the same durations; a sweep therefore
// memoizes the timing per thread, keyed by the schedule and every duration (exact compare).
const ScheduleTiming& memoized_timing(ScheduleKind kind, int p, int m, int v,
                                      const StageDurations& d) {
  struct Entry {
    ScheduleKind kind;
    int p, m, v;
    std::vector<double> key;
    ScheduleTiming timing;
  };
  thread_local std::vector<Entry> recent;  // a small ring: sweeps revisit the last few
  thread_local size_t next = 0;
  std::vector<double> key = d.forward_s;
  key.insert(key.end(), d.backward_s.begin(), d.backward_s.end());
  key.insert(key.end(), d.p2p_s.begin(), d.p2p_s.end());
  key.insert(key.end(), d.weight_s.begin(), d.weight_s.end());
  key.push_back(-1.0);  // a separator: the last micro-batch's backwards, when they differ
  key.insert(key.end(), d.last_backward_s.begin(), d.last_backward_s.end());
  for (const Entry& e : recent) {
    if (e.kind == kind && e.p == p && e.m == m && e.v == v && e.key == key) return e.timing;
  }
  constexpr size_t kEntries = 64;
  Entry fresh{kind, p, m, v, std::move(key), time_schedule(kind, p, m, v, d)};
  if (recent.size() < kEntries) {
    recent.push_back(std::move(fresh));
    return recent.back().timing;
  }
  Entry& slot = recent[next++ % kEntries];
  slot = std::move(fresh);
  return slot.timing;
}

// Gradient buckets that overlap a rank's last backward lengthen it (overlap_slowdown). In the
// cool-down the last backward of rank r waits for the gradient of rank r + 1's last backward,
// so a stretch there delays rank r too, less the slack rank r had:
//   delay_r = stretch_r + max(0, delay_{r+1} - slack_r),
//   slack_r = start of r's last backward - (end of r+1's last backward + transfer).
std::vector<double> last_backward_delays(const Plan& plan, const GroupViews& views,
                                         const ScheduleTiming& timing,
                                         const StageDurations& durations) {
  std::vector<double> delay(plan.pp, 0.0);
  for (int r = plan.pp - 1; r >= 0; --r) {
    const double last = timing.rank_last_backward_s[r];
    for (const IterOp& op : plan.iteration.tail[r]) {
      if (op.kind == IterOpKind::kGradientReduce) {
        delay[r] += bucketed_reduce(op, views.for_rank(r), last).stretch_s;
      }
    }
    if (r + 1 < plan.pp) {
      const double lat = static_cast<size_t>(r) < durations.p2p_s.size() ? durations.p2p_s[r] : 0;
      const double slack =
          std::max(0.0, (timing.rank_finish_s[r] - last) - (timing.rank_finish_s[r + 1] + lat));
      delay[r] += std::max(0.0, delay[r + 1] - slack);
    }
  }
  return delay;
}

// The rank's last pipeline send (its output to the previous stage, queued behind its earlier
// sends: ScheduleTiming::rank_send_tail_s) is still on the wire when its gradient sync starts.
// When both leave through the same links -- both cross nodes (the node's NICs) or both stay
// inside it (the device's port) -- they share them: two flows on one bottleneck at half speed
// each until the shorter is over, so the sync's exposed part e ends min(e, tail) later
// (max-min fair sharing, as SimGrid's network model shares a link).
double send_tail_sharing_s(const Plan& plan, const ScheduleTiming& timing, int r, double exposed_s) {
  if (r == 0 || exposed_s <= 0 || static_cast<size_t>(r) >= timing.rank_send_tail_s.size()) return 0;
  const double tail = timing.rank_send_tail_s[r];
  if (tail <= 0) return 0;
  const bool send_crosses = !pipeline_neighbours_share_node(plan, r - 1);
  const bool sync_crosses = plan.dp_group.nodes() > 1;
  return send_crosses == sync_crosses ? std::min(exposed_s, tail) : 0.0;
}

// The iteration ends when the slowest rank has finished its pipeline work, its exposed
// gradient sync, the embedding sync and its optimizer step.
// A mixed cluster's ranks sync and step on their own group's devices and links (GroupViews).
RankSync finish_iteration(Prediction& p, const Plan& plan, const ScheduleTiming& timing,
                          const StageDurations& durations) {
  double iteration = 0;
  RankSync worst;
  double embedding = 0;
  const GroupViews views(plan);
  const std::vector<double> delay = last_backward_delays(plan, views, timing, durations);
  for (int r = 0; r < plan.pp; ++r) {
    RankSync sync = rank_sync(views.for_rank(r), r, timing.rank_last_backward_s[r], delay[r]);
    sync.dp_exposed_s += send_tail_sharing_s(plan, timing, r, sync.dp_exposed_s);
    // A rank without buckets of its own still ends later when its neighbour delayed it.
    const bool has_reduce = std::any_of(
        plan.iteration.tail[r].begin(), plan.iteration.tail[r].end(),
        [](const IterOp& op) { return op.kind == IterOpKind::kGradientReduce; });
    const double late = has_reduce ? 0 : delay[r];
    // Post-validated schedules (ZB-H2): each rank's iteration runs from its own first op.
    const double end = timing.rank_span_s(r) + late + sync.dp_exposed_s + sync.embedding_s +
                       sync.optimizer_s;
    if (end >= iteration) iteration = end, worst = sync;
    embedding = std::max(embedding, sync.embedding_s);
  }
  worst.embedding_s = embedding;
  p.iteration_s = iteration;
  p.optimizer_s = worst.optimizer_s;
  return worst;
}

// A pipeline send of op on the rank's communication lane: activations after a forward,
// gradients after a backward, when the neighbour stage is on another rank. Its boundary's
// transfer time: at the end of the op when the send blocks (the step's time includes it),
// after the op when it does not (the schedule's latency to the receiver).
void add_send(Prediction& p, const Plan& plan, const PipelineSchedule& schedule,
              const StageCosts& costs, int rank, const TimedOp& op) {
  const int vs = schedule.virtual_stage(rank, op.op.chunk);
  const bool fwd = op.op.kind == PipeOpKind::kForward;
  if (op.op.kind == PipeOpKind::kWeight) return;
  if (fwd ? !schedule.stage_map().sends_forward(vs) : !schedule.stage_map().sends_backward(vs)) return;
  const size_t boundary = static_cast<size_t>(fwd ? vs : vs - 1);
  if (boundary >= costs.transfer_s.size() || costs.transfer_s[boundary] <= 0) return;
  const double t = costs.transfer_s[boundary];
  const bool blocking = costs.durations.p2p_s[boundary] <= 0;
  // A non-blocking send leaves when the rank's port is free (its earlier sends have arrived):
  // it ends when its output arrives.
  const double end = blocking ? op.end_s : std::max(op.arrive_s, op.end_s + t);
  const double start = blocking ? std::max(op.start_s, op.end_s - t) : end - t;
  const std::string id = std::to_string(op.op.micro_batch);
  p.timeline.push_back({rank, EventKind::kComm, op.op.micro_batch, op.op.chunk, start,
                        end, (fwd ? "send act " : "send grad ") + id,
                        plan.boundary_B(static_cast<int>(boundary))});
}

// After the rank's pipeline work: its gradient sync on the communication lane (the buckets
// overlapped with the last backward start before its end, the exposed rest after it), the
// tied-embedding all-reduce, then the optimizer step on the compute lane (rank_sync's times).
void add_tail(Prediction& p, int rank, double pipeline_end_s, const RankSync& sync) {
  const double sync_end = pipeline_end_s + sync.dp_exposed_s;
  if (sync.dp_total_s > 0) {
    p.timeline.push_back({rank, EventKind::kComm, -1, 0, std::max(0.0, sync_end - sync.dp_total_s),
                          sync_end, "dp gradient sync", sync.dp_bytes});
  }
  double t = sync_end;
  if (sync.embedding_s > 0) {
    p.timeline.push_back({rank, EventKind::kComm, -1, 0, t, t + sync.embedding_s,
                          "embedding all-reduce", sync.embedding_bytes});
    t += sync.embedding_s;
  }
  if (sync.optimizer_s > 0) {
    if (t > pipeline_end_s) {
      p.timeline.push_back({rank, EventKind::kIdle, -1, 0, pipeline_end_s, t, "wait for sync"});
    }
    p.timeline.push_back({rank, EventKind::kOptimizer, -1, 0, t, t + sync.optimizer_s, "optimizer"});
  }
}

// The schedule's timeline as events; a backward with recomputation starts with a recompute
// event of its virtual stage's recompute time (the recomputed forward runs first). Sends and
// the iteration's tail (gradient sync, embedding sync, optimizer step) as finish_iteration
// times them.
void fill_timeline(Prediction& p, const Plan& plan, const StageCosts& costs,
                   const ScheduleTiming& timing) {
  const PipelineSchedule schedule = make_schedule(plan.strategy.schedule, plan.pp,
                                                  plan.micro_batches, plan.chunks, &costs.durations);
  const Timeline tl = execute_schedule(schedule, costs.durations);
  const GroupViews views(plan);
  const std::vector<double> delay =
      plan.inference() ? std::vector<double>(plan.pp, 0.0)
                       : last_backward_delays(plan, views, timing, costs.durations);
  for (size_t r = 0; r < tl.per_rank.size(); ++r) {
    double cursor = 0;
    for (const TimedOp& op : tl.per_rank[r]) {
      if (plan.inference() && op.op.kind != PipeOpKind::kForward) continue;  // none run
      if (op.start_s > cursor) {
        p.timeline.push_back({int(r), EventKind::kIdle, -1, 0, cursor, op.start_s, "idle"});
      }
      const int mb = op.op.micro_batch, chunk = op.op.chunk;
      const std::string id = std::to_string(mb);
      if (op.op.kind == PipeOpKind::kForward) {
        p.timeline.push_back({int(r), EventKind::kForward, mb, chunk, op.start_s, op.end_s, "F" + id});
      } else if (op.op.kind == PipeOpKind::kWeight) {
        p.timeline.push_back(
            {int(r), EventKind::kWeightGrad, mb, chunk, op.start_s, op.end_s, "W" + id});
      } else {
        const double rec = costs.stages[schedule.virtual_stage(int(r), chunk)].recompute_s;
        const double split = std::min(op.end_s, op.start_s + rec);
        if (split > op.start_s) {
          p.timeline.push_back({int(r), EventKind::kRecompute, mb, chunk, op.start_s, split, "R" + id});
        }
        p.timeline.push_back({int(r), EventKind::kBackward, mb, chunk, split, op.end_s, "B" + id});
      }
      add_send(p, plan, schedule, costs, int(r), op);
      cursor = op.end_s;
    }
    if (plan.inference() || static_cast<int>(r) >= plan.pp) continue;
    const RankSync sync = rank_sync(views.for_rank(int(r)), int(r),
                                    timing.rank_last_backward_s[r], delay[r]);
    add_tail(p, int(r), cursor, sync);
  }
}

void add_p2p(Prediction& p, const Plan& plan, const StageCosts& costs,
             const ScheduleTiming& timing) {
  const Strategy& s = plan.strategy;
  const double m = plan.micro_batches_per_stage();
  double total = 0;
  for (double t : costs.transfer_s) total += t;
  total = 2 * m * total / plan.pp;  // per rank: activations out, gradients back
  // Blocking sends keep the sender busy for the whole transfer: all of it is exposed. Async
  // sends are exposed only where they lengthen the schedule.
  const double exposed =
      s.overlap_p2p ? std::max(0.0, timing.makespan_s -
                                        time_schedule(s.schedule, plan.pp, plan.micro_batches,
                                                      plan.chunks, costs.compute_only)
                                            .makespan_s)
                    : total;
  add_comm(p, CommCategory::kPipelineP2P, "pp activations/gradients point-to-point", nullptr,
           2 * m * plan.p2p_bytes * plan.chunks, total, exposed);
}

}  // namespace

Prediction predict_memory(const Plan& plan) {
  Prediction p;
  p.engine = "analytical";
  fill_memory(p, plan);
  return p;
}

Prediction predict_analytical(const Plan& plan, const EngineOptions& options) {
  Prediction p;
  p.engine = "analytical";
  const Strategy& s = plan.strategy;
  const StageCosts costs = stage_costs(plan);
  const ScheduleTiming timing =
      memoized_timing(s.schedule, plan.pp, plan.micro_batches, plan.chunks, costs.durations);
  p.pipeline_s = timing.makespan_s;
  p.bubble_fraction = timing.bubble_fraction;
  p.bubble_s = timing.bubble_fraction * timing.makespan_s;
  p.uniform_bubble_fraction =
      uniform_bubble_fraction(s.schedule, plan.pp, plan.micro_batches, plan.chunks);
  const StageTotals totals = sum_stages(p, plan, costs);
  const RankSync sync = finish_iteration(p, plan, timing, costs.durations);
  add_comm(p, CommCategory::kTensorParallel, "tp collectives", &plan.tp_group, totals.tp_bytes,
           totals.tp_total, totals.tp_exposed);
  add_comm(p, CommCategory::kContextParallel, context_comm_label(plan), &plan.cp_group,
           totals.cp_bytes, totals.cp_total, totals.cp_exposed);
  add_comm(p, CommCategory::kExpertParallel, "ep token dispatch/combine all-to-all",
           &plan.ep_group, totals.ep_bytes, totals.ep_total, totals.ep_exposed);
  add_comm(p, CommCategory::kPlacement, "placement sends between a replica's devices",
           &plan.mp_group, totals.mp_bytes, totals.mp_total, totals.mp_exposed);
  add_comm(p, CommCategory::kZero,
           plan.shards_experts_per_micro_batch()
               ? "zero per-micro-batch collectives (routed experts' over the expert-data ranks)"
               : "zero per-micro-batch collectives",
           plan.shard < plan.dp ? &plan.shard_group : &plan.dp_group,
           totals.zero_bytes, totals.zero_total, totals.zero_exposed);
  add_comm(p, CommCategory::kDataParallel, "dp gradient sync", &plan.dp_group, sync.dp_bytes,
           sync.dp_total_s, sync.dp_exposed_s);
  add_comm(p, CommCategory::kEmbeddingSync, "tied embedding all-reduce (first/last stage)",
           nullptr, sync.embedding_bytes, sync.embedding_s, sync.embedding_s);
  add_comm(p, CommCategory::kFp8Amax, fp8_amax_label(plan), &fp8_amax_group(plan),
           totals.amax_bytes, totals.amax_s, totals.amax_s);
  if (plan.pp > 1) add_p2p(p, plan, costs, timing);
  fill_rates(p, plan, totals);
  fill_memory(p, plan);
  add_plan_notes(p, plan);
  if (plan.inference()) p.latency_s = pipeline_latency_s(costs);
  if (options.timeline) fill_timeline(p, plan, costs, timing);
  return p;
}

}  // namespace stratasim
