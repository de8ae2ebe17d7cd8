// Collectives over the replicas' hosts as point-to-point messages (see simulation.h): ring
// (Patarasuk & Yuan 2009), hierarchical (intra-node rings around an inter-node ring), double
// binary tree (NCCL), and the comm stream of a step (ZeRO-2/3 per-micro-batch traffic).
#include <algorithm>
#include <cmath>
#include <simgrid/s4u.hpp>
#include <string>

#include "sim/cost/collective_cost.h"
#include "sim/cost/step_timing.h"
#include "sim/simgrid/simulation.h"

namespace stratasim::simgrid_detail {

namespace sg4 = simgrid::s4u;

double Simulation::ring(const RingSpec& r, int rank, int replica, const char* what, bool serial) {
  return rings(std::vector<RingSpec>{r}, rank, replica, what, serial);
}

// The channels of one ring, driven by this member alone: each step posts every channel's
// receive and send and waits for all of them, so a ring in c channels costs c messages per
// member and step but no actor of its own (creating them dominated large rings' replay).
double Simulation::rings(const std::vector<RingSpec>& channels, int rank, int replica,
                         const char* what, bool serial) {
  const RingSpec& r = channels.front();
  const int n = static_cast<int>(r.members.size());
  if (n <= 1 || r.steps <= 0 || r.step_bytes <= 0) return 0;
  RingEntry& e = ring_entry_[r.tag];
  if (e.at_s.empty()) e.at_s.assign(n, -1), e.left = n;
  e.at_s[r.position] = sg4::Engine::get_clock();
  const int c = static_cast<int>(channels.size());
  const int by_messages = std::max(1, options_.max_ring_messages / std::max(1, n * c));
  const int simulated = std::min({r.steps, std::max(1, options_.max_ring_steps), by_messages});
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_[r.members[r.position]]->route_to(hosts_[r.members[(r.position + 1) % n]], links, &latency);
  const double extra_latency = double(r.steps - simulated) * latency / simulated;
  std::vector<sg4::Mailbox*> inbox, outbox;
  std::vector<uint64_t> size;
  for (const RingSpec& ch : channels) {
    inbox.push_back(sg4::Mailbox::by_name(ch.tag + "/" + std::to_string(ch.position)));
    outbox.push_back(sg4::Mailbox::by_name(ch.tag + "/" + std::to_string((ch.position + 1) % n)));
    size.push_back(message_size(ch.step_bytes * ch.steps / simulated));
  }
  std::vector<int*> got(c, nullptr);
  std::vector<sg4::CommPtr> comms;
  for (int s = 0; s < simulated; ++s) {
    comms.clear();
    for (int k = 0; k < c; ++k) {
      comms.push_back(inbox[k]->get_async<int>(&got[k]));
      comms.push_back(outbox[k]->put_async(&micro_batch_ids_[0], size[k]));
    }
    sg4::Comm::wait_all(comms);
    if (extra_latency > 0) sg4::this_actor::sleep_for(extra_latency);
    run_.activities += 2 * c;
  }
  // Every member has entered once our last step is done: the collective itself started when
  // the last one came; waiting for the others before is idle time, not communication.
  RingEntry& entry = ring_entry_[r.tag];
  const double start = *std::max_element(entry.at_s.begin(), entry.at_s.end());
  const double mine = entry.at_s[r.position];
  if (--entry.left == 0) ring_entry_.erase(r.tag);
  if (serial) sync_wait_s_[r.members[r.position]] += std::max(0.0, start - mine);
  if (start > mine) record(rank, replica, EventKind::kIdle, -1, 0, mine, "wait for peers", start);
  double bytes = 0;
  for (const RingSpec& ch : channels) bytes += ch.step_bytes * ch.steps;
  record(rank, replica, EventKind::kComm, -1, 0, start, what, -1, bytes);
  return sg4::Engine::get_clock() - start;
}

double Simulation::collective(const CollectiveSpec& c, int rank, int replica) {
  const int n = static_cast<int>(c.members.size());
  if (n <= 1 || c.bytes <= 0) return 0;
  const double choice_B = c.choice_B > 0 ? c.choice_B : c.bytes / c.repeats;
  const CollectiveAlgorithm a =
      collective_time(c.kind, choice_B, plan_.iteration.group(c.group), on(rank).hardware,
                      plan_.strategy.collective)
          .algorithm;
  const bool all_reduce = c.kind == CommKind::kAllReduce;
  if (a == CollectiveAlgorithm::kHierarchical) return hierarchical(c, rank, replica);
  // Below NCCL's plateau the same bytes move at a fraction of the link bandwidth
  // (LinkSpec::size_efficiency): the messages carry bytes / factor, as collective_cost.h's
  // closed forms divide the bandwidth.
  const bool one_node = std::all_of(c.members.begin(), c.members.end(), [&](int h) {
    return host_node_[h] == host_node_[c.members.front()];
  });
  const LinkSpec& link = one_node ? on(rank).hardware.node.device_link : on(rank).hardware.node.nic;
  CollectiveSpec scaled = c;
  scaled.bytes = c.bytes / size_efficiency_at(link, c.bytes / c.repeats);
  if (a == CollectiveAlgorithm::kTree && all_reduce) return tree(scaled, rank, replica);
  RingSpec r{c.tag, c.members, c.position, scaled.bytes / c.repeats / n,
             c.repeats * (all_reduce ? 2 : 1) * (n - 1)};
  const int channels = one_node ? 1 : ring_channels(c.members);
  if (channels <= 1) return ring(r, rank, replica, c.what, c.serial);
  return channel_rings(r, channels, rank, replica, c.what, c.serial);
}

// Channels of a ring that crosses rail-optimized nodes: NCCL runs one ring per channel, each
// leaving a node through another NIC, so together they use every NIC of the node. Here
// min(members per node, NICs per node); 1 elsewhere (a fat-tree node's NIC link is already
// the node's NICs together, collective_cost.h spanning_level).
int Simulation::ring_channels(const std::vector<int>& members) const {
  const HardwareModel& hw = plan_.hardware;
  if (hw.network.topology != NetworkTopology::kRailOptimized) return 1;
  int per_node = 0;
  for (int h : members) per_node += host_node_[h] == host_node_[members.front()];
  return std::clamp(std::min(per_node, hw.node.nics), 1, 64);
}

// The ring as `channels` rings of 1/channels of its bytes side by side: in channel c each
// node's members (consecutive in the ring) start at their c-th, so channel c leaves a node
// from its (c - 1)-th member's rail and enters the next at its c-th. This member drives all
// of them in step (rings()), recording the collective once.
double Simulation::channel_rings(const RingSpec& r, int channels, int rank, int replica,
                                 const char* what, bool serial) {
  std::vector<RingSpec> spec(channels, r);
  const int n = static_cast<int>(r.members.size());
  for (int ch = 0; ch < channels; ++ch) {
    RingSpec& s = spec[ch];
    s.tag = r.tag + "/ch" + std::to_string(ch);
    s.step_bytes = r.step_bytes / channels;
    s.members.clear();
    for (int first = 0; first < n;) {
      int last = first;  // [first, last): one node's members
      while (last < n && host_node_[r.members[last]] == host_node_[r.members[first]]) ++last;
      const int k = last - first;
      for (int j = 0; j < k; ++j) s.members.push_back(r.members[first + (j + ch) % k]);
      first = last;
    }
    s.position = static_cast<int>(
        std::find(s.members.begin(), s.members.end(), r.members[r.position]) - s.members.begin());
  }
  return rings(spec, rank, replica, what, serial);
}

// Hierarchical (collective_cost.h): over the k members sharing this host's node a ring
// reduce-scatter of S, over the members with this host's local index on every node a ring
// all-reduce (or gather) of S / k, then for an all-reduce an intra-node all-gather of S.
double Simulation::hierarchical(const CollectiveSpec& c, int rank, int replica) {
  std::map<int, std::vector<int>> by_node;  // node -> members there, in group order
  for (int h : c.members) by_node[host_node_[h]].push_back(h);
  const int me = c.members[c.position];
  const std::vector<int>& local = by_node[host_node_[me]];
  const int k = static_cast<int>(local.size());
  const int index = static_cast<int>(std::find(local.begin(), local.end(), me) - local.begin());
  std::vector<int> cross;  // same local index on every node
  for (const auto& [node, hosts] : by_node) {
    if (index < static_cast<int>(hosts.size())) cross.push_back(hosts[index]);
  }
  const int nodes = static_cast<int>(cross.size());
  const int pos = static_cast<int>(std::find(cross.begin(), cross.end(), me) - cross.begin());
  const bool all_reduce = c.kind == CommKind::kAllReduce;
  const double per = c.bytes / c.repeats;
  const std::string node = std::to_string(host_node_[me]);
  // Each phase below its link's plateau (LinkSpec::size_efficiency), as collective_cost.h.
  const double intra_factor = size_efficiency_at(on(rank).hardware.node.device_link, per);
  const double inter_factor = size_efficiency_at(on(rank).hardware.node.nic, per / k);
  double t = 0;
  RingSpec intra{c.tag + "/n" + node, local, index, per / k / intra_factor, c.repeats * (k - 1)};
  t += ring(intra, rank, replica, c.what, c.serial);
  RingSpec inter{c.tag + "/x" + std::to_string(index), cross, pos, per / k / nodes / inter_factor,
                 c.repeats * (all_reduce ? 2 : 1) * (nodes - 1)};
  t += ring(inter, rank, replica, c.what, c.serial);
  if (all_reduce) {
    intra.tag += "/ag";
    t += ring(intra, rank, replica, c.what, c.serial);
  }
  return t;
}

// Double binary tree all-reduce (NCCL; Sanders et al. 2009): two binary trees over the members,
// the second the mirror image of the first (for an even count no member is inside both),
// each reducing then broadcasting half of S in `chunks` pipelined pieces sent eagerly (the
// receiving member is the mailbox's permanent receiver, so latencies overlap transfers). Every
// member's port carries S per direction and phase: 2 S / B + the pipeline's fill, which
// collective_cost.h's closed form counts as 2 log2(n) (alpha + 2 chunk / B) with the same chunks.
double Simulation::tree(const CollectiveSpec& c, int rank, int replica) {
  const int n = static_cast<int>(c.members.size());
  const int chunks = tree_chunks(c.bytes / c.repeats, n);  // the plan's chunking (collective_cost.h)
  std::vector<int> mirrored(c.members.rbegin(), c.members.rend());
  const double start = sg4::Engine::get_clock();
  for (int r = 0; r < c.repeats; ++r) {
    const std::string tag = c.tag + "/t" + std::to_string(r);
    const double half = c.bytes / c.repeats / 2;
    sg4::ActorPtr other = sg4::Actor::create(
        "tree", sg4::this_actor::get_host(), [this, mirrored, n, half, chunks, tag, &c] {
          tree_half(mirrored, n - 1 - c.position, half, chunks, tag + "b");
        });
    tree_half(c.members, c.position, half, chunks, tag + "a");
    other->join();
  }
  record(rank, replica, EventKind::kComm, -1, 0, start, c.what, -1, c.bytes);
  return sg4::Engine::get_clock() - start;
}

// Member i of a binary tree in heap order (parent (i - 1) / 2): receives each chunk from its
// children, sends it to its parent while receiving the next (one send in flight), then the
// same downwards.
void Simulation::tree_half(const std::vector<int>& order, int i, double bytes, int chunks,
                           const std::string& tag) {
  const int n = static_cast<int>(order.size());
  const int parent = i > 0 ? (i - 1) / 2 : -1;
  std::vector<int> children;
  for (int ch : {2 * i + 1, 2 * i + 2}) {
    if (ch < n) children.push_back(ch);
  }
  auto box = [&](char dir, int at) {
    return sg4::Mailbox::by_name(tag + dir + std::to_string(at));
  };
  const uint64_t size = message_size(bytes / chunks);
  void* payload = &micro_batch_ids_[0];
  box('u', i)->set_receiver(sg4::Actor::self());
  box('d', i)->set_receiver(sg4::Actor::self());
  // Four chunks' sends in flight per member, so latencies overlap transfers.
  std::vector<std::vector<sg4::CommPtr>> sends(chunks);
  auto wait_chunk = [&sends](int k) {
    if (k < 0) return;
    for (sg4::CommPtr& c : sends[k]) c->wait();
    sends[k].clear();
  };
  for (int k = 0; k < chunks; ++k) {  // reduce
    std::vector<sg4::CommPtr> from_children;
    std::vector<int*> got(children.size());
    for (size_t ch = 0; ch < children.size(); ++ch) {
      from_children.push_back(box('u', i)->get_async<int>(&got[ch]));
    }
    for (sg4::CommPtr& c : from_children) c->wait();
    wait_chunk(k - 4);
    if (parent >= 0) sends[k].push_back(box('u', parent)->put_async(payload, size));
    run_.activities += children.size() + (parent >= 0);
  }
  for (int k = std::max(0, chunks - 4); k < chunks; ++k) wait_chunk(k);
  for (int k = 0; k < chunks; ++k) {  // broadcast
    if (parent >= 0) {
      int* got = nullptr;
      box('d', i)->get_async<int>(&got)->wait();
    }
    wait_chunk(k - 4);
    for (int ch : children) sends[k].push_back(box('d', ch)->put_async(payload, size));
    run_.activities += children.size() + (parent >= 0);
  }
  for (int k = std::max(0, chunks - 4); k < chunks; ++k) wait_chunk(k);
  box('u', i)->set_receiver(nullptr);
  box('d', i)->set_receiver(nullptr);
}

// The comm stream of one step: its ZeRO collectives in program order, each after the ops it
// depends on (the compute, for the last reduce-scatter), on their own actor so that they run
// beside the compute as the program says.
void Simulation::comm_stream(int rank, int replica, const StepProgram& step, StepState& state,
                             const std::string& tag) {
  HostResult& me = run_.hosts[host_index(rank, replica)];
  for (size_t i = 0; i < step.ops.size(); ++i) {
    const IterOp& op = step.ops[i];
    if (op.stream != Stream::kComm || is_send(op)) continue;
    state.wait(op);
    if (op.kind == IterOpKind::kFp8AmaxReduce) {
      // Latency-bound (a few hundred bytes to a few KB) over the stage's ranks, most of which
      // no host stands for: its closed form (collective_cost.h), as the analytical engine.
      const double t = comm_op_s(op, on(rank));
      sg4::this_actor::sleep_for(t);
      me.amax_s += t;
      state.finish(i);
      continue;
    }
    const bool gather = op.kind == IterOpKind::kZeroGather;
    std::vector<int> members = members_of(op.group, rank, replica);
    const int position = position_in(members, rank, replica);
    const std::string group_tag = "-g" + std::to_string(members.front());
    CollectiveSpec c{op.comm,
                     op.bytes,
                     std::max(1, op.repeats),
                     std::move(members),
                     position,
                     tag + "-" + std::to_string(i) + group_tag,
                     gather ? "zero all-gather" : "zero reduce-scatter",
                     false};
    c.group = op.group;
    const Interference slows_compute(speed_, on(rank).hardware.device.overlap_slowdown);
    me.zero_s += collective(c, rank, replica);
    state.finish(i);
  }
}

}  // namespace stratasim::simgrid_detail
