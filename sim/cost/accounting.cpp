#include "sim/cost/accounting.h"

#include <algorithm>
#include <string>

#include "sim/core/units.h"
#include "sim/cost/group_views.h"
#include "sim/cost/memory_model.h"
#include "strategies/lowering/mixed_cluster.h"
#include "strategies/pipeline/schedule_timing.h"

namespace stratasim {

StageTotals sum_stages(Prediction& p, const Plan& plan, const StageCosts& costs) {
  const double m = plan.micro_batches_per_stage();
  StageTotals t;
  std::vector<double> rank_compute(plan.pp, 0), rank_recompute(plan.pp, 0);
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StageCost& c = costs.stages[i];
    const int r = plan.stages[i].rank;
    rank_compute[r] +=
        m * (c.forward_s + c.backward_s + c.weight_step_s - c.tp_exposed_s - c.cp_exposed_s -
             c.ep_exposed_s - c.mp_exposed_s - c.zero_exposed_s - c.amax_s);
    rank_recompute[r] += m * c.recompute_s;
    t.model_flops += c.model_flops;
    t.hardware_flops += c.hardware_flops;
    p.forward_s = std::max(p.forward_s, c.forward_s);
    p.backward_s = std::max(p.backward_s, c.backward_s);
    if (r == 0) {  // communication per device is reported for rank 0's chunks
      t.tp_total += m * c.tp_total_s, t.tp_exposed += m * c.tp_exposed_s;
      t.tp_bytes += m * c.tp_bytes;
      t.cp_total += m * c.cp_total_s, t.cp_exposed += m * c.cp_exposed_s;
      t.cp_bytes += m * c.cp_bytes;
      t.ep_total += m * c.ep_total_s, t.ep_exposed += m * c.ep_exposed_s;
      t.ep_bytes += m * c.ep_bytes;
      t.mp_total += m * c.mp_total_s, t.mp_exposed += m * c.mp_exposed_s;
      t.mp_bytes += m * c.mp_bytes / plan.mp;  // a replica's sends over its devices
      t.zero_total += m * c.zero_total_s, t.zero_exposed += m * c.zero_exposed_s;
      t.zero_bytes += m * c.zero_bytes;
      t.amax_s += m * c.amax_s, t.amax_bytes += m * c.amax_bytes;
    }
  }
  const auto busiest = std::max_element(rank_compute.begin(), rank_compute.end());
  p.compute_s = *busiest;
  p.recompute_s = rank_recompute[busiest - rank_compute.begin()];
  return t;
}

namespace {

// The peak dense rate per device in `dtype`, averaged over a mixed cluster's devices.
double mean_peak_flops(const HardwareModel& hw, DType dtype) {
  if (!hw.mixed()) return hw.device.peak_flops[static_cast<int>(dtype)];
  double sum = 0;
  for (const DeviceGroup& g : hw.groups) sum += g.device.peak_flops[static_cast<int>(dtype)] * g.num_devices;
  return sum / hw.num_devices;
}

// A mixed cluster: each rank's runtime reserve is its own device's, and each rank must fit its
// own device; the reported capacity is the peak rank's.
// A rank whose devices span several groups (data parallel across them) holds the same bytes
// on each: it fits when it fits on every group's device, with that device's runtime reserve;
// the tightest group (least room left) is the one reported.
void fit_groups(Prediction& p, const Plan& plan) {
  p.fits = true;
  p.peak_memory_B = 0;
  for (int r = 0; r < plan.pp; ++r) {
    MemoryBreakdown& m = p.rank_memory[r];
    const DeviceSpec* tightest = nullptr;
    double least_room = 0;
    for (int g : pipeline_rank_groups(plan, r)) {
      const DeviceSpec& d = plan.hardware.groups[g].device;
      set_runtime_reserve(m, d.reserved_memory_B, d.cuda_context_B);
      const double room = d.memory_B - m.total();
      if (!tightest || room < least_room) tightest = &d, least_room = room;
    }
    set_runtime_reserve(m, tightest->reserved_memory_B, tightest->cuda_context_B);
    p.fits = p.fits && least_room >= 0;
    if (m.total() > p.peak_memory_B) {
      p.peak_memory_B = m.total();
      p.peak_rank = r;
      p.capacity_B = tightest->memory_B;
    }
  }
}

}  // namespace

const char* context_comm_label(const Plan& plan) {
  if (plan.model.family == ModelFamily::kOpGraph) return "cp halo exchange and row gathers (spatial split)";
  switch (plan.strategy.cp_comm) {
    case CpComm::kAllToAll: return "cp Ulysses all-to-alls (sequence <-> heads)";
    case CpComm::kAllGather: return "cp K/V all-gather, dK/dV reduce-scatter";
    case CpComm::kRing: break;
  }
  if (plan.strategy.cp_rotate == CpRotate::kAllGather) return "cp ring attention, K/V gathered once, dK/dV ring";
  return "cp ring attention K/V exchange";
}

const char* fp8_amax_label(const Plan& plan) {
  return plan.strategy.fp8_amax_reduction == Fp8AmaxReduction::kTensor
             ? "fp8 amax all-reduce per chunk pass, tp"
             : "fp8 amax all-reduce per chunk pass";  // over the stage's tp x cp x dp ranks
}

const CommGroup& fp8_amax_group(const Plan& plan) {
  return plan.strategy.fp8_amax_reduction == Fp8AmaxReduction::kTensor
             ? plan.tp_group
             : plan.iteration.groups[static_cast<int>(GroupKind::kStage)];
}

void fill_rates(Prediction& p, const Plan& plan, const StageTotals& t) {
  const double m = plan.micro_batches_per_stage(), devices = plan.hardware.num_devices;
  const double replicas = double(plan.dp) * plan.tp;  // stage FLOPs are per device
  p.model_flops = t.model_flops * m * replicas;
  p.hardware_flops = t.hardware_flops * m * replicas;
  p.samples_per_s = plan.samples_per_iteration / p.iteration_s;
  // Tokens: sequence positions (an RNN's time steps); a CNN's sample is one image.
  p.tokens_per_s = p.samples_per_s * (plan.model.family == ModelFamily::kOpGraph
                                          ? plan.block_repeat
                                          : plan.model.transformer.seq_len);
  p.model_flops_per_device_s = p.model_flops / (p.iteration_s * devices);
  p.hardware_flops_per_device_s = p.hardware_flops / (p.iteration_s * devices);
  const double peak = mean_peak_flops(plan.hardware, plan.strategy.dtype);
  p.mfu = p.model_flops_per_device_s / peak;
  p.hfu = p.hardware_flops_per_device_s / peak;
}

void fill_memory(Prediction& p, const Plan& plan) {
  const Strategy& s = plan.strategy;
  p.rank_memory =
      rank_memory(plan, peak_in_flight(s.schedule, plan.pp, plan.micro_batches, plan.chunks));
  for (int r = 0; r < plan.pp; ++r) {
    if (p.rank_memory[r].total() > p.peak_memory_B) {
      p.peak_memory_B = p.rank_memory[r].total();
      p.peak_rank = r;
    }
  }
  p.capacity_B = plan.hardware.device.memory_B;
  p.fits = p.peak_memory_B <= p.capacity_B;
  if (plan.hardware.mixed()) fit_groups(p, plan);
  for (const MemoryBreakdown& m : p.rank_memory) {
    p.peak_reserved_B = std::max(p.peak_reserved_B, m.reserved());
    p.peak_allocated_B = std::max(p.peak_allocated_B, m.allocated());
  }
  // Optimizer offload: the node's host memory holds what its devices offload.
  double host = 0;
  for (const MemoryBreakdown& m : p.rank_memory) host = std::max(host, m.host_B);
  if (host > 0) {
    const HardwareModel& hw = plan.hardware;
    const double per_node = host * std::min(hw.node.devices, hw.num_devices);
    const bool host_fits = hw.node.host_memory_B <= 0 || per_node <= hw.node.host_memory_B;
    p.fits = p.fits && host_fits;
    p.notes.push_back("offload: host memory holds " + format_bytes(host) + " per device, " +
                      format_bytes(per_node) + " per node of " + format_bytes(hw.node.host_memory_B) +
                      (host_fits ? "" : ": does not fit"));
  }
}

void add_plan_notes(Prediction& p, const Plan& plan) {
  if (plan.strategy.zero_stage > 0 && plan.dp == 1) {
    p.notes.push_back("warning: ZeRO stage " + std::to_string(plan.strategy.zero_stage) +
                      " with dp = 1 shards nothing (ZeRO shards over the data-parallel group); "
                      "its memory and communication are those of stage 0");
  }
}

double pipeline_latency_s(const StageCosts& costs) {
  double t = 0;
  const StageDurations& d = costs.durations;
  for (size_t i = 0; i < d.forward_s.size(); ++i) {
    t += d.forward_s[i];
    if (i < d.p2p_s.size()) t += d.p2p_s[i];  // a non-blocking send's latency (blocking: in forward_s)
  }
  return t;
}

double dp_sync_bytes(const Plan& plan) {
  double most = 0;
  for (const auto& tail : plan.iteration.tail) {
    double bytes = 0;
    for (const IterOp& op : tail) {
      if (op.kind == IterOpKind::kGradientReduce || op.kind == IterOpKind::kParameterGather) {
        bytes += op.bytes;
      }
    }
    most = std::max(most, bytes);
  }
  return most;
}

}  // namespace stratasim
