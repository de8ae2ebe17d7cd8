#include "sim/cost/stage_costs.h"

#include <algorithm>

#include "sim/cost/block_cost_memo.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/group_views.h"
#include "sim/cost/step_timing.h"

namespace stratasim {
namespace {

void add_block(StageCost& c, const BlockCost& b, double times) {
  c.forward_s += times * b.forward_s;
  c.backward_s += times * b.backward_s;
  c.recompute_s += times * b.recompute_s;
  c.weight_s += times * b.weight_s;
  c.tp_total_s += times * b.comm_total_s;
  c.tp_exposed_s += times * b.comm_exposed_s;
  c.tp_bytes += times * b.comm_bytes;
  c.cp_total_s += times * b.cp_total_s;
  c.cp_exposed_s += times * b.cp_exposed_s;
  c.cp_bytes += times * b.cp_bytes;
  c.ep_total_s += times * b.ep_total_s;
  c.ep_exposed_s += times * b.ep_exposed_s;
  c.ep_bytes += times * b.ep_bytes;
  c.mp_total_s += times * b.mp_total_s;
  c.mp_exposed_s += times * b.mp_exposed_s;
  c.mp_bytes += times * b.mp_bytes;
  c.model_flops += times * b.model_flops;
  c.hardware_flops += times * b.hardware_flops;
}

// The stage's forward and backward steps (iteration.h) timed around its compute: ZeRO
// collectives before, beside or after it, and the send to the neighbouring stage. A blocking
// send (Megatron's default p2p) keeps the sender busy until its message has arrived, so the
// transfer joins the step; a non-blocking one is a latency on the receiver's dependency.
// A schedule that splits the backward has a third step, W (weight gradients, then their ZeRO
// reduce-scatter), timed the same way; the backward step is then B alone.
void time_steps(StageCost& c, const StageProgram& program, const Plan& plan, double* forward_s,
                double* backward_s, double* forward_lat_s, double* backward_lat_s) {
  const bool split = !program.weight.ops.empty();
  const double w = split ? c.weight_s : 0.0;
  const ComputeDurations compute{c.forward_s, c.recompute_s, c.backward_s - c.recompute_s - w, w};
  const StepTiming f = time_step(program.forward, compute, plan);
  const StepTiming b = time_step(program.backward, compute, plan);
  const StepTiming ws = split ? time_step(program.weight, compute, plan) : StepTiming{};
  c.compute_forward_s = c.forward_s;
  c.compute_backward_s = c.backward_s - w;
  c.compute_weight_s = w;
  c.zero_total_s = f.zero_total_s + b.zero_total_s + ws.zero_total_s;
  c.zero_bytes = f.zero_bytes + b.zero_bytes + ws.zero_bytes;
  c.amax_s = f.amax_s + b.amax_s;
  c.amax_bytes = f.amax_bytes + b.amax_bytes;
  c.zero_exposed_s = std::max(
      0.0, (f.span_s - f.compute_s) + (b.span_s - b.compute_s) + (ws.span_s - ws.compute_s) - c.amax_s);
  c.forward_s = f.span_s;
  c.backward_s = b.span_s;
  c.weight_step_s = ws.span_s;
  auto finish = [](const StepTiming& t, double* duration, double* lat) {
    const double transfer = std::max(0.0, t.send_end_s - t.span_s);
    *duration = t.span_s + (t.send_blocking ? transfer : 0);
    *lat = t.send_blocking ? 0 : transfer;
  };
  finish(f, forward_s, forward_lat_s);
  finish(b, backward_s, backward_lat_s);
}

}  // namespace

bool pipeline_neighbours_share_node(const Plan& plan, int rank) {
  const long long stride = static_cast<long long>(plan.tp) * plan.dp;
  const long long per_node = plan.hardware.node.devices;
  const int next = (rank + 1) % plan.pp;
  return (rank * stride) / per_node == (next * stride) / per_node;
}

namespace {

// The blocks' costs on one group's devices (the plan's own on a uniform cluster).
struct BlockCosts {
  BlockCost layer, dense, recomputed, embedding, head;
};

BlockCosts block_costs(const Plan& plan) {
  BlockCosts b;
  b.layer = memoized_block_cost(plan.layer, plan);
  if (plan.dense_layer) b.dense = memoized_block_cost(plan.dense_layer, plan);
  if (plan.recomputed_layer) b.recomputed = memoized_block_cost(plan.recomputed_layer, plan);
  if (plan.model.family != ModelFamily::kOpGraph) {
    b.embedding = memoized_block_cost(plan.embedding, plan);
    b.head = memoized_block_cost(plan.head, plan);
  }
  return b;
}

}  // namespace

StageCosts stage_costs(const Plan& plan) {
  const GroupViews views(plan);
  std::vector<BlockCosts> per_group;  // a mixed cluster's groups, costed when first needed
  std::vector<char> costed;
  const BlockCosts uniform = views.mixed() ? BlockCosts{} : block_costs(plan);
  if (views.mixed()) per_group.resize(plan.hardware.groups.size()), costed.assign(per_group.size(), 0);
  StageCosts out;
  const StageMap map = plan.stage_map();
  const size_t n = plan.stages.size();
  out.stages.resize(n);
  out.durations.forward_s.resize(n);
  out.durations.backward_s.resize(n);
  out.durations.p2p_s.assign(n > 0 ? n - 1 : 0, 0.0);
  out.compute_only = out.durations;
  out.transfer_s = out.durations.p2p_s;
  for (size_t i = 0; i < n; ++i) {
    const VirtualStage& st = plan.stages[i];
    const Plan& on = views.for_rank(st.rank);
    const int g = views.group_of_rank(st.rank);
    if (views.mixed() && !costed[g]) per_group[g] = block_costs(on), costed[g] = 1;
    const BlockCosts& b = views.mixed() ? per_group[g] : uniform;
    StageCost& c = out.stages[i];
    // An operator graph's pipeline stage runs its own part of the graph.
    const BlockCost own = st.block >= 0 ? memoized_block_cost(plan.layer_of(st), on) : BlockCost{};
    const int rest = st.layers - st.dense_layers - st.recomputed_layers;
    add_block(c, st.block >= 0 ? own : b.layer, double(rest) * plan.block_repeat);
    if (st.dense_layers > 0) add_block(c, b.dense, st.dense_layers);
    if (st.recomputed_layers > 0) add_block(c, b.recomputed, st.recomputed_layers);
    if (st.has_embedding) add_block(c, b.embedding, 1);
    if (st.has_head) add_block(c, b.head, 1);
    double forward_lat = 0, backward_lat = 0;
    time_steps(c, plan.iteration.stages[i], on, &out.durations.forward_s[i],
               &out.durations.backward_s[i], &forward_lat, &backward_lat);
    out.compute_only.forward_s[i] = c.forward_s;
    out.compute_only.backward_s[i] = c.backward_s;
    // torchgpipe's checkpoint='except_last': the last micro-batch's backward recomputes nothing.
    if (!plan.strategy.recompute_last_micro_batch && plan.strategy.recompute != Recompute::kNone) {
      out.durations.last_backward_s.resize(n, 0.0);
      out.compute_only.last_backward_s.resize(n, 0.0);
      out.durations.last_backward_s[i] = std::max(0.0, out.durations.backward_s[i] - c.recompute_s);
      out.compute_only.last_backward_s[i] = std::max(0.0, c.backward_s - c.recompute_s);
    }
    if (!plan.iteration.stages[i].weight.ops.empty()) {
      out.durations.weight_s.resize(n, 0.0);
      out.compute_only.weight_s.resize(n, 0.0);
      out.durations.weight_s[i] = out.compute_only.weight_s[i] = c.weight_step_s;
    }
    // The schedule executor has one latency per boundary, for both directions: the
    // activation of stage i and the gradient of stage i + 1 cross the same boundary (none
    // between DualPipe's two chains).
    if (map.next_stage(int(i)) >= 0) out.durations.p2p_s[i] = forward_lat;
    if (map.prev_stage(int(i)) >= 0) {
      out.durations.p2p_s[i - 1] = std::max(out.durations.p2p_s[i - 1], backward_lat);
    }
  }
  // One transfer per boundary, whether it blocks the sender or not.
  for (size_t i = 0; i + 1 < n; ++i) {
    if (!map.sends_forward(int(i))) continue;
    out.transfer_s[i] = comm_op_s(plan.iteration.stages[i].forward.ops.back(),
                                  views.for_rank(plan.stages[i].rank));
  }
  return out;
}

}  // namespace stratasim
