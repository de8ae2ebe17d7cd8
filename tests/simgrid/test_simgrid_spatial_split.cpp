// A spatial split of an operator graph (strategies/lowering/spatial_split.h) in the SimGrid engine:
// the halo exchanges and row gathers sit inside the op durations both engines share (as ring
// attention's exchange does), the gradient sync over dp x cp is simulated. Without contention
// both engines agree within 0.5%, in training and inference, one node and across nodes.
#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

ModelSpec spatial_cnn() {
  // Two 3x3 convolutions (64 channels, 56 x 56), a ReLU inheriting their rows, a global pool and a
  // classifier without rows.
  ModelSpec m;
  m.name = "spatial-cnn";
  m.family = ModelFamily::kOpGraph;
  const double act = 64.0 * 56 * 56;
  m.graph.ops = {
      GraphOp{.name = "conv1", .kind = GraphOpKind::kConv, .flops = 2.0 * 9 * 64 * act, .output_elements = act,
              .params = 9.0 * 64 * 64, .input_elements = act, .height = 56, .halo = 1},
      GraphOp{.name = "relu", .kind = GraphOpKind::kElementwise, .flops = act, .output_elements = act, .inputs = {0}},
      GraphOp{.name = "conv2", .kind = GraphOpKind::kConv, .flops = 2.0 * 9 * 64 * act, .output_elements = act,
              .params = 9.0 * 64 * 64, .inputs = {1}, .height = 56, .halo = 1},
      GraphOp{.name = "pool", .kind = GraphOpKind::kPool, .flops = act, .output_elements = 64, .inputs = {2}},
      GraphOp{.name = "fc", .kind = GraphOpKind::kMatmul, .flops = 2.0 * 64 * 1000, .output_elements = 1000,
              .params = 64.0 * 1000, .inputs = {3}},
      GraphOp{.name = "loss", .kind = GraphOpKind::kLoss, .flops = 5000, .output_elements = 1, .inputs = {4}}};
  return m;
}

TEST_CASE("simgrid: a spatially split graph agrees with the analytical engine (training on A100s, inference on CPU nodes)") {
  struct Case {
    ModelSpec model;
    const char* cluster;
    int devices, cp;
    Workload workload;
    DType dtype;
  };
  const Case cases[] = {{spatial_cnn(), "dgx_a100", 8, 4, Workload::kTraining, DType::kBf16},
                        {spatial_cnn(), "dgx_a100", 16, 16, Workload::kTraining, DType::kBf16},
                        {make_image_pipeline(2160, 3840), "cpu_cluster", 8, 4, Workload::kInference, DType::kFp32}};
  for (const Case& c : cases) {
    Strategy s;
    s.cp = c.cp, s.micro_batch = 4, s.global_batch = 4 * c.devices, s.workload = c.workload, s.dtype = c.dtype;
    s.overlap_dp = true;
    HardwareModel hw = catalog_cluster(c.cluster);
    hw.num_devices = c.devices;
    const Expected<Plan> plan = lower(c.model, s, hw);
    REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
    const Prediction a = predict_analytical(*plan);
    const Prediction g = predict_simgrid(*plan, {.timeline = false});
    CAPTURE(c.cluster);
    CAPTURE(c.cp);
    CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < 5e-3);
    double cp_a = 0, cp_g = 0;
    for (const CommStat& x : a.comms) cp_a += x.category == CommCategory::kContextParallel ? x.total_s : 0;
    for (const CommStat& x : g.comms) cp_g += x.category == CommCategory::kContextParallel ? x.total_s : 0;
    CHECK(cp_a > 0);
    CHECK(cp_g == doctest::Approx(cp_a).epsilon(1e-9));
  }
}

}  // namespace
}  // namespace stratasim
