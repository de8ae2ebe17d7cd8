// Mixed clusters (HardwareModel::groups): node groups of different devices; pipeline ranks
// costed on their own group's devices, layer counts balanced by the groups' sustained GEMM
// rates (strategies/lowering/mixed_cluster.h). Expected values are worked by hand from the
// catalog's peaks and GEMM plateaus.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/stage_costs.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"

namespace stratasim {
namespace {

HardwareModel cluster_from(const std::string& text) {
  Json j = Json::parse(text);
  return read_cluster(JsonNode(j, "mixed.json", "cluster"));
}

// 2 DGX A100 then 2 DGX H100 nodes.
HardwareModel a100_then_h100() {
  return cluster_from(R"({"groups": [{"preset": "dgx_a100", "devices": 16}, {"preset": "dgx_h100", "devices": 16}]})");
}

Strategy pipeline(int tp, int pp, StageSplit split) {
  Strategy s;
  s.tp = tp, s.pp = pp, s.micro_batch = 1, s.global_batch = 32;
  s.sequence_parallel = tp > 1;
  s.fusion.flash_attention = true;
  s.stage_split = split;
  return s;
}

std::vector<int> layers_of(const Plan& p) {
  std::vector<int> out;
  for (const VirtualStage& st : p.stages) out.push_back(st.layers);
  return out;
}

TEST_CASE("mixed cluster: groups in device order, the first group's device and node as the nominal ones") {
  const HardwareModel hw = a100_then_h100();
  REQUIRE(hw.mixed());
  CHECK(hw.num_devices == 32);
  CHECK(hw.num_nodes() == 4);
  CHECK(hw.name == "dgx_a100+dgx_h100");
  CHECK(hw.device.name == "A100-SXM4-80GB");
  CHECK(hw.group_of_device(15) == 0);
  CHECK(hw.group_of_device(16) == 1);
  CHECK(hw.node_spec(1).nic.name == "ib_hdr");
  CHECK(hw.node_spec(2).nic.name == "ib_ndr");
  CHECK(hw.group_view(1).device.name == "H100-SXM5-80GB");
  // HDR (200 Gb/s) NICs are slower than NDR (400 Gb/s): a transfer between the groups sees A100's.
  CHECK(hw.between_groups(0, 1).node.nic.name == "ib_hdr");
  // Written and read back unchanged.
  Json j = to_json(hw);
  CHECK(read_cluster(JsonNode(j, "roundtrip.json", "")) == hw);
}

TEST_CASE("mixed cluster: malformed groups name the path, the value and the rule") {
  const std::string sizes = testing::input_error_message([] {
    cluster_from(R"({"groups": ["dgx_a100", "dgx2_v100"]})");
  });
  CHECK(sizes.find("mixed.json") != std::string::npos);
  CHECK(sizes.find("cluster.groups[1]") != std::string::npos);
  CHECK(sizes.find("has 16 devices per node where the first group has 8") != std::string::npos);
  const std::string beside = testing::input_error_message([] {
    cluster_from(R"({"groups": ["dgx_a100"], "device": "H100-SXM5-80GB"})");
  });
  CHECK(beside.find("cluster.device") != std::string::npos);
  CHECK(beside.find("cannot be given beside \"groups\"") != std::string::npos);
  const std::string part = testing::input_error_message([] {
    cluster_from(R"({"groups": [{"preset": "dgx_a100", "devices": 4}, "dgx_h100"]})");
  });
  CHECK(part.find("holds 4 devices: a group of a mixed cluster holds whole nodes of 8") != std::string::npos);
  // dgx_h100's network is rail-optimized; a group of 4-NIC nodes cannot join its rails.
  const std::string rails = testing::input_error_message([] {
    cluster_from(R"({"groups": ["dgx_h100", {"preset": "dgx_h100", "node": {"nics": 4}}]})");
  });
  CHECK(rails.find("cluster.groups[1]") != std::string::npos);
  CHECK(rails.find("has 4 NICs per node where the first group has 8; a rail-optimized network needs one NIC count") !=
        std::string::npos);
  const std::string empty = testing::input_error_message([] { cluster_from(R"({"groups": []})"); });
  CHECK(empty.find("must be a non-empty array of clusters") != std::string::npos);
}

TEST_CASE("mixed cluster: balanced stages take layers in proportion to the sustained GEMM rate") {
  const ModelSpec m = model_preset("llama3-8b");  // 32 layers
  const Plan p = *lower(m, pipeline(8, 4, StageSplit::kAuto), a100_then_h100());
  // Ranks 0, 1 on A100 (312 TFLOP/s bf16 x 0.82 = 255.84), ranks 2, 3 on H100 (989 x 0.728 =
  // 719.99): shares 32 x 255.84 / 1951.66 = 4.19 and 32 x 719.99 / 1951.66 = 11.81; floors
  // 4, 4, 11, 11 leave 2 layers for the largest remainders (0.81, the H100 stages).
  CHECK(p.strategy.stage_split == StageSplit::kBalanced);  // auto resolved on a mixed cluster
  CHECK(layers_of(p) == std::vector<int>{4, 4, 12, 12});
  const Plan even = *lower(m, pipeline(8, 4, StageSplit::kEven), a100_then_h100());
  CHECK(layers_of(even) == std::vector<int>{8, 8, 8, 8});
  // The balanced split beats the even one, whose A100 stages hold the pipeline back: its
  // slowest stage (per micro-batch, forward + backward) is faster, and so is the iteration.
  auto slowest_stage_s = [](const Plan& plan) {
    const StageCosts c = stage_costs(plan);
    double most = 0;
    for (size_t i = 0; i < c.stages.size(); ++i) {
      most = std::max(most, c.durations.forward_s[i] + c.durations.backward_s[i]);
    }
    return most;
  };
  CHECK(slowest_stage_s(p) < slowest_stage_s(even));
  CHECK(predict_analytical(p).iteration_s < predict_analytical(even).iteration_s);
  // Reversed (the A100s given the H100s' share) is worse than even.
  Strategy reversed = pipeline(8, 4, StageSplit::kExplicit);
  reversed.stage_layers = {12, 12, 4, 4};
  CHECK(predict_analytical(*lower(m, reversed, a100_then_h100())).iteration_s > predict_analytical(even).iteration_s);
  // Each stage is costed on its own device: an H100 stage of 12 layers is faster per layer.
  const StageCosts c = stage_costs(p);
  CHECK(c.stages[2].compute_forward_s / 12 < 0.5 * c.stages[1].compute_forward_s / 4);
}

TEST_CASE("mixed cluster: an explicit stage_layers list is used as given and checked") {
  const ModelSpec m = model_preset("llama3-8b");
  Strategy s = pipeline(8, 4, StageSplit::kExplicit);
  s.stage_layers = {6, 6, 10, 10};
  CHECK(layers_of(*lower(m, s, a100_then_h100())) == std::vector<int>{6, 6, 10, 10});
  s.stage_layers = {6, 6, 10};
  Expected<Plan> bad = lower(m, s, a100_then_h100());
  REQUIRE(!bad.has_value());
  CHECK(bad.error().detail == "stage_layers lists 3 stages where the pipeline has 4 (pp*interleave)");
  s.stage_layers = {6, 6, 10, 9};
  bad = lower(m, s, a100_then_h100());
  REQUIRE(!bad.has_value());
  CHECK(bad.error().detail == "stage_layers sum to 31 where the model has 32 layers");
  // The JSON reader: a list, or one of auto/even/balanced.
  Json j = Json::parse(R"({"global_batch": 8, "stage_layers": "fastest"})");
  const std::string msg = testing::input_error_message([&] { read_strategy(JsonNode(j, "s.json", "strategy")); });
  CHECK(msg.find("strategy.stage_layers") != std::string::npos);
  CHECK(msg.find("auto, even, balanced") != std::string::npos);
}

TEST_CASE("mixed cluster: data parallel across the groups runs at the slower group's pace") {
  // pp 1: every rank spans both groups, so the iteration is the all-A100 cluster's.
  const ModelSpec m = model_preset("llama3-8b");
  Strategy s = pipeline(8, 1, StageSplit::kAuto);
  HardwareModel a100 = catalog_cluster("dgx_a100");
  a100.num_devices = 32;
  const double mixed_s = predict_analytical(*lower(m, s, a100_then_h100())).iteration_s;
  const double a100_s = predict_analytical(*lower(m, s, a100)).iteration_s;
  CHECK(mixed_s == doctest::Approx(a100_s).epsilon(1e-12));
  HardwareModel h100 = catalog_cluster("dgx_h100");
  h100.num_devices = 32;
  CHECK(predict_analytical(*lower(m, s, h100)).iteration_s < 0.6 * mixed_s);
}

TEST_CASE("mixed cluster: the transfer between the groups crosses the slower NICs, each rank fits its own memory") {
  const ModelSpec m = model_preset("llama3-8b");
  const Strategy s = pipeline(8, 4, StageSplit::kEven);
  HardwareModel a100 = catalog_cluster("dgx_a100"), h100 = catalog_cluster("dgx_h100");
  a100.num_devices = h100.num_devices = 32;
  const StageCosts mixed = stage_costs(*lower(m, s, a100_then_h100()));
  const StageCosts on_a100 = stage_costs(*lower(m, s, a100));
  const StageCosts on_h100 = stage_costs(*lower(m, s, h100));
  // Boundary 1 -> 2 joins an A100 node and an H100 node: HDR's time, not NDR's.
  CHECK(mixed.transfer_s[1] == doctest::Approx(on_a100.transfer_s[1]));
  CHECK(mixed.transfer_s[1] > on_h100.transfer_s[1]);
  // Boundary 2 -> 3 is between two H100 nodes.
  CHECK(mixed.transfer_s[2] == doctest::Approx(on_h100.transfer_s[2]));
  // Memory: each rank's runtime reserve is its own device's (A100 2 GiB, H100 3 GiB here).
  const Prediction p = predict_analytical(*lower(m, s, a100_then_h100()));
  CHECK(p.rank_memory[0].workspace_B + p.rank_memory[0].context_B == a100.device.reserved_memory_B);
  CHECK(p.rank_memory[3].workspace_B + p.rank_memory[3].context_B == h100.device.reserved_memory_B);
  CHECK(p.fits);
}

}  // namespace
}  // namespace stratasim

namespace stratasim {
namespace {

TEST_CASE("mixed cluster: a rank spanning groups must fit on each group's devices") {
  // Llama 3 8B, tp 8, pp 1, dp 4 over one DGX A100 40GB node and three DGX H100 80GB nodes: the
  // single pipeline rank spans both groups and holds the same bytes on each device (A100 40GB
  // 40 GiB with a 2 GiB reserve, H100 80 GiB with 3 GiB). It is slower on the A100s but must
  // also fit in their 40 GiB: with micro-batches of 8 sequences and every activation stored it
  // does not (about 63 GiB: the H100s alone would hold it); with full recomputation it does.
  // The capacity reported is the A100 40GB's, the tightest.
  const ModelSpec m = model_preset("llama3-8b");
  const HardwareModel hw = cluster_from(
      R"({"groups": [{"preset": "dgx_a100_40gb", "devices": 8}, {"preset": "dgx_h100", "devices": 24}]})");
  Strategy s = pipeline(8, 1, StageSplit::kAuto);
  s.global_batch = 32, s.micro_batch = 8;
  const Plan plan = *lower(m, s, hw);
  const Prediction p = predict_analytical(plan);
  const double a100_B = hw.groups[0].device.memory_B, h100_B = hw.groups[1].device.memory_B;
  REQUIRE(a100_B < h100_B);
  const double held = p.rank_memory[0].total();
  CAPTURE(held / kGiB);
  REQUIRE(held > a100_B);
  REQUIRE(p.rank_memory[0].allocated() + hw.groups[1].device.reserved_memory_B < h100_B);
  CHECK_FALSE(p.fits);
  CHECK(p.capacity_B == a100_B);
  CHECK(p.rank_memory[0].workspace_B + p.rank_memory[0].context_B ==
        hw.groups[0].device.reserved_memory_B);
  s.recompute = Recompute::kFull;
  const Prediction recomputed = predict_analytical(*lower(m, s, hw));
  CHECK(recomputed.fits);
  CHECK(recomputed.capacity_B == a100_B);
}

}  // namespace
}  // namespace stratasim
