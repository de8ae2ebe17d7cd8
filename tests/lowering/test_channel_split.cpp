// Channel (filter) parallelism for operator graphs (strategies/lowering/channel_split.h, issue
// 16): tp splits each convolution's filters; an all-gather of the channel-split input before
// each convolution and matmul (reduce-scatter of its gradient in the backward), a forward-only
// gather before the loss. Every expected value is worked by hand.
#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "tests/support/plan_kernels.h"

using namespace stratasim;
using stratasim::testing::collectives;

namespace {

// conv1 3x3, 3 -> 64 channels on a 32 x 32 image; its batch norm and ReLU; conv2 3x3, 64 -> 64;
// a global pool, a 10-way classifier and the loss.
ModelSpec small_cnn() {
  ModelSpec m;
  m.name = "small-cnn";
  m.family = ModelFamily::kOpGraph;
  const double act = 64.0 * 32 * 32, image = 3.0 * 32 * 32;
  m.graph.ops = {
      GraphOp{.name = "conv1", .kind = GraphOpKind::kConv, .flops = 2.0 * 9 * 3 * act, .output_elements = act,
              .params = 9.0 * 3 * 64, .input_elements = image},
      GraphOp{.name = "bn1", .kind = GraphOpKind::kNorm, .flops = 8 * act, .output_elements = act, .params = 128,
              .inputs = {0}},
      GraphOp{.name = "relu1", .kind = GraphOpKind::kElementwise, .flops = act, .output_elements = act, .inputs = {1}},
      GraphOp{.name = "conv2", .kind = GraphOpKind::kConv, .flops = 2.0 * 9 * 64 * act, .output_elements = act,
              .params = 9.0 * 64 * 64, .inputs = {2}},
      GraphOp{.name = "pool", .kind = GraphOpKind::kPool, .flops = act, .output_elements = 64, .inputs = {3}},
      GraphOp{.name = "fc", .kind = GraphOpKind::kMatmul, .flops = 2.0 * 64 * 10, .output_elements = 10,
              .params = 64.0 * 10, .inputs = {4}},
      GraphOp{.name = "loss", .kind = GraphOpKind::kLoss, .flops = 50, .output_elements = 1, .inputs = {5}}};
  return m;
}

Plan channel_plan(int tp, int devices) {
  Strategy s;
  s.tp = tp, s.micro_batch = 4, s.global_batch = 4 * devices / tp;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  Expected<Plan> plan = lower(small_cnn(), s, hw);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  return *plan;
}

}  // namespace

TEST_CASE("channel split: filters over 2 devices, the gathers before each convolution and matmul") {
  // tp 2, micro-batch 4, bf16. conv1 reads the whole image: no gather; it computes 32 of the 64
  // channels: 2 x 9 x 3 x 64 x 1024 x 4 / 2 = 7,077,888 FLOP. bn1 and ReLU run on those 32
  // channels. conv2 needs every input channel: an all-gather of relu1's whole 64 x 32 x 32 x 4 x
  // 2 B = 524,288 B, then 2 x 9 x 64 x 65,536 x 4 / 2 = 150,994,944 FLOP. The classifier all-gathers
  // the pooled 64 x 4 x 2 = 512 B; the loss the 10 x 4 x 2 = 80 B logits (forward only).
  const Plan plan = channel_plan(2, 2);
  CHECK(plan.tp_group.size == 2);
  const std::vector<Kernel>& fw = plan.layer->forward;
  const auto gathers = collectives(fw);
  REQUIRE(gathers.size() == 3);
  for (const Kernel* k : gathers) {
    CHECK(k->comm == CommKind::kAllGather);
    CHECK(k->group == GroupKind::kTensor);
  }
  CHECK(gathers[0]->comm_bytes == 524288.0);
  CHECK(gathers[1]->comm_bytes == 512.0);
  CHECK(gathers[2]->comm_bytes == 80.0);
  CHECK(fw[0].matmul_flops == doctest::Approx(7077888.0));
  // conv2 is the first matmul kernel after the first gather.
  size_t at = 0;
  while (at < fw.size() && fw[at].cls != OpClass::kCollective) ++at;
  while (at < fw.size() && fw[at].cls != OpClass::kMatmul) ++at;
  REQUIRE(at < fw.size());
  CHECK(fw[at].matmul_flops == doctest::Approx(150994944.0));
  // Backward: the convolution's and the classifier's input gradients are reduce-scattered (the
  // gathers' duals, same bytes); the loss's gather has none.
  const auto backward = collectives(plan.layer->backward);
  REQUIRE(backward.size() == 2);
  for (const Kernel* k : backward) CHECK(k->comm == CommKind::kReduceScatter);
  // Parameters per device: every filter, the norm's scale and shift and the classifier split:
  // (1,728 + 128 + 36,864 + 640) / 2 = 19,680.
  CHECK(plan.layer->params == doctest::Approx(19680.0));
}

TEST_CASE("channel split: refusals name the combination") {
  Strategy s;
  s.tp = 2, s.pp = 2, s.micro_batch = 1, s.global_batch = 4;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 4;
  const Expected<Plan> p = lower(small_cnn(), s, hw);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().detail.find("tp=2 splits an operator graph's channels (filter parallelism) on one pipeline "
                              "stage only") != std::string::npos);
  s.pp = 1, s.sequence_parallel = true;
  const Expected<Plan> q = lower(small_cnn(), s, hw);
  REQUIRE_FALSE(q.has_value());
  CHECK(q.error().detail.find("sequence parallelism is a transformer's") != std::string::npos);
}

TEST_CASE("channel split: both engines agree on ResNet-50 with its filters over 2 and 4 devices") {
  for (int tp : {2, 4}) {
    Strategy s;
    s.tp = tp, s.micro_batch = 32, s.global_batch = 64 * 8 / tp;
    HardwareModel hw = catalog_cluster("dgx_a100");
    hw.num_devices = 8;
    const Expected<Plan> plan = lower(model_preset("resnet50"), s, hw);
    REQUIRE(plan.has_value());
    const double a = predict_analytical(*plan).iteration_s;
    const double g = predict_simgrid(*plan, SimgridOptions{.timeline = false}).iteration_s;
    CAPTURE(tp);
    CHECK(std::abs(g - a) / a < 0.005);
  }
}
