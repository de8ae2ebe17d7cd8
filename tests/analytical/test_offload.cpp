// Optimizer offload (Strategy::offload, ZeRO-Offload: Ren et al., USENIX ATC'21, Sec. 4): the
// optimizer shard moves to host memory, the step runs on the CPU between two PCIe copies.
// Expected values are worked by hand from the shard sizes, the link and the host bandwidth.
#include <doctest/doctest.h>

#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/cost/optimizer_cost.h"
#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

Strategy zero(int stage, Offload offload) {
  Strategy s;
  s.zero_stage = stage;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.offload = offload;
  return s;
}

Expected<Plan> lower_on(const ModelSpec& m, const Strategy& s, const char* cluster, int devices) {
  HardwareModel hw = catalog_cluster(cluster);
  hw.num_devices = devices;
  return lower(m, s, hw);
}

TEST_CASE("offload: frees exactly the optimizer shard on the device and holds it, with the fp32 gradient shard, on the host") {
  const ModelSpec m = testing::small_gpt(2);
  for (const int stage : {1, 2}) {
    const Plan on = *lower_on(m, zero(stage, Offload::kNone), "dgx_a100", 8);
    const Plan off = *lower_on(m, zero(stage, Offload::kOptimizer), "dgx_a100", 8);
    const MemoryBreakdown a = predict_analytical(on).rank_memory[0];
    const MemoryBreakdown b = predict_analytical(off).rank_memory[0];
    CAPTURE(stage);
    // psi parameters on the device, 12 B of Adam state each (fp32 master, m, v), sharded over 8.
    const double psi = on.stages[0].params;
    CHECK(a.optimizer_B == doctest::Approx(12 * psi / 8));
    CHECK(b.optimizer_B == 0.0);
    CHECK(a.total() - b.total() == doctest::Approx(a.optimizer_B));
    CHECK(b.weights_B == a.weights_B);
    CHECK(b.gradients_B == a.gradients_B);
    CHECK(b.host_B == doctest::Approx(12 * psi / 8 + 4 * psi / 8));
    CHECK(a.host_B == 0.0);
  }
}

TEST_CASE("offload: the step becomes gradient copy + CPU pass + weight copy, none of it hidden") {
  const ModelSpec m = testing::small_gpt(2);
  const Plan on = *lower_on(m, zero(2, Offload::kNone), "dgx_h100", 8);
  const Plan off = *lower_on(m, zero(2, Offload::kOptimizer), "dgx_h100", 8);
  const Prediction a = predict_analytical(on), b = predict_analytical(off);
  const double shard = on.stages[0].params / 8;
  // PCIe 5.0 x16 in the catalog: 64 GB/s x 0.80, 5 us per copy; bf16 gradients and weights.
  const double pcie = 64e9 * 0.80;
  const double down = 2 * shard / pcie + 5e-6, up = 2 * shard / pcie + 5e-6;
  // The CPU's pass reads and writes master, m and v (2 x 12 B), reads the gradient (2 B) and
  // writes the weight (2 B); 8 devices share the DGX H100's 614.4 GB/s x 0.8 at once.
  const double cpu = shard * (2 * 12 + 2 + 2) * 8 / 491.5e9;
  CHECK(b.optimizer_s == doctest::Approx(down + cpu + up).epsilon(1e-6));
  CHECK(b.iteration_s - a.iteration_s == doctest::Approx(b.optimizer_s - a.optimizer_s).epsilon(1e-6));
  bool noted = false;
  for (const std::string& n : b.notes) noted = noted || n.rfind("offload: host memory holds", 0) == 0;
  CHECK(noted);
}

TEST_CASE("offload: the node's host memory must hold what its devices offload") {
  ModelSpec m = testing::small_gpt(2);
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 8;
  const Plan fits = *lower(m, zero(1, Offload::kOptimizer), hw);
  CHECK(predict_analytical(fits).fits);
  hw.node.host_memory_B = 1e6;  // 1 MB of host memory
  const Plan tight = *lower(m, zero(1, Offload::kOptimizer), hw);
  const Prediction p = predict_analytical(tight);
  CHECK_FALSE(p.fits);
  bool noted = false;
  for (const std::string& n : p.notes) noted = noted || n.find(": does not fit") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("offload: refused without a ZeRO stage, in inference and on a cluster without a host") {
  const ModelSpec m = testing::small_gpt(2);
  auto refusal = [&](const Strategy& s, const char* cluster) {
    Expected<Plan> p = lower_on(m, s, cluster, 8);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().field == "offload");
    return p.error().detail;
  };
  CHECK(refusal(zero(0, Offload::kOptimizer), "dgx_a100") ==
        "optimizer offload moves ZeRO's optimizer partition to the host (ZeRO-Offload); set zero_stage 1, 2 or 3");
  Strategy infer = zero(0, Offload::kOptimizer);
  infer.workload = Workload::kInference;
  CHECK(refusal(infer, "dgx_a100") == "inference keeps no optimizer states to offload; set offload none");
  CHECK(refusal(zero(1, Offload::kOptimizer), "mi300x_node") ==
        "cluster 'mi300x_node' describes no host to offload to (node.host_link and node.host_memory_bandwidth)");
}

TEST_CASE("offload: read and written as a strategy key, and its unknown values named") {
  auto read = [](const std::string& text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  CHECK(read(R"({"global_batch": 8, "offload": "optimizer"})").offload == Offload::kOptimizer);
  CHECK(read(R"({"global_batch": 8})").offload == Offload::kNone);
  CHECK(to_json(read(R"({"global_batch": 8, "offload": "optimizer"})"))["offload"] == "optimizer");
  const std::string bad = testing::input_error_message([&] { read(R"({"global_batch": 8, "offload": "nvme"})"); });
  CHECK(bad.find("strategy.offload") != std::string::npos);
  CHECK(bad.find("none, optimizer") != std::string::npos);
}

TEST_CASE("offload: with overlap_dp the gradient copy runs bucket by bucket beside the last backward") {
  const Plan plan = *lower_on(testing::small_gpt(2), zero(2, Offload::kOptimizer), "dgx_h100", 8);
  IterOp copy;
  copy.kind = IterOpKind::kOffloadGradients;
  copy.bytes = 1.024e9;
  copy.repeats = 4;
  // PCIe 5.0 x16 (catalog): 64 GB/s x 0.80 = 51.2 GB/s, 5 us: T = 1.024e9 / 51.2e9 + 5e-6 =
  // 0.020005 s, t = T / 4 = 0.00500125 s per bucket.
  CHECK(optimizer_op_s(copy, plan) == doctest::Approx(0.020005));
  // Not overlapped: all of it after the reduction.
  CHECK(offload_copy_exposed_s(copy, plan, 0.010, 0.0) == doctest::Approx(0.020005));
  copy.overlaps_last_backward = true;
  // A last backward of L = 10 ms, reduction over with it: the buckets end
  // max(t, 4 t - L 3/4) = max(0.005, 0.020005 - 0.0075) = 0.012505 s after it.
  CHECK(offload_copy_exposed_s(copy, plan, 0.010, 0.0) == doctest::Approx(0.012505));
  // The reduction ends 15 ms after the backward: only the last bucket is left, t.
  CHECK(offload_copy_exposed_s(copy, plan, 0.010, 0.015) == doctest::Approx(0.00500125));
  // A long backward hides all but the last bucket.
  CHECK(offload_copy_exposed_s(copy, plan, 1.0, 0.0) == doctest::Approx(0.00500125));
  // The plan marks the copy overlapped exactly when the strategy overlaps DP communication.
  Strategy s = zero(2, Offload::kOptimizer);
  s.overlap_dp = true;
  const Plan overlapped = *lower_on(testing::small_gpt(2), s, "dgx_h100", 8);
  for (const Plan* p : {&plan, &overlapped}) {
    for (const IterOp& op : p->iteration.tail[0]) {
      if (op.kind == IterOpKind::kOffloadGradients) CHECK(op.overlaps_last_backward == (p == &overlapped));
    }
  }
  CHECK(predict_analytical(overlapped).optimizer_s < predict_analytical(plan).optimizer_s);
}

}  // namespace
}  // namespace stratasim
