#include "sim/cost/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stratasim {
namespace {

bool is_all_reduce(CommKind k) { return k == CommKind::kAllReduce; }

double flat_time(CommKind kind, double bytes, int n, LinkLevel link, bool tree) {
  if (n <= 1) return 0;
  if (is_all_reduce(kind)) return tree ? tree_all_reduce_s(bytes, n, link)
                                       : ring_all_reduce_s(bytes, n, link);
  return ring_gather_s(bytes, n, link);  // all-gather, reduce-scatter, all-to-all, broadcast
}

// Slowest link of a ring that spans nodes, with the larger latency. The ring visits a node's
// k members one after another, so one of its edges leaves each node (and one enters): the
// node's NICs carry one flow per group with members there, active / k groups when every
// active device of the node runs such a ring at once (the data-parallel groups of its tensor
// and pipeline ranks), not one per device. Each crossing edge gets k / active of the node's
// NIC bandwidth: all of it for a group that fills the node (tp = 1), one device's share for
// one member per node (k = 1, the per-device share inter_node_level gives).
LinkLevel spanning_level(const HardwareModel& hw, const CommGroup& g) {
  LinkLevel intra = intra_node_level(hw), inter = inter_node_level(hw);
  const int active = std::max(1, std::min(hw.node.devices, hw.num_devices));
  const int k = std::clamp(g.ranks_per_node, 1, active);
  inter.bandwidth_Bps *= k;
  return LinkLevel{std::min(intra.bandwidth_Bps, inter.bandwidth_Bps),
                   std::max(intra.latency_s, inter.latency_s),
                   intra.bandwidth_Bps < inter.bandwidth_Bps ? intra.spec : inter.spec};
}

// Intra-node phase over k ranks, inter-node phase over the nodes on S/k each.
double hierarchical_time(CommKind kind, double bytes, const CommGroup& g, const HardwareModel& hw) {
  const int k = g.ranks_per_node, nodes = g.nodes();
  const LinkLevel intra = intra_node_level(hw), inter = inter_node_level(hw);
  if (is_all_reduce(kind)) {
    return 2 * ring_gather_s(bytes, k, intra) + ring_all_reduce_s(bytes / k, nodes, inter);
  }
  return ring_gather_s(bytes, k, intra) + ring_gather_s(bytes / k, nodes, inter);
}

}  // namespace

// All-to-all (NCCL's grouped send/recv to every peer at once): of a rank's S bytes, 1/n stays,
// (k - 1)/n go to the k - 1 peers in its node over NVLink and (n - k)/n to the peers in other
// nodes through its share of the NICs, both at the same time; nothing aggregates, so no
// algorithm reduces the inter-node part. Inside one node this is the ring's (n-1)/n S/B.
double all_to_all_s(double bytes, const CommGroup& g, const HardwareModel& hw) {
  return exchange_s(uniform_exchange_bytes(bytes, g), bytes, g, hw);
}

ExchangeBytes uniform_exchange_bytes(double bytes, const CommGroup& g) {
  const int n = g.size, k = std::min(g.ranks_per_node, g.size);
  if (n <= 1) return {};
  return {double(k - 1) / n * bytes, double(n - k) / n * bytes};
}

double exchange_s(const ExchangeBytes& x, double bytes, const CommGroup& g, const HardwareModel& hw) {
  const int n = g.size, k = std::min(g.ranks_per_node, g.size), nodes = g.nodes();
  if (n <= 1) return 0;
  const LinkLevel intra = intra_node_level(hw), inter = inter_node_level(hw);
  const double local = x.local > 0 ? x.local / intra.bandwidth_at(bytes) + (k - 1) * intra.latency_s : 0.0;
  const double remote =
      nodes > 1 && x.remote > 0 ? x.remote / inter.bandwidth_at(bytes) + (nodes - 1) * inter.latency_s : 0.0;
  return std::max(local, remote);
}

namespace {

// P(a token's top_k distinct experts, drawn uniformly from `experts`, miss a set of `held`):
// C(experts - held, top_k) / C(experts, top_k), as a product (no overflow).
double miss_probability(int experts, int held, int top_k) {
  double p = 1;
  for (int i = 0; i < top_k; ++i) p *= double(experts - held - i) / double(experts - i);
  return std::max(0.0, p);
}

}  // namespace

double contiguous_groups_hit(int experts, int top_k, int held) {
  if (experts <= 0 || top_k <= 0 || held <= 0) return 0;
  const long long e = experts, k = std::min(top_k, experts), h = held;
  const long long groups = (e + h - 1) / h;
  // Token t starts at s = t k mod E: the multiples of gcd(k, E), each equally often. A run
  // [s, s + k - 1] spans floor((s + k - 1) / h) - floor(s / h) + 1 groups; one that wraps past
  // E spans the groups from s's to the last and from the first to its end's, at most all.
  const long long step = std::gcd(k, e);
  double hits = 0;
  long long starts = 0;
  for (long long s = 0; s < e; s += step, ++starts) {
    const long long end = s + k - 1;
    const long long spanned = end < e ? end / h - s / h + 1
                                      : std::min(groups, (groups - s / h) + ((end - e) / h + 1));
    hits += static_cast<double>(spanned);
  }
  return hits / static_cast<double>(starts);
}

double group_limited_hit(int experts, int top_k, int groups, int group_top_k, int held) {
  const int size = experts / groups, per = top_k / group_top_k;
  if (held <= size) {
    // Inside one group: the group is chosen (group_top_k of groups) and gives one of its per
    // experts to the unit's held.
    return double(group_top_k) / groups * (1 - miss_probability(size, held, per));
  }
  // The unit holds m whole groups: hit unless none of them is chosen.
  return 1 - miss_probability(groups, held / size, group_top_k);
}

ExchangeBytes expert_exchange_bytes(double bytes, const CommGroup& g, int experts, int top_k,
                                    EpDispatch dispatch, MoeRouting routing, int groups, int group_top_k) {
  const int n = g.size, nodes = g.nodes();
  if (n <= 1) return {};
  if (dispatch == EpDispatch::kAllToAll || experts <= 0 || top_k <= 0 || top_k > experts) {
    return uniform_exchange_bytes(bytes, g);
  }
  const double t = bytes / top_k;
  // The chance a rank (a node) holds one of a token's experts: 1 - P(all miss) for random
  // routing; the ranks (nodes) a contiguous run of k experts spans, over n (over N).
  // Group-limited routing where ranks and nodes line up with the groups (each holds a whole
  // number of groups, or a group a whole number of them): group_limited_hit.
  const auto aligned = [&](int held) {
    const int size = groups > 0 ? experts / groups : 0;
    return held > 0 && size > 0 && (held <= size ? size % held == 0 : held % size == 0);
  };
  const bool limited = routing == MoeRouting::kRandom && groups > 1 && group_top_k > 0 &&
                       group_top_k < groups && experts % groups == 0 && top_k % group_top_k == 0 &&
                       top_k / group_top_k <= experts / groups && aligned(experts / n) &&
                       aligned(experts / nodes);
  const auto hit = [&](int held, int units) {
    if (routing == MoeRouting::kContiguous) return contiguous_groups_hit(experts, top_k, held) / units;
    if (limited) return group_limited_hit(experts, top_k, groups, group_top_k, held);
    return 1 - miss_probability(experts, held, top_k);
  };
  const double p_rank = hit(experts / n, n), p_node = hit(experts / nodes, nodes);
  // The RDMA stage carries the token's own node too (collective_cost.h): N p_node t across
  // more than one node, nothing in one.
  return {double(n - nodes) * p_rank * t, nodes > 1 ? double(nodes) * p_node * t : 0.0};
}

ExchangeBytes expert_exchange_bytes(double bytes, const Plan& plan) {
  const MoeSpec& moe = plan.model.transformer.moe;
  return expert_exchange_bytes(bytes, plan.ep_group, moe.experts, moe.top_k, plan.strategy.ep_dispatch,
                               moe.routing, moe.groups, moe.group_top_k);
}

double expert_exchange_s(double bytes, const Plan& plan) {
  return exchange_s(expert_exchange_bytes(bytes, plan), bytes, plan.ep_group, plan.hardware);
}

double halo_exchange_s(double bytes, const CommGroup& g, const HardwareModel& hw) {
  const int n = g.size, k = std::min(g.ranks_per_node, g.size), nodes = g.nodes();
  if (n <= 1 || bytes <= 0) return 0;
  const LinkLevel intra = intra_node_level(hw);
  const int local_sides = std::min(2, k - 1);  // neighbours inside the node
  const double local = local_sides > 0 ? local_sides * bytes / intra.bandwidth_at(bytes) + intra.latency_s : 0.0;
  if (nodes <= 1) return local;
  const LinkSpec& nic = hw.node.nic;
  const double node_bw = hw.node.nics * nic.bandwidth_Bps * nic.efficiency * size_efficiency_at(nic, bytes);
  const double hops = 2.0 * std::max(0, hw.network.levels - 1) + 1;
  const int crossing = nodes > 2 ? 2 : 1;  // flows out of a node's NICs, one per neighbouring node
  const double remote = crossing * bytes / node_bw + nic.latency_s + hops * hw.network.switch_latency_s;
  return std::max(local, remote);
}

LinkLevel intra_node_level(const HardwareModel& hw) {
  const LinkSpec& l = hw.node.device_link;
  return LinkLevel{l.bandwidth_Bps * l.efficiency, l.latency_s, &l};
}

LinkLevel inter_node_level(const HardwareModel& hw) {
  const LinkSpec& nic = hw.node.nic;
  const int active = std::max(1, std::min(hw.node.devices, hw.num_devices));
  const double node_bw = hw.node.nics * nic.bandwidth_Bps * nic.efficiency;
  // Up to the top of the fat tree and back: 2 * (levels - 1) + 1 switch hops.
  const double hops = 2.0 * std::max(0, hw.network.levels - 1) + 1;
  return LinkLevel{node_bw / active, nic.latency_s + hops * hw.network.switch_latency_s, &nic};
}

double ring_all_reduce_s(double bytes, int n, LinkLevel link) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) / n * bytes / link.bandwidth_at(bytes) + 2.0 * (n - 1) * link.latency_s;
}

double ring_gather_s(double bytes, int n, LinkLevel link) {
  if (n <= 1) return 0;
  return double(n - 1) / n * bytes / link.bandwidth_at(bytes) + double(n - 1) * link.latency_s;
}

int tree_chunks(double bytes, int n) {
  const double depth = std::ceil(std::log2(std::max(2, n)));
  constexpr double kChunkB = 512.0 * 1024;
  return static_cast<int>(std::clamp(std::ceil(bytes / 2 / kChunkB), depth, 64.0 * depth));
}

double tree_all_reduce_s(double bytes, int n, LinkLevel link) {
  if (n <= 1) return 0;
  const double depth = std::ceil(std::log2(n));
  const double bw = link.bandwidth_at(bytes);
  const double chunk_s = bytes / 2 / tree_chunks(bytes, n) / bw;
  return 2.0 * depth * (link.latency_s + 2.0 * chunk_s) + 2.0 * bytes / bw;
}

CollectiveChoice collective_time(CommKind kind, double bytes, const CommGroup& g,
                                 const HardwareModel& hw, CollectiveAlgorithm algorithm) {
  if (g.size <= 1 || bytes <= 0) return {0, algorithm};
  if (kind == CommKind::kAllToAll) return {all_to_all_s(bytes, g, hw), CollectiveAlgorithm::kRing};
  if (kind == CommKind::kHaloExchange) return {halo_exchange_s(bytes, g, hw), CollectiveAlgorithm::kRing};
  const bool one_node = g.nodes() <= 1;
  const LinkLevel level = one_node ? intra_node_level(hw) : spanning_level(hw, g);
  const double ring = flat_time(kind, bytes, g.size, level, false);
  // A tree over the group's ranks has edges leaving a node at many of its members: each
  // gets one device's share of the NICs.
  const LinkLevel tree_level = one_node ? level : spanning_level(hw, CommGroup{g.kind, g.size, 1});
  const double tree =
      is_all_reduce(kind) ? flat_time(kind, bytes, g.size, tree_level, true) : ring;
  const double hier = one_node || g.ranks_per_node <= 1 ? ring : hierarchical_time(kind, bytes, g, hw);
  switch (algorithm) {
    case CollectiveAlgorithm::kRing: return {ring, algorithm};
    case CollectiveAlgorithm::kTree: return {tree, algorithm};
    case CollectiveAlgorithm::kHierarchical: return {hier, algorithm};
    case CollectiveAlgorithm::kAuto: break;
  }
  // NCCL's choice: for an all-reduce the faster of ring, tree and the two-level algorithms
  // (NVLS tree, CollNet); an all-gather or a reduce-scatter across nodes runs as a ring (its
  // tuner admits only RING, PAT for one GPU per node, and NVLS/CollNet with SHARP switches
  // that take them: src/graph/tuning.cc ncclTopoTuneModel), so never hierarchically unless
  // the strategy names it.
  CollectiveChoice best{ring, CollectiveAlgorithm::kRing};
  if (tree < best.time_s) best = {tree, CollectiveAlgorithm::kTree};
  if (is_all_reduce(kind) && hier < best.time_s) best = {hier, CollectiveAlgorithm::kHierarchical};
  return best;
}

double p2p_across_nodes_s(double bytes, int flows, const HardwareModel& hw) {
  const LinkLevel inter = inter_node_level(hw);  // one device's share when all of them send
  const int active = std::max(1, std::min(hw.node.devices, hw.num_devices));
  const int sharing = std::clamp(flows, 1, active);
  return bytes / (inter.bandwidth_Bps * active / sharing) + inter.latency_s;
}

double p2p_time(double bytes, bool same_node, const HardwareModel& hw) {
  const LinkLevel link = same_node ? intra_node_level(hw) : inter_node_level(hw);
  return bytes / link.bandwidth_Bps + link.latency_s;
}

}  // namespace stratasim
