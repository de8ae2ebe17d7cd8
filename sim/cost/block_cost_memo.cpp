#include "sim/cost/block_cost_memo.h"

#include <array>
#include <cstring>
#include <unordered_map>

namespace stratasim {
namespace {

// A number that changes with any point of a link's size_efficiency curve.
double curve_checksum(const LinkSpec& l) {
  double sum = static_cast<double>(l.size_efficiency.size());
  for (const auto& [bytes, factor] : l.size_efficiency) sum = sum * 31 + bytes * factor + factor;
  return sum;
}

// The causal and head-dim parts of a device's attention curves, folded into one number.
double attention_checksum(const AttentionCurves& a) {
  double sum = 0, weight = 1;
  for (const AttentionPass* p : {&a.forward, &a.backward}) {
    for (double v : {p->causal_fraction, p->causal_half_keys}) sum += (weight *= 1.618) * v;
    for (const auto& [dim, f] : p->head_dim_scale) sum += (weight *= 1.618) * (dim + 7.3 * f);
  }
  return sum;
}

// A number that changes with any row of a device's older-attention-kernel benchmark.
double ratio_checksum(const AttentionRatio& r) {
  double sum = static_cast<double>(r.series.size()), weight = 1;
  for (const AttentionRatioSeries& s : r.series) {
    sum += (weight *= 1.618) * (s.head_dim + (s.causal ? 0.5 : 0));
    for (const auto& [seq, fa1, fa2] : s.points) sum += (weight *= 1.618) * (seq + fa1 / fa2);
  }
  return sum;
}

// Every number block_cost() reads from the plan besides the block itself.
using Signature = std::array<double, 74>;

Signature signature_of(const Plan& plan) {
  const HardwareModel& hw = plan.hardware;
  const DeviceSpec& d = hw.device;
  const Strategy& s = plan.strategy;
  Signature sig{};
  size_t i = 0;
  for (double peak : d.peak_flops) sig.at(i++) = peak;
  for (double v : {d.vector_flops, d.memory_bandwidth_Bps, d.matmul.max_fraction,
                   d.matmul.half_size, d.memory.max_fraction, d.memory.half_size,
                   d.kernel_overhead_s, double(d.compute_units), double(hw.node.devices),
                   hw.node.device_link.bandwidth_Bps, hw.node.device_link.latency_s,
                   hw.node.device_link.efficiency, double(hw.node.nics),
                   hw.node.nic.bandwidth_Bps, hw.node.nic.latency_s, hw.node.nic.efficiency,
                   double(hw.network.levels), hw.network.switch_latency_s,
                   double(hw.num_devices), double(plan.tp_group.size),
                   double(plan.tp_group.ranks_per_node), double(plan.cp_group.size),
                   double(plan.cp_group.ranks_per_node), double(plan.ep_group.size),
                   double(plan.ep_group.ranks_per_node), double(s.dtype),
                   double(s.collective), double(s.overlap_tp), double(s.tp_overlap), double(s.async_tp_grad_reduce), double(s.overlap_ep), double(s.ep_dispatch), double(plan.model.transformer.moe.experts), double(plan.model.transformer.moe.top_k), double(s.streams), d.matmul_fp8.max_fraction,
                   d.matmul_fp8.half_size, d.matmul_fp8_rowwise.max_fraction,
                   d.matmul_fp8_rowwise.half_size, double(s.fp8_scaling), d.flash2.forward.max_fraction,
                   d.flash2.forward.half_keys, d.flash2.backward.max_fraction,
                   d.flash2.backward.half_keys, d.flash3.forward.max_fraction,
                   d.flash3.forward.half_keys, d.flash3.backward.max_fraction,
                   d.flash3.backward.half_keys, attention_checksum(d.flash2),
                   attention_checksum(d.flash3), attention_checksum(d.cudnn), ratio_checksum(d.flash1), ratio_checksum(d.flash_triton),
                   double(s.fusion.attention_kernel),
                   d.overlap_slowdown, d.ep_overlap_rate, d.sustained_clock, s.host_overhead_s, d.speed_variability, curve_checksum(hw.node.device_link),
                   curve_checksum(hw.node.nic), ep_paired_share(plan)}) {
    sig.at(i++) = v;
  }
  return sig;
}

struct Key {
  const Block* block;
  Signature sig;
  bool operator==(const Key& o) const {
    return block == o.block && std::memcmp(sig.data(), o.sig.data(), sizeof(Signature)) == 0;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<const void*>()(k.block);
    for (double v : k.sig) h = (h ^ std::hash<double>()(v)) * 1099511628211ull;
    return h;
  }
};

struct Entry {
  std::shared_ptr<const Block> keep_alive;  // so the key's pointer is never reused meanwhile
  BlockCost cost;
};

}  // namespace

BlockCost memoized_block_cost(const std::shared_ptr<const Block>& block, const Plan& plan) {
  thread_local std::unordered_map<Key, Entry, KeyHash> memo;
  Key key{block.get(), signature_of(plan)};
  auto it = memo.find(key);
  if (it != memo.end()) return it->second.cost;
  if (memo.size() >= 16384) memo.clear();
  const BlockCost cost = block_cost(*block, plan);
  memo.emplace(key, Entry{block, cost});
  return cost;
}

}  // namespace stratasim
