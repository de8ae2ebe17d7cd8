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

}  // namespace

SimPlatform build_platform(const HardwareModel& hw, const std::vector<int>& devices,
                           int replicated_flows, double speed_flops) {
  SS_ASSERT(replicated_flows >= 1, "replicated flows must be >= 1");
  SS_ASSERT(speed_flops > 0, "device speed must be > 0");
  const LinkSpec& dev = hw.node.device_link;
  const LinkSpec& nic = hw.node.nic;
  const NetworkSpec& net = hw.network;
  const double flows = replicated_flows;
  const double node_Bps = hw.node.nics * nic.bandwidth_Bps * nic.efficiency / flows;
  const double levels = std::max(1, net.levels);
  const double nic_latency_s = std::max(0.0, nic.latency_s - dev.latency_s) + net.switch_latency_s;
  const double uplink_latency_s = (levels - 1) * net.switch_latency_s;
  const double uplink_Bps = net.nodes_per_leaf * node_Bps / std::max(1e-9, net.oversubscription);

  auto* root = sg4::create_full_zone("cluster");
  std::map<int, Node> nodes;  // node index -> zone, only nodes holding simulated devices
  std::map<int, sg4::Link*> uplinks;
  SimPlatform out;
  out.hosts.resize(devices.size());
  std::map<int, std::vector<size_t>> by_node;
  for (size_t i = 0; i < devices.size(); ++i) by_node[devices[i] / hw.node.devices].push_back(i);
  for (const auto& [index, members] : by_node) {
    Node& n = nodes[index];
    n.leaf = index / std::max(1, net.nodes_per_leaf);
    n.zone = sg4::create_star_zone(padded("node", index));
    n.zone->set_parent(root);
    n.gateway = n.zone->create_router(padded("node", index) + "-switch");
    for (size_t i : members) {
      sg4::Host* h = n.zone->create_host(padded("gpu", devices[i]), speed_flops)->seal();
      sg4::Link* l = n.zone
                         ->create_split_duplex_link(padded("gpu", devices[i]) + "-link",
                                                    dev.bandwidth_Bps * dev.efficiency)
                         ->set_latency(dev.latency_s / 2)
                         ->seal();
      n.zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {{l, Direction::UP}}, true);
      out.hosts[i] = h;
    }
    n.zone->seal();
    n.nic = root->create_split_duplex_link(padded("node", index) + "-nic", node_Bps)
                ->set_latency(nic_latency_s / 2)
                ->seal();
    if (!uplinks.count(n.leaf)) {
      uplinks[n.leaf] =
          root->create_split_duplex_link(padded("leaf", n.leaf) + "-uplink", uplink_Bps)
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
