#include "sim/cost/memory_model.h"

#include <algorithm>

#include "strategies/pipeline/schedule_timing.h"

namespace stratasim {

MemoryBreakdown model_state_memory(double params, int dp, int zero, StateBytes bytes) {
  MemoryBreakdown m;
  m.weights_B = params * bytes.weights / (zero >= 3 ? dp : 1);
  m.gradients_B = params * bytes.gradients / (zero >= 2 ? dp : 1);
  m.optimizer_B = params * bytes.optimizer / (zero >= 1 ? dp : 1);
  return m;
}

namespace {

// What one device holds, summed over its virtual stages: `params` parameters (`experts` of them
// routed experts, `fp8_linear` of the rest linear layers' weights a float8 all-gather holds at
// 1 B, `edge` of them outside the layers: embedding, final norm, head), `activation_sum` saved
// per micro-batch over its `chunks` chunks, `transient` working set; `transient_reserved` the
// largest working set with the caching allocator's slack beside it (Block::allocator_slack_B).
struct RankState {
  double params = 0, experts = 0, fp8_linear = 0, edge = 0;
  double activation_sum = 0, transient = 0, transient_reserved = 0;
  double kept_outputs = 0;  // Strategy::pp_keeps_outputs: every micro-batch's logits
  int chunks = 0;
  // The most the rank's in-flight micro-batches hold at once (peak_held_activation), where
  // its chunks differ; < 0: in_flight x the mean over its chunks.
  double held_activation = -1;
};

// The logits one micro-batch's forward leaves on the last stage: the output projection's
// n x vocab / tp result (gemm_m x gemm_n) in its weights' element size (the head stays 16-bit
// under fp8 training), weight_bytes / (gemm_n x gemm_k).
double head_output_B(const Block& head) {
  for (const LayerOp& op : head.graph.ops) {
    if (op.name == "output_projection" && op.gemm_n > 0 && op.gemm_k > 0) {
      const double element_bytes = op.weight_bytes / (op.gemm_n * op.gemm_k);
      return op.gemm_m * op.gemm_n * element_bytes;
    }
  }
  return 0;
}

// ZeRO-3 gathers a layer's full weights before using it (and prefetches the next); resharded
// per iteration it keeps the whole stage gathered (zero_stage 1 in model_state_memory). FSDP's
// root unit (the parameters outside the layers) stays gathered from the forward through the
// backward (iteration.cpp add_zero_gather). A placed op graph's device gathers its own ops'
// weights. Under Strategy::fp8_fsdp_all_gather the linear layers' weights are held at 1 B;
// Transformer Engine's FP8 parameters (fp8_param_gather) hold 2 B, rowwise and transposed.
double gathered_weights_B(const Plan& plan, const RankState& r) {
  if (plan.fp8_weight_gather && plan.zero_stage < 3) {  // kept gathered: the dense copy in FP8
    const double dense = r.params - r.experts;
    return plan.held_weight_bytes(dense, r.fp8_linear) - dense * plan.weight_bytes_per_param;
  }
  if (plan.zero_stage < 3 || plan.shard <= 1) return 0;
  double largest = plan.stage_blocks.empty() ? plan.layer->params : 0.0;
  double experts = plan.stage_blocks.empty() ? plan.layer->expert_params : 0.0;
  for (const auto& b : plan.stage_blocks) largest = std::max(largest, b->params);  // op graphs
  largest = std::min(largest, r.params);
  experts = std::min(experts, largest);
  // Routed experts every rank holds whole (edp = 1) are not gathered: the layer's rest is.
  const double gathered = plan.edp > 1 ? largest : largest - experts;
  return 2 * plan.held_weight_bytes(gathered, largest - experts) +
         plan.held_weight_bytes(r.edge, 0);
}

// One device's breakdown; `in_flight` chunk-micro-batches held at once.
MemoryBreakdown rank_breakdown(const Plan& plan, const RankState& r, int in_flight) {
  const Strategy& s = plan.strategy;
  const StateBytes state{plan.weight_bytes_per_param, plan.grad_state_bytes_per_param,
                         plan.optimizer_bytes_per_param};
  // Routed experts' states are sharded over the ranks holding the same experts (edp).
  // Inference holds the weights only: no gradients, no optimizer states.
  const StateBytes held = plan.inference() ? StateBytes{state.weights, 0, 0} : state;
  MemoryBreakdown m = model_state_memory(r.params - r.experts, plan.shard, plan.zero_stage, held);
  if (r.experts > 0) {
    StateBytes expert_state = held;
    if (!plan.inference()) expert_state.gradients = plan.expert_grad_state_bytes_per_param;
    const MemoryBreakdown e = model_state_memory(r.experts, plan.edp, plan.zero_stage, expert_state);
    m.weights_B += e.weights_B, m.gradients_B += e.gradients_B, m.optimizer_B += e.optimizer_B;
  }
  m.weights_B += gathered_weights_B(plan, r);
  // PipeDream weight stashing: one weight version per in-flight micro-batch.
  if (s.schedule == ScheduleKind::kPipeDreamAsync) {
    m.weights_B *= std::max(1, in_flight);
  }
  const double saved = r.held_activation >= 0 ? r.held_activation
                                              : in_flight * r.activation_sum / std::max(1, r.chunks);
  m.activations_B = saved + r.kept_outputs;
  m.transient_B = r.transient;
  // The allocator's high-water mark sits above the tensors' when a working set leaves holes
  // its later tensors do not fit (the eager loss: allocator_replay.h), by what exceeds the
  // rank's largest working set.
  m.fragmentation_B = std::max(0.0, r.transient_reserved - r.transient);
  // p2p send and receive buffers; the gradient bucket being reduced.
  m.buffers_B = (plan.pp > 1 ? 2 * plan.p2p_bytes : 0) +
                (plan.dp > 1 && !plan.inference()
                     ? std::min(plan.dp_bucket_B, r.params * plan.grad_bytes_per_param)
                     : 0);
  set_runtime_reserve(m, plan.hardware.device.reserved_memory_B, plan.hardware.device.cuda_context_B);
  // Optimizer offload (ZeRO-Offload, Ren et al. 2021, Sec. 4): the optimizer-state shard leaves
  // the device for host memory, where the CPU also keeps the fp32 gradient shard it steps with.
  if (s.offload == Offload::kOptimizer) {
    const double shard = plan.zero_stage >= 1 ? plan.shard : 1;
    m.host_B = m.optimizer_B + 4.0 * (r.params - r.experts) / shard +
               (r.experts > 0 ? 4.0 * r.experts / plan.edp : 0.0);
    m.optimizer_B = 0;
  }
  return m;
}

}  // namespace

std::vector<MemoryBreakdown> rank_memory(const Plan& plan, const std::vector<int>& in_flight) {
  std::vector<MemoryBreakdown> out(plan.pp);
  // One pass over the virtual stages, summed per rank (pp x v stages: not pp passes).
  std::vector<RankState> sums(plan.pp);
  // Saved per micro-batch, by rank and chunk (rank r's chunks at r x chunks): reused per thread,
  // a search asking for millions of plans.
  thread_local std::vector<double> chunk_activation;
  chunk_activation.assign(static_cast<size_t>(plan.pp) * plan.chunks, 0.0);
  for (const VirtualStage& st : plan.stages) {
    RankState& a = sums[st.rank];
    a.params += st.params;
    a.experts += st.expert_params;
    a.fp8_linear += plan.stage_fp8_gathered_params(st);
    a.edge += st.params - plan.stage_linear_params(st);
    a.activation_sum += st.activation_B;
    if (st.chunk < plan.chunks) chunk_activation[st.rank * plan.chunks + st.chunk] += st.activation_B;
    auto hold = [&a](const Block& b) {
      a.transient = std::max(a.transient, b.peak_transient_B);
      a.transient_reserved = std::max(a.transient_reserved, b.peak_transient_B + b.allocator_slack_B);
    };
    for (const auto& [block, times] : plan.layer_runs(st)) {
      if (times > 0) hold(*block);
    }
    if (st.has_head && plan.head) {
      const Block& head = *plan.head;
      const double kept = plan.strategy.pp_keeps_outputs && plan.pp > 1 ? head_output_B(head) : 0;
      // The eager loss's hole is where it freed the logits (allocator_replay.h); logits the
      // pipeline keeps fill it.
      a.transient = std::max(a.transient, head.peak_transient_B);
      const double hole = std::max(0.0, head.allocator_slack_B - kept);
      a.transient_reserved = std::max(a.transient_reserved, head.peak_transient_B + hole);
      a.kept_outputs += plan.micro_batches * kept;
    }
    ++a.chunks;
  }
  // Placement (op graphs, pp 1): the replica's devices hold different ops; the rank reports
  // its fullest device.
  if (!plan.placed.empty()) {
    MemoryBreakdown fullest;
    for (const PlacedDevice& d : plan.placed) {
      RankState r;
      r.params = d.params;
      r.activation_sum = d.activation_B * plan.block_repeat;
      r.transient = r.transient_reserved = d.peak_transient_B;
      r.chunks = 1;
      const MemoryBreakdown m = rank_breakdown(plan, r, in_flight[0]);
      if (m.total() > fullest.total()) fullest = m;
    }
    out[0] = fullest;
    return out;
  }
  for (int r = 0; r < plan.pp; ++r) {
    RankState& a = sums[r];
    // Chunks of unequal activations: which micro-batches of which chunk the schedule holds at
    // its peak (an interleaved rank's first chunks more than its last: the head's chunk).
    if (plan.chunks > 1 && !plan.inference()) {
      const double* bytes = chunk_activation.data() + static_cast<size_t>(r) * plan.chunks;
      const auto [low, high] = std::minmax_element(bytes, bytes + plan.chunks);
      if (*high > *low * (1 + 1e-9)) {
        a.held_activation = peak_held_activation(plan.strategy.schedule, plan.pp, plan.micro_batches,
                                                 plan.chunks, r, bytes);
      }
    }
    out[r] = rank_breakdown(plan, a, in_flight[r]);
  }
  return out;
}

}  // namespace stratasim
