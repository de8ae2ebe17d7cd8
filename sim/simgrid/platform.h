// The SimGrid platform of a HardwareModel (internal to sim/simgrid; includes SimGrid).
//
//   node zone (star): one host per simulated device, each with a split-duplex device link
//       (NVLink/NVSwitch port: bandwidth x efficiency, half the link latency per direction)
//       to the node's switch router, which is the zone's gateway;
//   root zone (full): the nodes, each with a split-duplex NIC link (all the node's NICs,
//       bandwidth x efficiency), and per leaf switch a split-duplex uplink of
//       nodes_per_leaf x node bandwidth / oversubscription: the fat tree with its bisection
//       cut at the leaves, above which it is non-blocking. A route crosses two uplinks only
//       when the nodes sit under different leaves.
//
// Rail-optimized networks (NetworkTopology::kRailOptimized, more than one node) get one full
// zone instead: NIC i of every node on rail switch i, cross-rail traffic through the rail
// switches' uplinks to the spine; see build_rail_platform in platform.cpp.
//
// Latencies add up to the analytical alpha: device link l_dev in total inside a node; across
// nodes l_dev + (NIC latency - l_dev) + switch latency per hop (1 hop under one leaf,
// 2 * levels - 1 across leaves, as collective_cost.h counts).
//
// `replicated_flows`: each simulated host stands for that many identical devices whose flows
// share the node's NIC and the fabric (tensor-parallel peers); links above the device link
// get 1 / replicated_flows of their bandwidth, which under max-min sharing gives every flow
// exactly the rate it would get if all replicas were simulated.
//
// `tp_mirrors`: each simulated host also gets a mirror host in its node zone, with its own
// device link, standing for its tensor-parallel ring neighbours: a collective's messages go
// host -> mirror and mirror -> host, loading the host's port in both directions exactly as a
// ring (or tree) step among identical peers does; the NVSwitch itself is non-blocking, so the
// host's own port is the only place where that traffic meets other traffic.
#pragma once

#include <simgrid/s4u.hpp>
#include <vector>

#include "hardware_models/src/hardware_model.h"

namespace stratasim::simgrid_detail {

struct SimPlatform {
  std::vector<simgrid::s4u::Host*> hosts;    // one per entry of `devices`, same order
  std::vector<simgrid::s4u::Host*> mirrors;  // same order, when asked for (else empty)
  int nodes = 0;
  int leaves = 0;
};

// A fat-tree leaf's uplink to the spine (B/s per direction): the NIC bandwidth of the
// nodes_per_leaf nodes it serves, divided by the oversubscription; on a mixed cluster each node
// counts its own group's NICs (a leaf past the last node is sized as if the leaf's first node
// were repeated). `flows`: how many simulated flows each simulated one stands for.
double leaf_uplink_Bps(const HardwareModel& hw, int leaf, double flows = 1);

// Call once per process, after the Engine exists. `devices` are global device indices
// (sorted, distinct); `speed_flops` the achievable FLOP/s of one device.
SimPlatform build_platform(const HardwareModel& hw, const std::vector<int>& devices,
                           int replicated_flows, double speed_flops, bool tp_mirrors);

}  // namespace stratasim::simgrid_detail
