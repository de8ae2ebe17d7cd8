// Model parallelism by placement (Strategy::placement, issue 13): an operator graph's ops on the
// devices of a replica, the sends its cross-device edges imply, and what each device holds.
// Every expected value is composed by hand from the kernels' times alone and the send's
// alpha + bytes / bandwidth.
#include <doctest/doctest.h>

#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/block_cost.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/device_variability.h"
#include "sim/cost/kernel_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

constexpr double kWidth = 1024;

GraphOp graph_op(std::string name, GraphOpKind kind, double flops, double out, double params,
                 std::vector<int> inputs) {
  return GraphOp{.name = std::move(name), .kind = kind, .flops = flops, .output_elements = out,
                 .params = params, .inputs = std::move(inputs)};
}

// input -> {a.fc, b.fc} (equal 1024x1024 matmuls) -> merge(a, b) -> loss.
ModelSpec two_branches() { return testing::two_branch_graph("a.fc", "b.fc"); }

Strategy placed(std::vector<PlacementRule> rules, int micro_batch = 64) {
  Strategy s;
  s.micro_batch = micro_batch;
  s.global_batch = micro_batch;
  s.placement = std::move(rules);
  return s;
}

// Branch b on device 1, the rest on device 0.
Strategy b_on_device_1(int micro_batch = 64) { return placed({{"b", 1}, {"*", 0}}, micro_batch); }

double kernel_s(const Plan& p, const std::vector<Kernel>& ks, std::string_view op) {
  for (const Kernel& k : ks) {
    if (p.model.graph.ops[p.layer->graph.ops[k.first_op].source_op].name == op) {
      return kernel_time(k, p.hardware.device, p.strategy.dtype, AttentionKernel::kFlash2, slowest_device_factor(p.hardware)).total_s;
    }
  }
  FAIL("no kernel for op " << op);
  return 0;
}

Expected<Plan> lower_on(const ModelSpec& m, const Strategy& s, int devices) {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  return lower(m, s, hw);
}

TEST_CASE("placement: a two-branch graph on two devices takes max(branch) + the send, forward and backward") {
  const Plan p = testing::lower_on_dgx_a100(two_branches(), b_on_device_1(), 2);
  REQUIRE(p.mp == 2);
  REQUIRE(p.data_parallel() == 1);
  const Block& b = *p.layer;
  const double ta = kernel_s(p, b.forward, "a.fc"), tb = kernel_s(p, b.forward, "b.fc");
  const double tm = kernel_s(p, b.forward, "merge"), tl = kernel_s(p, b.forward, "loss");
  // b's output: 1024 elements x 64 samples x 2 B, over NVLink inside the DGX (alpha + S/B).
  const double bytes = kWidth * 64 * 2;
  const double send = p2p_time(bytes, true, p.hardware);
  const LinkLevel nvlink = intra_node_level(p.hardware);
  CHECK(send == doctest::Approx(bytes / nvlink.bandwidth_Bps + nvlink.latency_s));
  const BlockCost c = block_cost(b, p);
  // a on device 0 and b on device 1 start together; merge waits for a and for b's output to
  // arrive: max(ta, tb + send) (tb = ta: equal GEMMs), then loss.
  CHECK(ta == doctest::Approx(tb));
  CHECK(c.forward_s == doctest::Approx(std::max(ta, tb + send) + tm + tl).epsilon(1e-9));
  // Backward: loss', merge' on device 0; then a' on device 0 beside the gradient's send to
  // device 1 and b' there: max(a', send + b').
  const double la = kernel_s(p, b.backward, "a.fc"), lb = kernel_s(p, b.backward, "b.fc");
  const double lm = kernel_s(p, b.backward, "merge"), ll = kernel_s(p, b.backward, "loss");
  CHECK(c.backward_s == doctest::Approx(ll + lm + std::max(la, send + lb)).epsilon(1e-9));
  // Two sends of `bytes`, each fully exposed (the other branch ends before it arrives).
  CHECK(c.mp_bytes == doctest::Approx(2 * bytes));
  CHECK(c.mp_total_s == doctest::Approx(2 * send));
  CHECK(c.mp_exposed_s == doctest::Approx(2 * send).epsilon(1e-9));
}

TEST_CASE("placement: two sends leaving one device share its port") {
  // input -> root (device 0) -> {left (device 1), right (device 2)}; left and right end the
  // graph through a merge on device 0. root's output goes to two devices: two sends of the
  // same S bytes leave device 0 together and share its port max-min, half each, so both end
  // at 2 (alpha + S / B), after which left and right run side by side.
  ModelSpec m;
  m.name = "fan out";
  m.family = ModelFamily::kOpGraph;
  const double w = kWidth;
  m.graph.ops = {graph_op("root", GraphOpKind::kMatmul, 2 * w * w, w, w * w, {}),
                 graph_op("left", GraphOpKind::kMatmul, 2 * w * w, w, w * w, {0}),
                 graph_op("right", GraphOpKind::kMatmul, 2 * w * w, w, w * w, {0}),
                 graph_op("merge", GraphOpKind::kElementwise, w, w, 0, {1, 2}),
                 graph_op("loss", GraphOpKind::kLoss, 5 * w, 1, 0, {3})};
  m.graph.ops[0].input_elements = w;
  const Plan p = testing::lower_on_dgx_a100(m, placed({{"left", 1}, {"right", 2}, {"*", 0}}), 3);
  const Block& b = *p.layer;
  const double send = p2p_time(w * 64 * 2, true, p.hardware);
  const double root = kernel_s(p, b.forward, "root"), left = kernel_s(p, b.forward, "left");
  const double right = kernel_s(p, b.forward, "right"), merge = kernel_s(p, b.forward, "merge");
  const double loss = kernel_s(p, b.forward, "loss");
  REQUIRE(left == doctest::Approx(right));
  // Then left's and right's outputs come back to device 0, each from its own port: alpha + S/B.
  const double expected = root + 2 * send + left + send + merge + loss;
  CHECK(block_cost(b, p).forward_s == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("placement: everything on one device with one stream is the serial sum, with no sends") {
  const Plan p = testing::lower_on_dgx_a100(two_branches(), placed({{"*", 0}}), 1);
  REQUIRE(p.mp == 1);
  const Block& b = *p.layer;
  double serial = 0;
  for (const char* op : {"a.fc", "b.fc", "merge", "loss"}) serial += kernel_s(p, b.forward, op);
  const BlockCost c = block_cost(b, p);
  CHECK(c.forward_s == doctest::Approx(serial).epsilon(1e-9));
  CHECK(c.mp_bytes == 0.0);
}

TEST_CASE("placement: each device holds its ops' parameters and the tensors its ops save") {
  const int mb = 64;
  const Plan p = testing::lower_on_dgx_a100(two_branches(), b_on_device_1(mb), 2);
  REQUIRE(p.placed.size() == 2);
  CHECK(p.placed[0].ops == 3);
  CHECK(p.placed[1].ops == 1);
  CHECK(p.placed[0].params == doctest::Approx(kWidth * kWidth));
  CHECK(p.placed[1].params == doctest::Approx(kWidth * kWidth));
  // A matmul saves its input (the model input, 1024 x 64 x 2 B, on each device that runs one);
  // the elementwise merge saves its output (same size) on device 0. Device 0: 2 tensors,
  // device 1: 1.
  const double tensor = kWidth * mb * 2;
  CHECK(p.placed[0].activation_B == doctest::Approx(2 * tensor));
  CHECK(p.placed[1].activation_B == doctest::Approx(tensor));
  // The memory model reports the fullest device: its weights are a's, not both branches'.
  const Prediction pred = predict_analytical(p);
  REQUIRE(pred.rank_memory.size() == 1);
  CHECK(pred.rank_memory[0].weights_B == doctest::Approx(kWidth * kWidth * 2));
  CHECK(pred.rank_memory[0].activations_B == doctest::Approx(2 * tensor));
}

TEST_CASE("placement: replicas are mp consecutive devices, data parallelism is over the rest") {
  const Plan p = testing::lower_on_dgx_a100(two_branches(), [] {
    Strategy s = b_on_device_1();
    s.global_batch = 4 * 64;
    return s;
  }(), 8);
  CHECK(p.mp == 2);
  CHECK(p.data_parallel() == 4);
  CHECK(p.dp_group.ranks_per_node == 4);  // 8 devices / 2 per replica in one node
  CHECK(p.mp_group.size == 2);
  // The gradient sync moves the device with the most parameters: one branch, not two.
  CHECK(p.iteration.rank_params[0] == doctest::Approx(kWidth * kWidth));
  const Prediction pred = predict_analytical(p);
  bool placement_reported = false;
  for (const CommStat& c : pred.comms) {
    if (c.category != CommCategory::kPlacement) continue;
    placement_reported = true;
    CHECK(c.group_size == 2);
    CHECK(c.exposed_s > 0);
  }
  CHECK(placement_reported);
}

TEST_CASE("placement: the longest key wins, a prefix takes names up to a dot only") {
  ModelSpec m = two_branches();
  m.graph.ops[1].name = "a.fc2";  // "a" now takes both matmuls unless a longer key says otherwise
  Plan p = testing::lower_on_dgx_a100(m, placed({{"a", 1}, {"a.fc2", 0}, {"*", 0}}), 2);
  auto device_of = [&](int op) {
    for (const LayerOp& o : p.layer->graph.ops) {
      if (o.source_op == op) return int(o.device);
    }
    return -1;
  };
  CHECK(device_of(0) == 1);  // a.fc: "a"
  CHECK(device_of(1) == 0);  // a.fc2: "a.fc2" is longer
  CHECK(device_of(2) == 0);  // merge: "*"
  // "a.f" is not a prefix up to a dot of "a.fc".
  Expected<Plan> q = lower_on(two_branches(), placed({{"a.f", 1}, {"*", 0}}), 2);
  REQUIRE_FALSE(q.has_value());
  CHECK(q.error().field == "placement");
  CHECK(q.error().detail == "placement key 'a.f' takes no op of the model");
}

TEST_CASE("placement: impossible placements are refused with the reason") {
  auto refusal = [](const ModelSpec& m, const Strategy& s, int devices) {
    Expected<Plan> p = lower_on(m, s, devices);
    REQUIRE_FALSE(p.has_value());
    return p.error().detail;
  };
  CHECK(refusal(two_branches(), placed({{"a", 0}, {"b", 1}}), 2) ==
        "op 'merge' matches no placement key; name it, a prefix of it, or add \"*\"");
  CHECK(refusal(two_branches(), placed({{"b", 2}, {"*", 0}}), 3) ==
        "device 1 of 3 holds no op; number the devices 0..2 without gaps");
  CHECK(refusal(two_branches(), b_on_device_1(), 3) ==
        "tp*pp*placement devices=2 does not divide devices=3");
  CHECK(refusal(testing::small_gpt(2), b_on_device_1(), 2) ==
        "placement puts an operator graph's ops on devices; a transformer splits by tp, pp, cp and ep");
  Strategy grouped = placed({{"loss", 1}, {"*", 0}});
  grouped.fusion.graph_groups = {{"merge", "loss"}};
  CHECK(refusal(two_branches(), grouped, 2) ==
        "fusion group spans two devices of the placement; 'loss' is on device 1, 'merge' on device 0");
}

TEST_CASE("placement: epilogue fusion never joins ops on two devices") {
  ModelSpec m = two_branches();
  // relu after b.fc, its only consumer: fused with b.fc on one device, apart on two.
  m.graph.ops.insert(m.graph.ops.begin() + 2, graph_op("b.relu", GraphOpKind::kElementwise, kWidth, kWidth, 0, {1}));
  m.graph.ops[3].inputs = {0, 2};  // merge(a.fc, b.relu)
  m.graph.ops[4].inputs = {3};
  Strategy s = placed({{"b.fc", 1}, {"*", 0}});
  s.fusion.elementwise_epilogue = true;
  const Plan apart = testing::lower_on_dgx_a100(m, s, 2);
  s.placement = {{"b", 1}, {"*", 0}};
  const Plan together = testing::lower_on_dgx_a100(m, s, 2);
  CHECK(apart.layer->forward.size() == together.layer->forward.size() + 1);
}

TEST_CASE("placement: read from a JSON object of op keys and devices, and written back") {
  auto read = [](const std::string& text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  const Strategy s = read(R"({"global_batch": 8, "placement": {"tower0": 1, "*": 0}})");
  REQUIRE(s.placement.size() == 2);
  CHECK(s.placement_devices() == 2);
  CHECK(to_json(s)["placement"]["tower0"] == 1);
  CHECK(read(R"({"global_batch": 8})").placement_devices() == 1);
  const std::string range = testing::input_error_message([&] { read(R"({"global_batch": 8, "placement": {"a": 64}})"); });
  CHECK(range.find("strategy.placement.a") != std::string::npos);
  CHECK(range.find("64") != std::string::npos);
  const std::string list = testing::input_error_message([&] { read(R"({"global_batch": 8, "placement": [0, 1]})"); });
  CHECK(list.find("must be a JSON object") != std::string::npos);
  const std::string empty = testing::input_error_message([&] { read(R"({"global_batch": 8, "placement": {}})"); });
  CHECK(empty.find("must place at least one op") != std::string::npos);
}

}  // namespace
}  // namespace stratasim
