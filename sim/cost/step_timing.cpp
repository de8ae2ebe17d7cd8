#include "sim/cost/step_timing.h"

#include <algorithm>
#include <array>

#include "sim/cost/collective_cost.h"
#include "sim/cost/stage_costs.h"
#include "strategies/lowering/mixed_cluster.h"

namespace stratasim {
namespace {

// The pipeline rank on the lower side of the boundary a send crosses (DualPipe's reverse
// direction sends from rank r to r - 1).
int boundary_rank(const IterOp& op, const Plan& plan) {
  const StageMap map = plan.stage_map();
  const int to = op.kind == IterOpKind::kSendActivation ? map.next_stage(op.vstage)
                                                        : map.prev_stage(op.vstage);
  return std::min(plan.stages[op.vstage].rank, plan.stages[to].rank);
}

double compute_op_s(const IterOp& op, const ComputeDurations& c) {
  switch (op.kind) {
    case IterOpKind::kForward: return c.forward_s;
    case IterOpKind::kRecompute: return c.recompute_s;
    case IterOpKind::kBackward: return c.backward_s;
    case IterOpKind::kWeightGradient: return c.weight_s;
    default: return 0;
  }
}

}  // namespace

double comm_op_s(const IterOp& op, const Plan& plan) {
  if (is_send(op)) {
    const int r = boundary_rank(op, plan);
    if (plan.hardware.mixed()) {  // a boundary between two groups of a mixed cluster
      const int a = pipeline_rank_group(plan, r), b = pipeline_rank_group(plan, (r + 1) % plan.pp);
      if (a != b) return p2p_time(op.bytes, false, plan.hardware.between_groups(a, b));
    }
    if (pipeline_neighbours_share_node(plan, r)) return p2p_time(op.bytes, true, plan.hardware);
    // The stage's tp x dp ranks in the sending node send across at once (one host per rank and
    // replica in the SimGrid engine, each through the node's NICs).
    const long long stride = static_cast<long long>(plan.tp) * plan.dp;
    const int flows = static_cast<int>(std::min<long long>(stride, plan.hardware.node.devices));
    return p2p_across_nodes_s(op.bytes, flows, plan.hardware);
  }
  const int n = std::max(1, op.repeats);
  const double t = n * collective_time(op.comm, op.bytes / n, plan.iteration.group(op.group),
                                       plan.hardware, op.algorithm)
                           .time_s;
  // Delayed scaling's reduction is bracketed by two kernels in stream order: the torch.cat of
  // the amax buffers and the fused amax-and-scale update (TE fp8.py reduce_and_update_fp8_tensors:
  // tex.fused_amax_and_scale_update_after_reduction, one multi-tensor kernel), a few hundred
  // bytes each: their fixed cost per kernel.
  if (op.kind == IterOpKind::kFp8AmaxReduce) return t + 2 * plan.hardware.device.kernel_overhead_s;
  return t;
}

namespace {

struct Interval {
  double start = 0, end = 0;
};

// One list-scheduling pass: each op starts when its stream is free and its dependencies are
// over; compute ops take their duration plus `extra[i]`.
std::vector<Interval> schedule_step(const StepProgram& step, const ComputeDurations& compute,
                                    const Plan& plan, const std::vector<double>& extra) {
  std::array<double, 2> stream_free{0, 0};
  std::vector<Interval> at(step.ops.size());
  for (size_t i = 0; i < step.ops.size(); ++i) {
    const IterOp& op = step.ops[i];
    double start = stream_free[static_cast<int>(op.stream)];
    for (int8_t d : op.deps) {
      if (d >= 0) start = std::max(start, at[d].end);
    }
    const double duration = op.stream == Stream::kCompute
                                ? compute_op_s(op, compute) + extra[i]
                                : comm_op_s(op, plan);
    at[i] = {start, start + duration};
    stream_free[static_cast<int>(op.stream)] = at[i].end;
  }
  return at;
}

}  // namespace

// Compute that overlaps a collective runs at 1/s of its speed (DeviceSpec::overlap_slowdown).
// For a compute op C beside collectives of G in all after its start, the compute ends
// min((s - 1) C, (1 - 1/s) G) later (exact for one collective starting with it: the compute
// runs at 1/s until the collective ends or until it is done); a second pass applies that.
StepTiming time_step(const StepProgram& step, const ComputeDurations& compute, const Plan& plan) {
  std::vector<double> extra(step.ops.size(), 0.0);
  std::vector<Interval> at = schedule_step(step, compute, plan, extra);
  const double interference = 1 - 1 / plan.hardware.device.overlap_slowdown;
  bool slowed = false;
  const double stretch = plan.hardware.device.overlap_slowdown - 1;
  for (size_t i = 0; i < step.ops.size() && interference > 0; ++i) {
    if (step.ops[i].stream != Stream::kCompute) continue;
    double beside = 0;  // collective time during the compute op or after its start
    for (size_t j = 0; j < step.ops.size(); ++j) {
      const IterOp& c = step.ops[j];
      if (c.stream != Stream::kComm || is_send(c) || at[j].start >= at[i].end) continue;
      beside += std::max(0.0, at[j].end - std::max(at[j].start, at[i].start));
    }
    if (beside > 0) {
      extra[i] = std::min(stretch * (at[i].end - at[i].start), interference * beside);
      slowed = true;
    }
  }
  if (slowed) at = schedule_step(step, compute, plan, extra);
  StepTiming t;
  for (size_t i = 0; i < step.ops.size(); ++i) {
    const IterOp& op = step.ops[i];
    const double duration = at[i].end - at[i].start;
    if (is_send(op)) {
      t.send_end_s = at[i].end;
      t.send_blocking = op.blocking;
      continue;
    }
    t.span_s = std::max(t.span_s, at[i].end);
    if (op.stream == Stream::kCompute) t.compute_s += compute_op_s(op, compute);
    if (op.kind == IterOpKind::kZeroGather || op.kind == IterOpKind::kZeroReduceScatter) {
      t.zero_total_s += duration;
      t.zero_bytes += op.bytes;
    }
    if (op.kind == IterOpKind::kFp8AmaxReduce) t.amax_s += duration, t.amax_bytes += op.bytes;
  }
  return t;
}

BucketedReduce bucketed_reduce(const IterOp& op, const Plan& plan, double last_backward_s,
                               double delay_s) {
  const int buckets = std::max(1, op.repeats);
  const double bucket_s = comm_op_s(op, plan) / buckets;
  BucketedReduce r;
  r.total_s = buckets * bucket_s;
  if (!op.overlaps_last_backward) {
    r.exposed_s = r.total_s;
    return r;
  }
  // The buckets one after another on the comm stream, each as soon as it is ready and the
  // previous one is over; while one runs the backward computes at 1/s of its speed
  // (overlap_slowdown), so bucket k is ready once (k + 1)/B of the backward's compute is done
  // at the speed it actually had. Times from the backward's start; O(B).
  const double s = std::max(1.0, plan.hardware.device.overlap_slowdown);
  double now = 0, progress = 0, comm_end = 0;
  for (int k = 0; k < buckets; ++k) {
    const double target = last_backward_s * (k + 1) / buckets;
    if (now < comm_end && progress < target) {  // slowed while the previous bucket runs
      const double slowed = std::min(comm_end - now, (target - progress) * s);
      now += slowed;
      progress += slowed / s;
    }
    if (progress < target) now += target - progress, progress = target;
    comm_end = std::max(now, comm_end) + bucket_s;
  }
  r.stretch_s = now - last_backward_s;  // the backward ends with the last bucket's readiness
  const double delay = delay_s < 0 ? r.stretch_s : delay_s;
  r.exposed_s = delay + (comm_end - now);
  return r;
}

}  // namespace stratasim
