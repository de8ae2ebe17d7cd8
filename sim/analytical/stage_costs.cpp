#include "sim/analytical/stage_costs.h"

#include <algorithm>

#include "sim/analytical/block_cost_memo.h"
#include "sim/analytical/collective_cost.h"

namespace stratasim {
namespace {

void add_block(StageCost& c, const BlockCost& b, double times) {
  c.forward_s += times * b.forward_s;
  c.backward_s += times * b.backward_s;
  c.recompute_s += times * b.recompute_s;
  c.tp_total_s += times * b.comm_total_s;
  c.tp_exposed_s += times * b.comm_exposed_s;
  c.tp_bytes += times * b.comm_bytes;
  c.model_flops += times * b.model_flops;
  c.hardware_flops += times * b.hardware_flops;
}

// ZeRO-2 reduce-scatters gradients every micro-batch; ZeRO-3 also all-gathers the weights
// before the forward and again before the backward (Rajbhandari et al. SC20, Sec. 7).
void add_zero_traffic(StageCost& c, const VirtualStage& st, const Plan& plan) {
  const int zero = plan.strategy.zero_stage;
  if (zero < 2 || plan.dp <= 1) return;
  // One collective per layer (ZeRO gathers and reduces layer by layer), each paying latency.
  const int per_stage = std::max(1, st.layers);
  auto time = [&](CommKind k, double bytes) {
    return per_stage * collective_time(k, bytes / per_stage, plan.dp_group, plan.hardware,
                                       plan.strategy.collective)
                           .time_s;
  };
  const double grads = st.params * plan.grad_bytes_per_param;
  const double weights = st.params * plan.weight_bytes_per_param;
  double fwd = 0, bwd = time(CommKind::kReduceScatter, grads);
  c.zero_bytes += grads;
  if (zero >= 3) {
    fwd = time(CommKind::kAllGather, weights);
    bwd += time(CommKind::kAllGather, weights);
    c.zero_bytes += 2 * weights;
  }
  c.zero_total_s += fwd + bwd;
  // With prefetching, layer i+1's gather runs during layer i's compute; the first layer's
  // gather (and the last layer's reduce-scatter) cannot hide behind anything.
  const bool overlap = plan.strategy.overlap_dp;
  const double per_layer = 1.0 / std::max(1, st.layers);
  const double fwd_exposed = overlap ? std::max(fwd * per_layer, fwd - c.forward_s) : fwd;
  const double bwd_exposed = overlap ? std::max(bwd * per_layer, bwd - c.backward_s) : bwd;
  c.zero_exposed_s += fwd_exposed + bwd_exposed;
  c.zero_forward_total_s += fwd;
  c.zero_forward_exposed_s += fwd_exposed;
  c.forward_s += fwd_exposed;
  c.backward_s += bwd_exposed;
}

// Blocking sends (Megatron's default p2p): a stage is busy until its activation (forward) or
// gradient (backward) has reached the neighbour, so the transfer joins the sender's op.
void block_on_sends(StageDurations& d) {
  const size_t n = d.forward_s.size();
  for (size_t i = 0; i + 1 < n; ++i) {
    d.forward_s[i] += d.p2p_s[i];
    d.backward_s[i + 1] += d.p2p_s[i];
    d.p2p_s[i] = 0;
  }
}

}  // namespace

bool pipeline_neighbours_share_node(const Plan& plan, int rank) {
  const long long stride = static_cast<long long>(plan.tp) * plan.dp;
  const long long per_node = plan.hardware.node.devices;
  const int next = (rank + 1) % plan.pp;
  return (rank * stride) / per_node == (next * stride) / per_node;
}

StageCosts stage_costs(const Plan& plan) {
  const BlockCost layer = memoized_block_cost(plan.layer, plan);
  const bool transformer = plan.model.family != ModelFamily::kOpGraph;
  const BlockCost embedding = transformer ? memoized_block_cost(plan.embedding, plan) : BlockCost{};
  const BlockCost head = transformer ? memoized_block_cost(plan.head, plan) : BlockCost{};
  StageCosts out;
  const size_t n = plan.stages.size();
  out.stages.resize(n);
  out.durations.forward_s.resize(n);
  out.durations.backward_s.resize(n);
  out.durations.p2p_s.resize(n > 0 ? n - 1 : 0);
  for (size_t i = 0; i < n; ++i) {
    const VirtualStage& st = plan.stages[i];
    StageCost& c = out.stages[i];
    add_block(c, layer, double(st.layers) * plan.block_repeat);
    if (st.has_embedding) add_block(c, embedding, 1);
    if (st.has_head) add_block(c, head, 1);
    add_zero_traffic(c, st, plan);
    out.durations.forward_s[i] = c.forward_s;
    out.durations.backward_s[i] = c.backward_s;
    if (i + 1 < n) {
      out.durations.p2p_s[i] =
          p2p_time(plan.p2p_bytes, pipeline_neighbours_share_node(plan, st.rank), plan.hardware);
    }
  }
  out.transfer_s = out.durations.p2p_s;
  out.compute_only = out.durations;
  std::fill(out.compute_only.p2p_s.begin(), out.compute_only.p2p_s.end(), 0.0);
  if (!plan.strategy.overlap_p2p) block_on_sends(out.durations);
  return out;
}

}  // namespace stratasim
