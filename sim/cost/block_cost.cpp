#include "sim/cost/block_cost.h"

#include <algorithm>

#include "sim/cost/collective_cost.h"
#include "sim/cost/concurrent_kernels.h"
#include "sim/cost/device_variability.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/placed_kernels.h"

namespace stratasim {
namespace {

struct PhaseSums {
  double time_s = 0, recompute_s = 0, weight_s = 0, comm_total_s = 0, comm_exposed_s = 0,
         comm_bytes = 0, cp_total_s = 0, cp_exposed_s = 0, cp_bytes = 0, ep_total_s = 0,
         ep_exposed_s = 0, ep_bytes = 0, mp_total_s = 0, mp_exposed_s = 0, mp_bytes = 0;
  double model_flops = 0, hardware_flops = 0;
};

// With overlap, a collective runs concurrently with the GEMM next to it (chunked
// all-gather/reduce-scatter pipelined with the GEMM, as in Megatron-Core's TP overlap); what
// exceeds that GEMM stays exposed, and the GEMM is slowed while they overlap.
double neighbour_s(const std::vector<double>& times, const std::vector<Kernel>& ks, size_t i,
                   OpClass cls) {
  double best = 0;
  if (i > 0 && ks[i - 1].cls == cls) best = std::max(best, times[i - 1]);
  if (i + 1 < ks.size() && ks[i + 1].cls == cls) best = std::max(best, times[i + 1]);
  return best;
}

// The fused attention a context-parallel exchange runs beside: the nearest one either side
// past the exchanges next to it (the K/V gather and the dK/dV ring of a gathered rotation).
double attention_beside_s(const std::vector<double>& times, const std::vector<Kernel>& ks, size_t i) {
  double best = 0;
  size_t j = i;
  while (j > 0 && ks[j - 1].cls == OpClass::kCollective) --j;
  if (j > 0 && ks[j - 1].cls == OpClass::kFlashAttention) best = std::max(best, times[j - 1]);
  j = i;
  while (j + 1 < ks.size() && ks[j + 1].cls == OpClass::kCollective) ++j;
  if (j + 1 < ks.size() && ks[j + 1].cls == OpClass::kFlashAttention) best = std::max(best, times[j + 1]);
  return best;
}

// PyTorch's async TP (TpOverlap::kMicroPipeline) decomposes an all-gather together with the
// matmuls that consume it (the kernel after it) and a reduce-scatter with the matmul that
// produces it (the kernel before it), when that is a single mm: a reduce-scatter of a sum of
// matmuls (the input gradient of q, k, v or of gate and up as separate nn.Linear modules,
// Kernel::mm_calls > 1) is not a match for the pass (micro_pipeline_tp.py, _find_producer_matmul),
// nor is an all-reduce (no sequence parallelism). The GEMM kernel it fuses with, -1 for none.
int micro_pipeline_partner(const std::vector<Kernel>& ks, size_t i) {
  if (ks[i].comm == CommKind::kAllGather) {
    return i + 1 < ks.size() && ks[i + 1].cls == OpClass::kMatmul ? static_cast<int>(i + 1) : -1;
  }
  if (ks[i].comm == CommKind::kReduceScatter) {
    const bool single_mm = i > 0 && ks[i - 1].cls == OpClass::kMatmul && ks[i - 1].mm_calls <= 1;
    return single_mm ? static_cast<int>(i - 1) : -1;
  }
  return -1;
}

// The decomposed pair runs as n = tp steps (symm_mem's fused_all_gather_matmul and
// fused_matmul_reduce_scatter): a GEMM on 1/n of the rows per step, at that smaller GEMM's
// efficiency, each but one (the local shard's) beside a shard's transfer, which slows it by
// the device's overlap_slowdown s. The pair takes c + (n - 1) max(c s, t / (n - 1)) for a
// collective t and a step GEMM c; the collective adds that less the undecomposed GEMM M.
// FP8 operands are cast once, before the fused op (its fused_*_scaled_matmul takes them
// cast), so the steps run without casts and the GEMM's casts join the pair once.
double micro_pipeline_exposed_s(const Kernel& gemm, double gemm_s, double comm_s, int n,
                                const Plan& plan, double slowest) {
  if (n <= 1) return 0;
  Kernel step = gemm;
  step.gemm_m /= n;
  step.matmul_flops /= n;
  step.other_flops /= n;
  step.bytes /= n;
  const Strategy& s = plan.strategy;
  const DeviceSpec& d = plan.hardware.device;
  const AttentionKernel attention = s.fusion.attention_kernel;
  const KernelTime part = kernel_time(step, d, s.dtype, attention, slowest, s.fp8_scaling);
  const double casts = kernel_time(gemm, d, s.dtype, attention, slowest, s.fp8_scaling).cast_s;
  const double c = part.total_s - part.cast_s;
  const double pair = casts + c + (n - 1) * std::max(c * d.overlap_slowdown, comm_s / (n - 1));
  return std::max(0.0, pair - gemm_s);
}

// Strategy::async_tp_grad_reduce: a backward tensor-parallel all-reduce or reduce-scatter right
// after a GEMM with weights is that column-parallel layer's input gradient; it runs beside the
// GEMM's weight-gradient part (its share of the kernel's FLOP). 0 when there is none.
double weight_gradient_beside_s(const std::vector<double>& times, const std::vector<Kernel>& ks,
                                size_t i) {
  const Kernel& c = ks[i];
  if (c.phase != Phase::kBackward || c.group != GroupKind::kTensor || i == 0) return 0;
  if (c.comm != CommKind::kAllReduce && c.comm != CommKind::kReduceScatter) return 0;
  const Kernel& g = ks[i - 1];
  if (g.cls != OpClass::kMatmul || g.matmul_flops <= 0) return 0;
  return times[i - 1] * g.weight_grad_flops / g.matmul_flops;
}

PhaseSums sum_kernels(const std::vector<Kernel>& ks, const Plan& plan) {
  const std::vector<KernelTiming> times = kernel_timings(ks, plan);
  PhaseSums sum;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Kernel& k = ks[i];
    const double t = times[i].exposed_s;
    if (k.cls == OpClass::kCollective && k.group == GroupKind::kContext) {
      sum.cp_total_s += times[i].total_s;
      sum.cp_bytes += k.comm_bytes;
      sum.cp_exposed_s += t;
    } else if (k.cls == OpClass::kCollective && k.group == GroupKind::kExpert) {
      sum.ep_total_s += times[i].total_s;
      sum.ep_bytes += k.comm_bytes;
      sum.ep_exposed_s += t;
    } else if (k.cls == OpClass::kCollective) {
      sum.comm_total_s += times[i].total_s;
      sum.comm_bytes += k.comm_bytes;
      sum.comm_exposed_s += t;
    } else {
      sum.hardware_flops += k.model_flops;
      if (k.phase != Phase::kRecompute) sum.model_flops += k.model_flops;
    }
    sum.time_s += t;
    if (k.phase == Phase::kRecompute) sum.recompute_s += t;
    // W: the weight-gradient GEMM's share of the backward kernel, by FLOPs.
    if (k.phase == Phase::kBackward && k.weight_grad_flops > 0 && k.matmul_flops > 0) {
      sum.weight_s += t * k.weight_grad_flops / k.matmul_flops;
    }
  }
  return sum;
}

}  // namespace

double ep_paired_share(const Plan& plan) {
  // GPipe runs every forward before any backward: nothing to pair.
  if (plan.strategy.schedule == ScheduleKind::kGPipe) return 0;
  const double passes = double(std::max(1, plan.micro_batches)) * std::max(1, plan.chunks);
  double warmup = 1;
  if (plan.pp > 1) {
    warmup = plan.chunks > 1 ? (plan.pp - 1) + (plan.chunks - 1.0) * plan.pp + 1 : (plan.pp - 1) / 2.0 + 1;
  }
  return std::clamp(1 - warmup / passes, 0.0, 1.0);
}

namespace {

// Strategy::overlap_ep: a forward and a backward of different micro-batches run interleaved,
// each pass's token all-to-alls beside the other pass's compute (its kernels without exposed
// communication). Where the device states the exchange's rate beside compute
// (DeviceSpec::ep_overlap_rate, measured), the partner compute P hides rate x P of the
// exchange's time C, unslowed itself: C - rate P stays exposed. Otherwise what exceeds P stays
// exposed and the compute runs overlap_slowdown times slower while they overlap, as for TP
// overlap above. Only the steady state's passes have a partner (ep_paired_share): the warm-up
// forwards and cool-down backwards run alone, their all-to-alls exposed.
void overlap_expert_all_to_all(PhaseSums& f, PhaseSums& b, const Plan& plan) {
  if (!plan.strategy.overlap_ep || f.ep_total_s + b.ep_total_s <= 0) return;
  const double interference = 1 - 1 / plan.hardware.device.overlap_slowdown;
  const double rate = plan.hardware.device.ep_overlap_rate;
  const double paired = ep_paired_share(plan);
  auto compute = [](const PhaseSums& s) {
    return s.time_s - s.comm_exposed_s - s.cp_exposed_s - s.ep_exposed_s;
  };
  const double beside_f = compute(b), beside_b = compute(f);
  auto hide = [&](PhaseSums& s, double partner) {
    const double overlapped = rate > 0 ? std::max(s.ep_total_s - rate * partner, 0.0)
                                       : std::max(s.ep_total_s - partner, interference * s.ep_total_s);
    const double exposed = paired * overlapped + (1 - paired) * s.ep_total_s;
    s.time_s += exposed - s.ep_exposed_s;
    s.ep_exposed_s = exposed;
  };
  hide(f, beside_f);
  hide(b, beside_b);
}

// The forward, recomputation and backward of an operator-graph block on several streams and,
// under a placement, on several devices with the sends between them (placed_kernels.h); the
// recomputation finishes before the backward starts. The weight-gradient share keeps its
// proportion of the backward.
void run_placed_block(const Block& b, const Plan& plan, PhaseSums& f, PhaseSums& bw) {
  const PlacedRun fw = run_placed(b, b.forward, 0, b.forward.size(), false, true, plan);
  size_t recompute = 0;
  while (recompute < b.backward.size() && b.backward[recompute].phase == Phase::kRecompute) ++recompute;
  const PlacedRun r = run_placed(b, b.backward, 0, recompute, false, false, plan);
  const PlacedRun back = run_placed(b, b.backward, recompute, b.backward.size(), true, true, plan);
  f.time_s = fw.makespan_s;
  f.mp_total_s = fw.transfer_s, f.mp_exposed_s = fw.transfer_exposed_s, f.mp_bytes = fw.transfer_bytes;
  const double serial_back = bw.time_s - bw.recompute_s;
  if (serial_back > 0) bw.weight_s *= back.makespan_s / serial_back;
  bw.recompute_s = r.makespan_s;
  bw.time_s = r.makespan_s + back.makespan_s;
  bw.mp_total_s = back.transfer_s, bw.mp_exposed_s = back.transfer_exposed_s, bw.mp_bytes = back.transfer_bytes;
}

// Kernels the host issues for k: a kernel fused into its predecessor adds none.
double host_launches(const Kernel& k) {
  if (k.cls == OpClass::kCollective) return 1;
  return k.reads_input_fused ? 0 : k.launches;
}

// Strategy::host_overhead: the host issues the kernels of a list one after another, h each,
// running ahead of the device while kernels are longer than their issue. In the steady state of
// identical blocks issued back to back (a stage's layers, micro-batch after micro-batch) the
// device waits sum(h) - sum(device) per list when the host is slower, and never otherwise; the
// wait is spread over the list's compute kernels by their share of the issue time (collectives
// keep their timing, which the SimGrid engine replays as messages).
void add_host_waits(const std::vector<Kernel>& ks, double h, std::vector<KernelTiming>& out) {
  if (h <= 0) return;
  double host = 0, device = 0, compute_host = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    host += h * host_launches(ks[i]);
    device += out[i].exposed_s;
    if (ks[i].cls != OpClass::kCollective) compute_host += h * host_launches(ks[i]);
  }
  const double wait = host - device;
  if (wait <= 0 || compute_host <= 0) return;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (ks[i].cls == OpClass::kCollective) continue;
    const double share = wait * h * host_launches(ks[i]) / compute_host;
    out[i].total_s += share;
    out[i].exposed_s += share;
    out[i].host_wait_s = share;
  }
}

}  // namespace

std::vector<KernelTiming> kernel_timings(const std::vector<Kernel>& ks, const Plan& plan) {
  const HardwareModel& hw = plan.hardware;
  const Strategy& s = plan.strategy;
  std::vector<double> times(ks.size());
  std::vector<KernelTiming> out(ks.size());
  const double slowest = slowest_device_factor(hw);
  for (size_t i = 0; i < ks.size(); ++i) {
    const Kernel& k = ks[i];
    if (k.cls == OpClass::kCollective) {
      const CommGroup& group = k.group == GroupKind::kContext  ? plan.cp_group
                               : k.group == GroupKind::kExpert ? plan.ep_group
                                                               : plan.tp_group;
      const CollectiveChoice c =
          k.group == GroupKind::kExpert && k.comm == CommKind::kAllToAll
              ? CollectiveChoice{expert_exchange_s(k.comm_bytes, plan), CollectiveAlgorithm::kRing}
              : collective_time(k.comm, k.comm_bytes, group, hw, s.collective);
      times[i] = c.time_s;
      out[i].algorithm = c.algorithm;
    } else {
      times[i] = kernel_time(k, hw.device, s.dtype, s.fusion.attention_kernel, slowest,
                             s.fp8_scaling).total_s;
    }
  }
  // While the collective runs, the GEMM beside it is slowed (overlap_slowdown): the pair takes
  // max(t, M + (1 - 1/s) t) for a collective t and a GEMM M (the GEMM runs at 1/s of its speed
  // for t), so the collective adds max(t - M, (1 - 1/s) t) to the GEMM.
  const double interference = 1 - 1 / hw.device.overlap_slowdown;
  // Ring attention's exchange (overlaps_attention) runs beside the attention kernel the same way.
  for (size_t i = 0; i < ks.size(); ++i) {
    double t = times[i];
    const bool collective = ks[i].cls == OpClass::kCollective;
    const bool tp_overlap = collective && s.overlap_tp && ks[i].group == GroupKind::kTensor;
    const bool micro_pipeline = tp_overlap && s.tp_overlap == TpOverlap::kMicroPipeline;
    if (!collective) {
      // compute: its own time
    } else if (micro_pipeline && !ks[i].overlaps_attention) {
      const int j = micro_pipeline_partner(ks, i);
      if (j >= 0) {
        t = micro_pipeline_exposed_s(ks[j], times[j], t, plan.tp_group.size, plan, slowest);
      }
    } else if (tp_overlap || ks[i].overlaps_attention) {
      const double m = ks[i].overlaps_attention
                           ? ks[i].overlap_window * attention_beside_s(times, ks, i)
                           : neighbour_s(times, ks, i, OpClass::kMatmul);
      if (m > 0) t = std::max(t - m, interference * t);
    } else if (s.async_tp_grad_reduce) {
      const double w = weight_gradient_beside_s(times, ks, i);
      if (w > 0) t = std::max(t - w, interference * t);
    }
    out[i].total_s = times[i];
    out[i].exposed_s = t;
  }
  add_host_waits(ks, s.host_overhead_s, out);
  return out;
}

BlockCost block_cost(const Block& b, const Plan& plan) {
  PhaseSums f = sum_kernels(b.forward, plan);
  PhaseSums bw = sum_kernels(b.backward, plan);
  overlap_expert_all_to_all(f, bw, plan);
  if ((plan.strategy.streams > 1 || plan.mp > 1) && plan.model.family == ModelFamily::kOpGraph) {
    run_placed_block(b, plan, f, bw);
  }
  BlockCost c;
  c.forward_s = f.time_s;
  c.backward_s = bw.time_s;
  c.recompute_s = bw.recompute_s;
  c.weight_s = bw.weight_s;
  c.comm_total_s = f.comm_total_s + bw.comm_total_s;
  c.comm_exposed_s = f.comm_exposed_s + bw.comm_exposed_s;
  c.comm_bytes = f.comm_bytes + bw.comm_bytes;
  c.cp_total_s = f.cp_total_s + bw.cp_total_s;
  c.cp_exposed_s = f.cp_exposed_s + bw.cp_exposed_s;
  c.cp_bytes = f.cp_bytes + bw.cp_bytes;
  c.ep_total_s = f.ep_total_s + bw.ep_total_s;
  c.ep_exposed_s = f.ep_exposed_s + bw.ep_exposed_s;
  c.ep_bytes = f.ep_bytes + bw.ep_bytes;
  c.mp_total_s = f.mp_total_s + bw.mp_total_s;
  c.mp_exposed_s = f.mp_exposed_s + bw.mp_exposed_s;
  c.mp_bytes = f.mp_bytes + bw.mp_bytes;
  c.model_flops = f.model_flops + bw.model_flops;
  c.hardware_flops = f.hardware_flops + bw.hardware_flops;
  return c;
}

}  // namespace stratasim
