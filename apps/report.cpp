#include "apps/report.h"

#include <cstdio>
#include <set>

#include "sim/cost/collective_cost.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/device_variability.h"
#include "sim/cost/kernel_cost.h"
#include "sim/core/text.h"
#include "sim/core/units.h"
#include "validate/intervals.h"

namespace stratasim {
namespace {

std::string pct(double x) { return format_text("%.1f%%", 100 * x); }

std::string memory_table(const Prediction& p) {
  std::string out = format_text("  %-5s %11s %11s %11s %11s %11s %11s %11s %11s %11s %11s\n", "rank",
                                 "weights", "gradients", "optimizer", "activations", "transient",
                                 "buffers", "workspace", "fragmented", "context", "total");
  for (size_t r = 0; r < p.rank_memory.size(); ++r) {
    const MemoryBreakdown& m = p.rank_memory[r];
    out += format_text("  %-5zu %11s %11s %11s %11s %11s %11s %11s %11s %11s %11s%s\n", r,
               format_bytes(m.weights_B).c_str(), format_bytes(m.gradients_B).c_str(),
               format_bytes(m.optimizer_B).c_str(), format_bytes(m.activations_B).c_str(),
               format_bytes(m.transient_B).c_str(), format_bytes(m.buffers_B).c_str(),
               format_bytes(m.workspace_B).c_str(), format_bytes(m.fragmentation_B).c_str(),
               format_bytes(m.context_B).c_str(), format_bytes(m.total()).c_str(),
               int(r) == p.peak_rank ? "  <- peak" : "");
  }
  out += format_text("  views    allocated %s (the tensors: max_memory_allocated), reserved %s "
                     "(+ allocator workspace and fragmentation: max_memory_reserved), device %s "
                     "(+ CUDA context: nvidia-smi)\n",
                     format_bytes(p.peak_allocated_B).c_str(), format_bytes(p.peak_reserved_B).c_str(),
                     format_bytes(p.peak_memory_B).c_str());
  return out;
}

std::string comm_table(const Prediction& p) {
  std::string out = format_text("  %-58s %12s %12s %12s\n", "communication", "bytes/dev", "total",
                        "exposed");
  for (const CommStat& c : p.comms) {
    out += format_text("  %-58s %12s %12s %12s\n", c.description().c_str(), format_bytes(c.bytes).c_str(),
               format_seconds(c.total_s).c_str(), format_seconds(c.exposed_s).c_str());
  }
  out += format_text("  %-58s %12s %12s %12s\n", "all", "", format_seconds(p.comm_total_s).c_str(),
             format_seconds(p.comm_exposed_s).c_str());
  return out;
}

std::string kernels_with_times(const Plan& plan, const std::vector<Kernel>& ks, const char* title) {
  // The engines' per-kernel times (block_cost.h): the slowest device's compute, the waits for
  // the host, collectives over the group they span; the label says what bounds the kernel.
  const std::vector<KernelTiming> timings = kernel_timings(ks, plan);
  std::vector<double> times;
  std::vector<const char*> bound;
  double sum = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Kernel& k = ks[i];
    times.push_back(timings[i].total_s);
    if (k.cls == OpClass::kCollective) {
      bound.push_back("network");
    } else if (timings[i].host_wait_s > 0.5 * timings[i].total_s) {
      bound.push_back("host");
    } else {
      const KernelTime t = kernel_time(k, plan.hardware.device, plan.strategy.dtype,
                                       plan.strategy.fusion.attention_kernel, 1.0,
                                       plan.strategy.fp8_scaling);
      bound.push_back(t.compute_s >= t.memory_s ? "compute" : "memory");
    }
    sum += times.back();
  }
  std::string out = format_text("  %s: %s per micro-batch\n", title, format_seconds(sum).c_str());
  const LayerGraph& g = plan.layer->graph;
  for (size_t i = 0; i < ks.size(); ++i) {
    std::string name;
    for (int o = ks[i].first_op; o <= ks[i].last_op; ++o) {
      const LayerOp& op = g.ops[o];
      name += (name.empty() ? "" : "+") +
              (op.source_op >= 0 ? plan.model.graph.ops[op.source_op].name : std::string(op.name));
    }
    out += format_text("    %-10s %-40s %10s %6.1f%%  %s\n", std::string(phase_name(ks[i].phase)).c_str(),
               name.substr(0, 40).c_str(), format_seconds(times[i]).c_str(),
               100 * times[i] / sum, bound[i]);
  }
  return out;
}

}  // namespace

std::string kernel_time_table(const Plan& plan) {
  return kernels_with_times(plan, plan.layer->forward, "layer forward") +
         kernels_with_times(plan, plan.layer->backward, "layer backward (incl. recomputation)");
}

std::string infeasible_message(const std::string& file, const std::string& variant,
                               const Infeasible& why) {
  std::string path = variant.empty() || variant == "base" ? "strategy" : "variants." + variant;
  if (!why.field.empty()) path += "." + why.field;
  return "error: " + file + ": " + path + ": infeasible (" + std::string(reason_name(why.reason)) +
         "): " + why.detail + "\n";
}

std::string describe_model(const ModelSpec& m) {
  if (m.family == ModelFamily::kOpGraph) {
    return format_text("%s: operator graph, %zu ops%s, %s params", m.name.c_str(), m.graph.ops.size(),
               m.graph.repeat > 1 ? format_text(" x %d steps", m.graph.repeat).c_str() : "",
               format_count(total_params(m)).c_str());
  }
  const TransformerSpec& t = m.transformer;
  // "seq 4096 (window 129 on 18 layers)"
  const std::string window =
      t.windowed_share() > 0
          ? format_text(" (window %d on %d layers)", t.sliding_window,
                        t.windowed_layers < 0 ? t.layers : t.windowed_layers)
          : "";
  if (t.moe.enabled()) {
    const MoeSpec& e = t.moe;
    const std::string shared =
        e.shared_experts > 0 ? format_text(" + %d shared of %d", e.shared_experts, t.shared_ffn()) : "";
    const int dense = std::min(e.first_dense_layers, t.layers);
    const double active = (t.layers - dense) * active_layer_params(t) +
                          dense * dense_layer_params(t) + embedding_params(t) + head_params(t);
    const std::string attention =
        t.mla.enabled()
            ? format_text("%d heads of MLA (q/kv rank %d/%d, qk %d, v %d)", t.heads, t.mla.q_lora_rank,
                          t.mla.kv_lora_rank, t.qk_head_dim(), t.v_head_dim())
            : format_text("%d heads (%d kv, head dim %d)", t.heads, t.kv_heads_or_heads(), t.head_dim());
    const std::string first = dense > 0 ? format_text(" after %d dense layers", dense) : "";
    return format_text("%s: %s, %d layers, hidden %d, %s, MoE%s: %d experts of "
                       "ffn %d %s, top-%d%s, seq %d%s, vocab %d, %s params (%s active)",
               m.name.c_str(), std::string(family_name(m.family)).c_str(), t.layers, t.hidden,
               attention.c_str(), first.c_str(), e.experts, t.expert_ffn(),
               std::string(activation_name(t.activation)).c_str(), e.top_k, shared.c_str(),
               t.seq_len, window.c_str(), t.vocab, format_count(total_params(m)).c_str(),
               format_count(active).c_str());
  }
  return format_text("%s: %s, %d layers, hidden %d, %d heads (%d kv), ffn %d %s, seq %d%s, vocab %d, %s params",
             m.name.c_str(), std::string(family_name(m.family)).c_str(), t.layers, t.hidden,
             t.heads, t.kv_heads_or_heads(), t.ffn_or_default(),
             std::string(activation_name(t.activation)).c_str(), t.seq_len, window.c_str(), t.vocab,
             format_count(total_params(m)).c_str());
}

std::string describe_cluster(const HardwareModel& hw) {
  if (hw.mixed()) {  // "name: mixed, 16 x A100 (dgx_a100) + 16 x H100 (dgx_h100), nodes of 8, fat_tree"
    std::string groups;
    for (const DeviceGroup& g : hw.groups) {
      groups += format_text("%s%d x %s (%s, %d x %s per node)", groups.empty() ? "" : " + ", g.num_devices,
                            g.device.name.c_str(), g.name.c_str(), g.node.nics, g.node.nic.name.c_str());
    }
    return format_text("%s: mixed, %s, %d nodes of %d, %s", hw.name.c_str(), groups.c_str(), hw.num_nodes(),
                       hw.node.devices, std::string(topology_name(hw.network.topology)).c_str());
  }
  return format_text("%s: %d x %s in %d node(s) of %d (%s %s/dev), %d x %s per node, %s",
             hw.name.c_str(), hw.num_devices, hw.device.name.c_str(), hw.num_nodes(),
             hw.node.devices, hw.node.device_link.name.c_str(),
             format_bandwidth(hw.node.device_link.bandwidth_Bps).c_str(), hw.node.nics,
             hw.node.nic.name.c_str(), std::string(topology_name(hw.network.topology)).c_str());
}

std::string describe_strategy(const Strategy& s, int dp, int micro_batches) {
  const std::string cp = (s.cp > 1 ? format_text(" cp=%d", s.cp) : "") +
                         (s.ep > 1 ? format_text(" ep=%d", s.ep) : "") +
                         (s.shard_group > 0 ? format_text(" shard=%d", s.shard_group) : "") +
                         (s.streams > 1 ? format_text(" streams=%d", s.streams) : "");
  return format_text("tp=%d pp=%d dp=%d%s v=%d zero=%d sp=%s | %s | micro-batch %d, global %d (%d "
             "micro-batches) | recompute %s | fusion %s | overlap dp=%s tp=%s%s | %s",
             s.tp, s.pp, dp, cp.c_str(), s.interleave, s.zero_stage, s.sequence_parallel ? "on" : "off",
             std::string(schedule_name(s.schedule)).c_str(), s.micro_batch, s.global_batch,
             micro_batches, recompute_label(s).c_str(),
             describe_fusion(s.fusion).c_str(), s.overlap_dp ? "on" : "off",
             s.overlap_tp ? "on" : "off",
             s.ep > 1 ? (std::string(s.overlap_ep ? " ep=on" : " ep=off") +
                         (s.ep_dispatch == EpDispatch::kAllToAll ? "" : s.ep_dispatch == EpDispatch::kDeepEP ? " (deepep dispatch)" : " (hybridep dispatch)")).c_str()
                      : "",
             std::string(dtype_name(s.dtype)).c_str());
}

std::string defaults_line(const Scenario& sc, const std::string& variant, const Strategy& s, int devices) {
  size_t index = 0;
  for (size_t i = 0; i < sc.variants.size(); ++i) {
    if (!variant.empty() && sc.variants[i].first == variant) index = i;
  }
  static const std::set<std::string> kNone;
  const std::set<std::string>& set = index < sc.strategy_keys.size() ? sc.strategy_keys[index] : kNone;
  std::vector<std::string> took;
  auto note = [&](const char* key, bool relevant, const std::string& value) {
    if (relevant && !set.count(key)) took.push_back(std::string(key) + " " + value);
  };
  const bool graph = sc.model.family == ModelFamily::kOpGraph;
  note("fusion", true, fusion_label(s.fusion));
  note("recompute", true, std::string(recompute_name(s.recompute)));
  note("micro_batch", true, std::to_string(s.micro_batch));
  note("zero_stage", true, std::to_string(s.zero_stage));
  note("dtype", true, std::string(dtype_name(s.dtype)));
  note("overlap_dp", true, s.overlap_dp ? "on" : "off");
  note("overlap_tp", s.tp > 1, s.overlap_tp ? "on" : "off");
  note("sequence_parallel", s.tp > 1, s.sequence_parallel ? "on" : "off");
  note("schedule", s.pp > 1, std::string(schedule_name(s.schedule)));
  note("streams", graph, std::to_string(s.streams));
  std::string out;
  for (const std::string& t : took) out += (out.empty() ? "" : ", ") + t;
  if (sc.devices_defaulted) out += (out.empty() ? "" : ", ") + format_text("cluster.devices %d (one node)", devices);
  return out.empty() ? "" : "defaults  " + out + " (not set in the scenario; docs/scenario.md)\n";
}

std::string evaluation_report(const Scenario& sc, const Plan& plan, const Prediction& p, const std::string& variant) {
  std::string out = format_text("scenario  %s (%s)\n", sc.name.c_str(), sc.file.c_str());
  if (!sc.description.empty()) out += format_text("          %s\n", sc.description.c_str());
  out += "model     " + describe_model(plan.model) + "\n";
  out += "cluster   " + describe_cluster(plan.hardware) + "\n";
  out += "strategy  " + describe_strategy(plan.strategy, plan.data_parallel(), plan.micro_batches) + "\n";
  out += defaults_line(sc, variant, plan.strategy, plan.hardware.num_devices) + "\n";
  out += format_text("  %-28s %s\n", "iteration time", format_seconds(p.iteration_s).c_str());
  out += format_text("  %-28s %.4g tokens/s, %.4g samples/s\n", "throughput", p.tokens_per_s,
             p.samples_per_s);
  out += format_text("  %-28s %s model (MFU %s), %s hardware (HFU %s)\n", "FLOP/s per device",
             format_flop_rate(p.model_flops_per_device_s).c_str(), pct(p.mfu).c_str(),
             format_flop_rate(p.hardware_flops_per_device_s).c_str(), pct(p.hfu).c_str());
  out += format_text("  %-28s %s, of which recomputation %s\n", "compute (busiest device)",
             format_seconds(p.compute_s).c_str(), format_seconds(p.recompute_s).c_str());
  if (const double slowest = slowest_device_factor(plan.hardware); slowest > 1) {
    out += format_text("  %-28s compute x%.3f: the pace of the slowest of %d devices whose speed "
                       "varies by %.1f%% (sd)\n",
                       "slowest device", slowest, plan.hardware.num_devices,
                       100 * plan.hardware.device.speed_variability);
  }
  out += format_text("  %-28s %s forward, %s backward\n", "per micro-batch (slowest)",
             format_seconds(p.forward_s).c_str(), format_seconds(p.backward_s).c_str());
  out += format_text("  %-28s %s (%s of the %s pipeline; %s with equal stages and free p2p)\n",
                     "pipeline bubble", format_seconds(p.bubble_s).c_str(),
                     pct(p.bubble_fraction).c_str(), format_seconds(p.pipeline_s).c_str(),
                     pct(p.uniform_bubble_fraction).c_str());
  if (plan.strategy.workload == Workload::kInference) {
    out += format_text("  %-28s %s (one micro-batch through the empty pipeline)\n\n",
                       "latency per micro-batch", format_seconds(p.latency_s).c_str());
  } else {
    out += format_text("  %-28s %s\n\n", "optimizer step", format_seconds(p.optimizer_s).c_str());
  }
  out += comm_table(p) + "\n";
  // Optimizer offload: the host memory can be what does not fit (its note says so).
  const bool device_fits = p.peak_memory_B <= p.capacity_B;
  out += format_text("memory per device: peak %s at pipeline rank %d, capacity %s -> %s\n",
             format_bytes(p.peak_memory_B).c_str(), p.peak_rank,
             format_bytes(p.capacity_B).c_str(),
             p.fits ? "fits" : device_fits ? "fits, but the host memory does not (see the offload note)"
                                           : "DOES NOT FIT");
  out += memory_table(p);
  double host = 0;
  for (const MemoryBreakdown& m : p.rank_memory) host = std::max(host, m.host_B);
  if (host > 0) out += format_text("  host memory (optimizer offload): %s per device\n", format_bytes(host).c_str());
  for (const std::string& n : p.notes) out += "note: " + n + "\n";
  return out;
}

std::string compare_table(const std::string& title, const std::vector<CompareRow>& rows) {
  std::string out = "== " + title + " ==\n";
  out += format_text("  %-24s %3s %3s %4s %3s %2s %3s %-11s %-9s %10s %11s %6s %7s %9s %10s %s\n", "variant",
             "tp", "pp", "dp", "cp", "v", "mb", "schedule", "recompute", "iter", "tokens/s", "MFU",
             "bubble", "exp.comm", "peak mem", "fits");
  int best = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].plan || !rows[i].prediction.fits) continue;
    if (best < 0 || rows[i].prediction.iteration_s < rows[best].prediction.iteration_s) best = int(i);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const CompareRow& r = rows[i];
    const std::string name = (int(i) == best ? "* " : "  ") + r.variant;
    if (!r.plan) {
      out += format_text("  %-24s infeasible: %s\n", name.c_str(), r.infeasible.c_str());
      continue;
    }
    const Strategy& s = r.plan->strategy;
    const Prediction& p = r.prediction;
    out += format_text("  %-24s %3d %3d %4d %3d %2d %3d %-11s %-9s %10s %11.4g %6s %7s %9s %10s %s\n",
               name.c_str(), s.tp, s.pp, r.plan->data_parallel(), s.cp, s.interleave, s.micro_batch,
               std::string(schedule_name(s.schedule)).c_str(),
               std::string(recompute_name(s.recompute)).c_str(),
               format_seconds(p.iteration_s).c_str(), p.tokens_per_s, pct(p.mfu).c_str(),
               pct(p.bubble_fraction).c_str(), format_seconds(p.comm_exposed_s).c_str(),
               format_bytes(p.peak_memory_B).c_str(), p.fits ? "yes" : "NO");
  }
  return out;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::string out =
      "scenario,variant,feasible,tp,pp,dp,interleave,micro_batch,schedule,recompute,"
      "iteration_s,iteration_low_s,iteration_high_s,tokens_per_s,mfu,bubble_fraction,"
      "comm_exposed_s,peak_memory_B,fits,reason\n";
  for (const CompareRow& r : rows) {
    if (!r.plan) {
      out += format_text("\"%s\",\"%s\",0,,,,,,,,,,,,,,,,,\"%s\"\n", r.scenario.c_str(), r.variant.c_str(),
                 r.infeasible.c_str());
      continue;
    }
    const Strategy& s = r.plan->strategy;
    const Prediction& p = r.prediction;
    // The 80% interval from the development cases' errors on this device generation and
    // strategy family.
    const PredictionInterval in = plan_interval(*r.plan, p.iteration_s);
    // No interval (no development cases of the kind): empty cells, not a zero-width range.
    const std::string low = in.cases > 0 ? format_text("%.9g", in.low_s) : "";
    const std::string high = in.cases > 0 ? format_text("%.9g", in.high_s) : "";
    out += format_text(
        "\"%s\",\"%s\",1,%d,%d,%d,%d,%d,%s,%s,%.9g,%s,%s,%.9g,%.6f,%.6f,%.9g,%.9g,%d,\n",
        r.scenario.c_str(), r.variant.c_str(), s.tp, s.pp, r.plan->data_parallel(), s.interleave, s.micro_batch,
        std::string(schedule_name(s.schedule)).c_str(), std::string(recompute_name(s.recompute)).c_str(),
        p.iteration_s, low.c_str(), high.c_str(), p.tokens_per_s, p.mfu, p.bubble_fraction,
        p.comm_exposed_s, p.peak_memory_B, p.fits ? 1 : 0);
  }
  return out;
}

}  // namespace stratasim
