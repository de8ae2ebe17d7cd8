// Alpha-beta cost of collectives on the link hierarchy of a HardwareModel (Thakur et al.
// 2005; Patarasuk & Yuan 2009 for the ring; NCCL's bus-bandwidth conventions).
// Message size S is the buffer per rank: all-reduce input, all-gather output, reduce-scatter
// input. Pure functions.
#pragma once

#include "hardware_models/src/hardware_model.h"
#include "strategies/lowering/plan.h"

namespace stratasim {

struct LinkLevel {
  double bandwidth_Bps = 0;  // per rank, per direction, achievable at the plateau
  double latency_s = 0;
  const LinkSpec* spec = nullptr;  // its size_efficiency curve (null: none)
  // Bandwidth for a collective buffer of `bytes` (LinkSpec::size_efficiency).
  double bandwidth_at(double bytes) const {
    return spec ? bandwidth_Bps * size_efficiency_at(*spec, bytes) : bandwidth_Bps;
  }
};

// NVLink/NVSwitch (or PCIe) port of one device.
LinkLevel intra_node_level(const HardwareModel& hw);
// One rank's share of its node's NICs when every device of the node communicates at once.
LinkLevel inter_node_level(const HardwareModel& hw);

// Ring all-reduce over n ranks: 2(n-1)/n * S/B + 2(n-1) * alpha.
double ring_all_reduce_s(double bytes, int n, LinkLevel link);
// Ring all-gather or reduce-scatter: (n-1)/n * S/B + (n-1) * alpha.
double ring_gather_s(double bytes, int n, LinkLevel link);
// Double binary tree all-reduce (NCCL; Sanders et al. 2009): each half of S goes up one tree
// and down again in tree_chunks() pipelined chunks, so every member's port carries 2 S and
// the pipeline fills once per direction over log2(n) levels, each step two chunk times (an
// interior member takes a chunk from each of its two children through one port):
//   2 * log2(n) * (alpha + 2 chunk / B) + 2 * S/B,  chunk = S / 2 / tree_chunks(S, n).
double tree_all_reduce_s(double bytes, int n, LinkLevel link);
// Chunks per half of S: NCCL's ~512 KiB slices, between log2(n) and 64 log2(n).
int tree_chunks(double bytes, int n);

// All-to-all of S bytes per rank over a group placed k ranks per node: the intra-node part
// (k-1)/n S over NVLink beside the inter-node part (n-k)/n S through the NIC share, each with
// one latency per peer node (or peer in the node).
double all_to_all_s(double bytes, const CommGroup& g, const HardwareModel& hw);

// What one rank of an expert-parallel token exchange puts on its device port (`local`, to
// ranks of its own node) and through its NIC share (`remote`), per all-to-all whose NCCL
// form carries `bytes` per rank (every routed copy of each token). Routing is uniform:
// `top_k` distinct experts of `experts`, spread evenly over the group's n ranks and N nodes of
// k ranks, so a rank holds a given token's expert with p_rank = 1 - C(E - E/n, top_k)/C(E, top_k)
// and a node with p_node = 1 - C(E - E/N, top_k)/C(E, top_k). Per token of size t = bytes/top_k:
//   kAllToAll (NCCL): every copy travels: local = top_k (k-1)/n t, remote = top_k (n-k)/n t.
//   kDeepEP: once to each node holding one of its experts, then forwarded inside it:
//            remote = N p_node t; local = (k-1) p_rank t (its own node's GPUs) plus the
//            forwards of the tokens it receives, (N-1)(k-1) p_rank t: (n-N) p_rank t in all.
//            The RDMA stage handles the token's own node like the others: its copy goes
//            through the same send buffers and forwarders, only without the put (DeepEP
//            csrc/kernels/internode.cu: "Lighter fence for local RDMA rank"), and the kernels'
//            published rates are of these bytes (DeepEP's README: 43 / 58 / 51 GB/s at ep 16 /
//            32 / 64 on H800 and CX7, about the NIC's 50 over N p_node t; NVIDIA's HybridEP
//            test counts its RDMA bytes "to align with DeepEP" without setting the local node
//            to zero: 54 / 47 / 41 GB/s on H100). So the stage runs N p_node t through the NIC
//            share, twice the (N-1) p_node t that leaves the node at ep 16 over two nodes.
// With top_k 1 NCCL sends (N-1)/N t off the node, DeepEP's stage t. Both directions
// (dispatch, combine) alike.
struct ExchangeBytes {
  double local = 0, remote = 0;
};
// With MoeRouting::kContiguous, p_rank and p_node are the ranks and nodes a token's run of
// k consecutive experts spans (contiguous_groups_hit) over n and N.
// With group-limited routing (MoeSpec::groups, group_top_k) where ranks and nodes line up
// with the groups: group_limited_hit.
ExchangeBytes expert_exchange_bytes(double bytes, const CommGroup& g, int experts, int top_k,
                                    EpDispatch dispatch, MoeRouting routing = MoeRouting::kRandom,
                                    int groups = 1, int group_top_k = 0);
// The chance a unit (rank, node) holding `held` consecutive experts gets one of a token's
// experts under group-limited routing: a token picks group_top_k of the groups at random and
// top_k / group_top_k experts in each (a group scores its top ones, Megatron-Core's
// group_limited_topk). Inside a group of S = E / groups: (group_top_k / groups) (1 -
// C(S - held, k/g_k) / C(S, k/g_k)); holding m whole groups: 1 - C(groups - m, g_k) /
// C(groups, g_k).
double group_limited_hit(int experts, int top_k, int groups, int group_top_k, int held);
// The groups of `held` consecutive experts (a rank's, a node's) that k consecutive experts
// starting at t k mod E span, averaged over the starts (t k mod E runs over the multiples of
// gcd(k, E)): 1 for k = 8 in ranks of 16 experts, 2 in ranks of 4.
double contiguous_groups_hit(int experts, int top_k, int held);
// A uniform all-to-all's share of `bytes` per rank: (k-1)/n inside the node, (n-k)/n across.
ExchangeBytes uniform_exchange_bytes(double bytes, const CommGroup& g);
// An exchange of those bytes: the port and the NIC share side by side, one latency per peer
// node (or peer in the node), the links' efficiency at the NCCL message size `bytes`.
double exchange_s(const ExchangeBytes& x, double bytes, const CommGroup& g, const HardwareModel& hw);
// The plan's expert-parallel dispatch or combine of `bytes` per rank (its ep group, model's
// experts and top-k, Strategy::ep_dispatch).
ExchangeBytes expert_exchange_bytes(double bytes, const Plan& plan);
double expert_exchange_s(double bytes, const Plan& plan);
// A spatial split's halo exchange over the g.size ranks of a line (rank order along the split
// rows, g.ranks_per_node consecutive ranks in a node): every rank sends `bytes` (one side's
// halo rows) to each neighbour and receives as much from each, all at once (MPI_Neighbor /
// paired Isend/Irecv). The slowest rank: an interior one sends 2 x bytes through its device
// port; a rank at a node's edge sends one side through the NICs, which carry the node's two
// crossing flows (one when the line spans two nodes).
double halo_exchange_s(double bytes, const CommGroup& g, const HardwareModel& hw);

struct CollectiveChoice {
  double time_s = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
};

// Time of a collective over a group placed on the cluster. kAuto picks the fastest of ring,
// tree and hierarchical (intra-node reduce-scatter, inter-node all-reduce, intra all-gather).
CollectiveChoice collective_time(CommKind kind, double bytes, const CommGroup& group,
                                 const HardwareModel& hw, CollectiveAlgorithm algorithm);

// Point-to-point transfer: S/B + alpha, over NVLink when both ends share a node.
double p2p_time(double bytes, bool same_node, const HardwareModel& hw);
// A pipeline boundary between nodes: `flows` devices of the sending stage in the node send at
// once (tp x dp of the stage's ranks that sit in that node), sharing the node's NICs; the other
// devices of the node send nowhere across the network at that boundary.
double p2p_across_nodes_s(double bytes, int flows, const HardwareModel& hw);

}  // namespace stratasim
