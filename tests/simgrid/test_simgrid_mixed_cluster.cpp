// A mixed cluster (HardwareModel::groups) in the SimGrid engine: the platform gives each node
// its own group's links, each pipeline rank syncs on its group's devices and links, and a
// transfer between the groups crosses both nodes' NICs. Without contention it agrees with the
// analytical engine.
#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/platform.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

TEST_CASE("simgrid: each fat-tree leaf's uplink serves its own nodes' NICs on a mixed cluster") {
  // Two DGX A100 nodes (8 HDR NICs of 200 Gb/s = 25 GB/s) then two DGX H100 nodes (8 NDR of
  // 400 Gb/s = 50 GB/s), two nodes per leaf, 4:1 oversubscription: leaf 0's uplink carries
  // 2 x 8 x 25 GB/s x eff / 4, leaf 1's 2 x 8 x 50 GB/s x eff / 4 (each NIC at its catalog
  // efficiency), twice leaf 0's when the efficiencies are equal.
  Json j = Json::parse(R"({"groups": [{"preset": "dgx_a100", "devices": 16}, {"preset": "dgx_h100", "devices": 16}],
                           "network": {"topology": "fat_tree", "oversubscription": 4, "nodes_per_leaf": 2}})");
  const HardwareModel hw = read_cluster(JsonNode(j, "mixed.json", "cluster"));
  const LinkSpec &hdr = hw.groups[0].node.nic, &ndr = hw.groups[1].node.nic;
  REQUIRE(hdr.bandwidth_Bps == doctest::Approx(25e9));
  REQUIRE(ndr.bandwidth_Bps == doctest::Approx(50e9));
  using simgrid_detail::leaf_uplink_Bps;
  CHECK(leaf_uplink_Bps(hw, 0) == doctest::Approx(2 * 8 * 25e9 * hdr.efficiency / 4));
  CHECK(leaf_uplink_Bps(hw, 1) == doctest::Approx(2 * 8 * 50e9 * ndr.efficiency / 4));
  CHECK(leaf_uplink_Bps(hw, 1, 8) == doctest::Approx(leaf_uplink_Bps(hw, 1) / 8));  // per replicated flow
  // One kind of node: nodes_per_leaf times the node's NICs, as before.
  HardwareModel a100 = catalog_cluster("dgx_a100");
  a100.num_devices = 32;
  a100.network.oversubscription = 4, a100.network.nodes_per_leaf = 2;
  CHECK(leaf_uplink_Bps(a100, 1) == doctest::Approx(2 * 8 * 25e9 * a100.node.nic.efficiency / 4));
}

TEST_CASE("simgrid: a mixed A100 + H100 cluster agrees with the analytical engine (pipeline over the groups, data parallel across them)") {
  Json j = Json::parse(R"({"groups": [{"preset": "dgx_a100", "devices": 16}, {"preset": "dgx_h100", "devices": 16}]})");
  const HardwareModel hw = read_cluster(JsonNode(j, "mixed.json", "cluster"));
  ModelSpec m = model_preset("llama3-8b");
  m.transformer.layers = 8;  // a short model: the engines' agreement, not the model, is tested
  struct Case {
    int tp, pp;
  };
  for (const Case c : {Case{8, 4}, Case{8, 2}, Case{4, 2}, Case{8, 1}}) {
    Strategy s;
    s.tp = c.tp, s.pp = c.pp, s.micro_batch = 1, s.global_batch = 32;
    s.sequence_parallel = true;
    s.fusion.flash_attention = true;
    s.overlap_dp = true;
    const Plan plan = *lower(m, s, hw);
    const Prediction a = predict_analytical(plan);
    const Prediction g = predict_simgrid(plan, {.timeline = false});
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < 0.005);
    // Layer granularity: each stage cut into layers on its own group's devices, TP collectives
    // as messages through that group's NVLink ports.
    const Prediction l = predict_simgrid(plan, {.timeline = false, .granularity = SimGranularity::kLayer});
    CHECK(std::abs(l.iteration_s - a.iteration_s) / a.iteration_s < 0.005);
  }
}

}  // namespace
}  // namespace stratasim
