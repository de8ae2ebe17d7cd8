#include "sim/analytical/step_timing.h"

#include <algorithm>
#include <array>

#include "sim/analytical/collective_cost.h"
#include "sim/analytical/stage_costs.h"

namespace stratasim {
namespace {

bool is_send(const IterOp& op) {
  return op.kind == IterOpKind::kSendActivation || op.kind == IterOpKind::kSendGradient;
}

// The pipeline rank on the lower side of the boundary a send crosses.
int boundary_rank(const IterOp& op, const Plan& plan) {
  const int from = op.kind == IterOpKind::kSendActivation ? op.vstage : op.vstage - 1;
  return plan.stages[from].rank;
}

double compute_op_s(const IterOp& op, const ComputeDurations& c) {
  switch (op.kind) {
    case IterOpKind::kForward: return c.forward_s;
    case IterOpKind::kRecompute: return c.recompute_s;
    case IterOpKind::kBackward: return c.backward_s;
    default: return 0;
  }
}

}  // namespace

double comm_op_s(const IterOp& op, const Plan& plan) {
  if (is_send(op)) {
    return p2p_time(op.bytes, pipeline_neighbours_share_node(plan, boundary_rank(op, plan)),
                    plan.hardware);
  }
  const int n = std::max(1, op.repeats);
  return n * collective_time(op.comm, op.bytes / n, plan.iteration.group(op.group), plan.hardware,
                             op.algorithm)
                 .time_s;
}

StepTiming time_step(const StepProgram& step, const ComputeDurations& compute, const Plan& plan) {
  StepTiming t;
  std::array<double, 2> stream_free{0, 0};
  std::vector<double> end(step.ops.size(), 0);
  for (size_t i = 0; i < step.ops.size(); ++i) {
    const IterOp& op = step.ops[i];
    double start = stream_free[static_cast<int>(op.stream)];
    for (int8_t d : op.deps) {
      if (d >= 0) start = std::max(start, end[d]);
    }
    const double duration =
        op.stream == Stream::kCompute ? compute_op_s(op, compute) : comm_op_s(op, plan);
    end[i] = start + duration;
    stream_free[static_cast<int>(op.stream)] = end[i];
    if (is_send(op)) {
      t.send_end_s = end[i];
      t.send_blocking = op.blocking;
      continue;
    }
    t.span_s = std::max(t.span_s, end[i]);
    if (op.stream == Stream::kCompute) t.compute_s += duration;
    if (op.kind == IterOpKind::kZeroGather || op.kind == IterOpKind::kZeroReduceScatter) {
      t.zero_total_s += duration;
    }
  }
  return t;
}

BucketedReduce bucketed_reduce(const IterOp& op, const Plan& plan, double last_backward_s) {
  const int buckets = std::max(1, op.repeats);
  const double bucket_s = comm_op_s(op, plan) / buckets;
  BucketedReduce r;
  r.total_s = buckets * bucket_s;
  r.exposed_s = op.overlaps_last_backward
                    ? std::max(bucket_s, r.total_s - last_backward_s * (buckets - 1) / buckets)
                    : r.total_s;
  return r;
}

}  // namespace stratasim
