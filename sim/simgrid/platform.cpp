#include "sim/simgrid/platform.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "sim/core/error.h"

namespace stratasim::simgrid_detail {
namespace {

namespace sg4 = simgrid::s4u;
using Direction = sg4::LinkInRoute::Direction;
using NetPoint = simgrid::kernel::routing::NetPoint;

// Zero-padded names: SimGrid sorts hosts by name (get_all_hosts is lexicographic).
std::string padded(const char* prefix, int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%05d", prefix, index);
  return buf;
}

struct Node {
  sg4::NetZone* zone = nullptr;
  NetPoint* gateway = nullptr;
  sg4::Link* nic = nullptr;
  int leaf = 0;
};

// Rail-optimized (NVIDIA DGX SuperPOD, "rail-optimized" leaf layer): NIC i of every node is
// cabled to rail switch i, so devices with the same local index talk through one switch hop
// without sharing anything but their own NICs; a rail switch has the ports a fat-tree leaf
// would give nodes_per_leaf nodes' NICs, i.e. it spans nodes_per_leaf x nics nodes (one NIC
// each, a "scalable unit"). Traffic between different rails or scalable units climbs through
// the rail switch's uplink (oversubscribed like a fat-tree leaf's) to the spine and down
// (what SuperPOD does without NCCL's PXN forwarding over NVLink, which is not modelled).
// GPU-to-NIC traffic goes over PCIe, not the device's NVLink port. One full zone over all
// hosts with explicit routes (hosts x hosts routes: fine for the few hundred simulated hosts).
SimPlatform build_rail_platform(const HardwareModel& hw, const std::vector<int>& devices,
                                int replicated_flows, double speed_flops, bool tp_mirrors) {
  const NetworkSpec& net = hw.network;
  const int per_node = hw.node.devices;
  const int nics = std::max(1, hw.node.nics);
  const int per_nic = std::max(1, per_node / nics);  // devices sharing one NIC
  // The replicas (tensor-parallel peers) sit on ceil(tp / per_nic) NICs of their own rails:
  // the simulated host's share of its NIC. A mixed cluster's nodes have their own group's
  // links (HardwareModel::node_spec; every group has as many NICs as the first's here).
  const double share = double((replicated_flows + per_nic - 1) / per_nic) / replicated_flows;
  const double nic_Bps = hw.node.nic.bandwidth_Bps * hw.node.nic.efficiency * share;
  const int unit_nodes = std::max(1, net.nodes_per_leaf) * nics;
  const double levels = std::max(1, net.levels);
  const double uplink_Bps =
      unit_nodes * nic_Bps / std::max(1e-9, net.oversubscription);  // one rail switch's uplink
  auto* root = sg4::create_full_zone("cluster");
  SimPlatform out;
  std::vector<sg4::Host*> all;  // hosts, then mirrors
  std::vector<sg4::Link*> port, rail_nic, uplink;
  std::vector<int> node_of, switch_of;
  std::map<std::pair<int, int>, sg4::Link*> nic_links;  // (node, nic) -> link
  std::map<int, sg4::Link*> uplinks;                    // rail switch -> uplink
  auto add = [&](const std::string& name, int device) {
    const int node = device / per_node, rail = (device % per_node) / per_nic;
    const LinkSpec& dev = hw.node_spec(node).device_link;
    const LinkSpec& nic = hw.node_spec(node).nic;
    all.push_back(root->create_host(name, speed_flops)->seal());
    port.push_back(
        root->create_split_duplex_link(name + "-link", dev.bandwidth_Bps * dev.efficiency)
            ->set_latency(dev.latency_s / 2)
            ->seal());
    sg4::Link*& n = nic_links[{node, rail}];
    if (!n) {
      n = root->create_split_duplex_link(padded("node", node) + "-nic" + std::to_string(rail),
                                         nic.bandwidth_Bps * nic.efficiency * share)
              ->set_latency((nic.latency_s + net.switch_latency_s) / 2)
              ->seal();
    }
    const int sw = (node / unit_nodes) * nics + rail;
    sg4::Link*& u = uplinks[sw];
    if (!u) {
      u = root->create_split_duplex_link(padded("rail", sw) + "-uplink", uplink_Bps)
              ->set_latency((levels - 1) * net.switch_latency_s)
              ->seal();
    }
    rail_nic.push_back(n);
    uplink.push_back(u);
    node_of.push_back(node);
    switch_of.push_back(sw);
  };
  for (int d : devices) add(padded("gpu", d), d);
  if (tp_mirrors) {
    for (int d : devices) add(padded("gpu", d) + "-tp", d);
  }
  for (size_t a = 0; a < all.size(); ++a) {
    for (size_t b = a + 1; b < all.size(); ++b) {
      std::vector<sg4::LinkInRoute> route;
      if (node_of[a] == node_of[b]) {
        route = {{port[a], Direction::UP}, {port[b], Direction::DOWN}};
      } else {
        route.push_back({rail_nic[a], Direction::UP});
        if (switch_of[a] != switch_of[b]) {
          route.push_back({uplink[a], Direction::UP});
          route.push_back({uplink[b], Direction::DOWN});
        }
        route.push_back({rail_nic[b], Direction::DOWN});
      }
      root->add_route(all[a]->get_netpoint(), all[b]->get_netpoint(), nullptr, nullptr, route,
                      true);
    }
  }
  root->seal();
  out.hosts.assign(all.begin(), all.begin() + devices.size());
  if (tp_mirrors) out.mirrors.assign(all.begin() + devices.size(), all.end());
  std::map<int, int> distinct;  // nodes holding simulated devices
  for (const auto& [key, link] : nic_links) distinct[key.first] = 1;
  out.nodes = static_cast<int>(distinct.size());
  out.leaves = static_cast<int>(uplinks.size());
  return out;
}

}  // namespace

double leaf_uplink_Bps(const HardwareModel& hw, int leaf, double flows) {
  const NetworkSpec& net = hw.network;
  const int per_leaf = std::max(1, net.nodes_per_leaf), first = leaf * per_leaf;
  double sum = 0;
  for (int k = first; k < first + per_leaf; ++k) {
    const NodeSpec& ns = hw.node_spec(k < hw.num_nodes() ? k : first);
    sum += ns.nics * ns.nic.bandwidth_Bps * ns.nic.efficiency / flows;
  }
  return sum / std::max(1e-9, net.oversubscription);
}

SimPlatform build_platform(const HardwareModel& hw, const std::vector<int>& devices,
                           int replicated_flows, double speed_flops, bool tp_mirrors) {
  SS_ASSERT(replicated_flows >= 1, "replicated flows must be >= 1");
  SS_ASSERT(speed_flops > 0, "device speed must be > 0");
  if (hw.network.topology == NetworkTopology::kRailOptimized && hw.num_nodes() > 1) {
    return build_rail_platform(hw, devices, replicated_flows, speed_flops, tp_mirrors);
  }
  // A mixed cluster's nodes have their own group's links (HardwareModel::node_spec), and each
  // leaf's uplink serves its own nodes' NICs (leaf_uplink_Bps).
  const NetworkSpec& net = hw.network;
  const double flows = replicated_flows;
  auto node_Bps_of = [&](const NodeSpec& ns) { return ns.nics * ns.nic.bandwidth_Bps * ns.nic.efficiency / flows; };
  const double levels = std::max(1, net.levels);
  const double uplink_latency_s = (levels - 1) * net.switch_latency_s;

  auto* root = sg4::create_full_zone("cluster");
  std::map<int, Node> nodes;  // node index -> zone, only nodes holding simulated devices
  std::map<int, sg4::Link*> uplinks;
  SimPlatform out;
  out.hosts.resize(devices.size());
  if (tp_mirrors) out.mirrors.resize(devices.size());
  std::map<int, std::vector<size_t>> by_node;
  for (size_t i = 0; i < devices.size(); ++i) by_node[devices[i] / hw.node.devices].push_back(i);
  for (const auto& [index, members] : by_node) {
    const NodeSpec& ns = hw.node_spec(index);
    const LinkSpec& dev = ns.device_link;
    const double nic_latency_s =
        std::max(0.0, ns.nic.latency_s - dev.latency_s) + net.switch_latency_s;
    Node& n = nodes[index];
    n.leaf = index / std::max(1, net.nodes_per_leaf);
    n.zone = sg4::create_star_zone(padded("node", index));
    n.zone->set_parent(root);
    n.gateway = n.zone->create_router(padded("node", index) + "-switch");
    auto device = [&](const std::string& name) {
      sg4::Host* h = n.zone->create_host(name, speed_flops)->seal();
      sg4::Link* l =
          n.zone->create_split_duplex_link(name + "-link", dev.bandwidth_Bps * dev.efficiency)
              ->set_latency(dev.latency_s / 2)
              ->seal();
      n.zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {{l, Direction::UP}}, true);
      return h;
    };
    for (size_t i : members) {
      out.hosts[i] = device(padded("gpu", devices[i]));
      if (tp_mirrors) out.mirrors[i] = device(padded("gpu", devices[i]) + "-tp");
    }
    n.zone->seal();
    n.nic = root->create_split_duplex_link(padded("node", index) + "-nic", node_Bps_of(ns))
                ->set_latency(nic_latency_s / 2)
                ->seal();
    if (!uplinks.count(n.leaf)) {
      uplinks[n.leaf] =
          root->create_split_duplex_link(padded("leaf", n.leaf) + "-uplink",
                                         leaf_uplink_Bps(hw, n.leaf, flows))
              ->set_latency(uplink_latency_s)
              ->seal();
    }
  }
  for (auto a = nodes.begin(); a != nodes.end(); ++a) {
    for (auto b = std::next(a); b != nodes.end(); ++b) {
      std::vector<sg4::LinkInRoute> route{{a->second.nic, Direction::UP}};
      if (a->second.leaf != b->second.leaf) {
        route.push_back({uplinks[a->second.leaf], Direction::UP});
        route.push_back({uplinks[b->second.leaf], Direction::DOWN});
      }
      route.push_back({b->second.nic, Direction::DOWN});
      root->add_route(a->second.zone->get_netpoint(), b->second.zone->get_netpoint(),
                      a->second.gateway, b->second.gateway, route, true);
    }
  }
  root->seal();
  out.nodes = static_cast<int>(nodes.size());
  out.leaves = static_cast<int>(uplinks.size());
  return out;
}

}  // namespace stratasim::simgrid_detail
