// Spatial parallelism for operator graphs (strategies/lowering/spatial_split.h, issue 16): rows of
// each sample split over cp devices, halo exchanges before stencils and convolutions, all-gathers
// before ops without rows, a fused stencil chain's one exchange and recomputed rows. Every
// expected value is worked by hand from the op's geometry.
#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/cost/collective_cost.h"
#include "sim/cost/step_timing.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/spatial_split.h"
#include "strategies/model/model_json.h"
#include "tests/support/plan_kernels.h"

using namespace stratasim;
using stratasim::testing::collectives;

namespace {

HardwareModel cluster(const char* name, int devices) {
  HardwareModel hw = catalog_cluster(name);
  hw.num_devices = devices;
  return hw;
}

// One 3x3 stride-1 convolution, 64 -> 64 channels on 56 x 56 (a ResNet layer1 conv), then a
// global average pool and a 1000-way classifier without rows, then the loss.
ModelSpec conv_then_classifier() {
  ModelSpec m;
  m.name = "conv-classifier";
  m.family = ModelFamily::kOpGraph;
  const double act = 64.0 * 56 * 56;
  m.graph.ops = {
      GraphOp{.name = "conv", .kind = GraphOpKind::kConv, .flops = 2.0 * 9 * 64 * act, .output_elements = act,
              .params = 9.0 * 64 * 64, .input_elements = act, .height = 56, .halo = 1},
      GraphOp{.name = "pool", .kind = GraphOpKind::kPool, .flops = act, .output_elements = 64, .inputs = {0}},
      GraphOp{.name = "fc", .kind = GraphOpKind::kMatmul, .flops = 2.0 * 64 * 1000, .output_elements = 1000,
              .params = 64.0 * 1000, .inputs = {1}},
      GraphOp{.name = "loss", .kind = GraphOpKind::kLoss, .flops = 5000, .output_elements = 1, .inputs = {2}}};
  return m;
}

Strategy spatial(int cp, int micro_batch, int global_batch) {
  Strategy s;
  s.cp = cp, s.micro_batch = micro_batch, s.global_batch = global_batch;
  return s;
}

}  // namespace

TEST_CASE("spatial split: a 3x3 convolution over 4 devices exchanges one row of 64 x 56 values with each neighbour") {
  // cp 4 on one DGX A100 (bf16, micro-batch 2): each device holds ceil(56 / 4) = 14 of the 56 rows.
  // Halo of one side: 1 row x 56 columns x 64 channels x 2 samples x 2 B = 14,336 B.
  // The conv's FLOPs on a device: 2 x 9 x 64 x (64 x 56 x 56) x 2 samples x 14/56 = 115,605,504.
  // The pool reads the whole 64 x 56 x 56 x 2 x 2 B = 802,816 B map: one all-gather of that, forward
  // only (each device computes the classifier's whole gradient and keeps its rows of it).
  const Expected<Plan> plan = lower(conv_then_classifier(), spatial(4, 2, 8), cluster("dgx_a100", 4));
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  CHECK(plan->cp_group.size == 4);
  CHECK(plan->dp_group.size == 4);  // gradients of the replicated weights over dp x cp = 1 x 4
  const std::vector<Kernel>& fw = plan->layer->forward;
  const auto forward = collectives(fw);
  REQUIRE(forward.size() == 2);
  CHECK(forward[0]->comm == CommKind::kHaloExchange);
  CHECK(forward[0]->group == GroupKind::kContext);
  CHECK(forward[0]->comm_bytes == 14336.0);
  CHECK(forward[1]->comm == CommKind::kAllGather);
  CHECK(forward[1]->comm_bytes == 802816.0);
  CHECK(fw[1].matmul_flops == doctest::Approx(115605504.0));
  CHECK(fw[1].model_flops == doctest::Approx(115605504.0));  // 56 rows divide by 4: share = 1/4
  // The classifier runs whole on every device; its model FLOPs count once over the group.
  const Kernel& fc = fw[fw.size() - 2];
  CHECK(fc.matmul_flops == doctest::Approx(2.0 * 64 * 1000 * 2));
  CHECK(fc.model_flops == doctest::Approx(2.0 * 64 * 1000 * 2 / 4));
  // Backward: the halo's gradient rows go back to their owners (same bytes); no gather.
  const auto backward = collectives(plan->layer->backward);
  REQUIRE(backward.size() == 1);
  CHECK(backward[0]->comm == CommKind::kHaloExchange);
  CHECK(backward[0]->comm_bytes == 14336.0);
}

TEST_CASE("spatial split: ResNet-50's stem exchanges 3 input rows, its batch norms all-reduce 2 C statistics") {
  // cp 2, micro-batch 4, bf16. The 7x7 stride-2 stem reads 3 rows beyond its own of the
  // 224 x 224 x 3 image on each side: 3 x 224 x 3 x 4 samples x 2 B = 16,128 B. Its batch norm
  // (64 channels) all-reduces the sums of x and x^2: 2 x 64 fp32 = 512 B, forward and backward.
  // The 3x3 max pool reads 1 row of the stem's 112 x 112 x 64 output: 112 x 64 x 4 x 2 = 57,344 B.
  Strategy s = spatial(2, 4, 8);
  const Expected<Plan> plan = lower(model_preset("resnet50"), s, cluster("dgx_a100", 2));
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  const auto fw = collectives(plan->layer->forward);
  REQUIRE(fw.size() >= 3);
  CHECK(fw[0]->comm == CommKind::kHaloExchange);
  CHECK(fw[0]->comm_bytes == 16128.0);
  CHECK(fw[1]->comm == CommKind::kAllReduce);
  CHECK(fw[1]->comm_bytes == 512.0);
  CHECK(fw[2]->comm == CommKind::kHaloExchange);
  CHECK(fw[2]->comm_bytes == 57344.0);
  // The classifier's input: one all-gather of the 7 x 7 x 2048 features (x 4 samples x 2 B).
  const Kernel* gather = nullptr;
  for (const Kernel* k : fw) gather = k->comm == CommKind::kAllGather ? k : gather;
  REQUIRE(gather != nullptr);
  CHECK(gather->comm_bytes == 7.0 * 7 * 2048 * 4 * 2);
  // Every 1x1 convolution reads no halo: the exchanges are the stem, the max pool and the 16
  // 3x3 convolutions (one per bottleneck): 18; the norms: 53 batch norms.
  int halos = 0, norms = 0;
  for (const Kernel* k : fw) {
    halos += k->comm == CommKind::kHaloExchange;
    norms += k->comm == CommKind::kAllReduce;
  }
  CHECK(halos == 18);
  CHECK(norms == 53);
}

TEST_CASE("spatial split: rows that do not divide give the slowest device ceil(height / cp) of them") {
  // 56 rows over 8 devices: 7 each (exact); over 16: ceil(3.5) = 4 rows, a share of 4/56.
  CHECK(spatial_share(56, 8) == doctest::Approx(7.0 / 56));
  CHECK(spatial_share(56, 16) == doctest::Approx(4.0 / 56));
  CHECK(spatial_share(0, 16) == 1.0);
  CHECK(spatial_share(56, 1) == 1.0);
  // A ReLU after the conv inherits its 56 rows; an op reading two tensors of different heights does not.
  OpGraphSpec g = conv_then_classifier().graph;
  g.ops.insert(g.ops.begin() + 1, GraphOp{.name = "relu", .kind = GraphOpKind::kElementwise,
                                          .flops = 64.0 * 56 * 56, .output_elements = 64.0 * 56 * 56, .inputs = {0}});
  for (size_t i = 2; i < g.ops.size(); ++i) g.ops[i].inputs = {static_cast<int>(i) - 1};
  const std::vector<int> h = spatial_heights(g);
  CHECK(h == std::vector<int>{56, 56, 0, 0, 0});
}

TEST_CASE("spatial split: a device with fewer rows than the halo is refused, naming the op and the rows") {
  // A 7x7 stem (halo 3) on 224 rows: cp 64 leaves ceil(224 / 64) = 4 rows, enough; cp 128 leaves 2.
  ModelSpec m = conv_then_classifier();
  m.graph.ops[0].name = "stem";
  m.graph.ops[0].height = 112, m.graph.ops[0].input_height = 224, m.graph.ops[0].halo = 3;
  CHECK(lower(m, spatial(64, 1, 64), cluster("dgx_a100", 64)).has_value());
  const Expected<Plan> bad = lower(m, spatial(128, 1, 128), cluster("dgx_a100", 128));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().reason == InfeasibleReason::kContextParallel);
  CHECK(bad.error().detail ==
        "op 'stem': cp=128 leaves 2 rows per device of its 224-row input, fewer than the 3 halo rows it reads "
        "from each neighbour");
  // A graph with no rows at all cannot be split spatially.
  const Expected<Plan> flat = lower(model_preset("lstm-2layer"), spatial(2, 1, 2), cluster("dgx_a100", 2));
  REQUIRE_FALSE(flat.has_value());
  CHECK(flat.error().detail ==
        "cp=2 splits an operator graph's rows over devices (spatial parallelism); no op of this graph declares a "
        "height");
}

TEST_CASE("spatial split: the fused blur-Sobel-sharpen chain exchanges 3 rows once and recomputes 2 + 1 edge rows") {
  // 4K frame (2160 x 3840 fp32), cp 4: 540 rows a device. Unfused: three exchanges of one row,
  // 3840 x 4 B = 15,360 B a side. Fused (whole_chain): one exchange of the input's 1 + 1 + 1 = 3
  // rows (46,080 B a side); at each of a device's two edges the blur recomputes the 2 rows
  // Sobel's and sharpen's halos need beyond it, Sobel the 1 row sharpen's needs:
  // blur 17 x 3840 x 540 x (1 + 2 x 2 / 540), Sobel 26 x 3840 x 540 x (1 + 2 / 540), sharpen 5 x 3840 x 540.
  const ModelSpec m = make_image_pipeline(2160, 3840);
  Strategy s = spatial(4, 1, 4);
  s.workload = Workload::kInference;
  s.dtype = DType::kFp32;
  const HardwareModel hw = cluster("cpu_cluster", 4);
  const Expected<Plan> unfused = lower(m, s, hw);
  REQUIRE_MESSAGE(unfused.has_value(), (unfused ? "" : unfused.error().detail));
  const auto three = collectives(unfused->layer->forward);
  REQUIRE(three.size() == 3);
  for (const Kernel* k : three) CHECK(k->comm_bytes == 15360.0);
  fusion_preset("chains", &s.fusion);
  const Expected<Plan> fused = lower(m, s, hw);
  REQUIRE(fused.has_value());
  const std::vector<Kernel>& fw = fused->layer->forward;
  REQUIRE(fw.size() == 2);
  CHECK(fw[0].comm == CommKind::kHaloExchange);
  CHECK(fw[0].comm_bytes == 46080.0);
  CHECK(fw[1].fused_ops == 3);
  const double rows = 540, width = 3840;
  const double flops = 17 * width * rows * (1 + 4 / rows) + 26 * width * rows * (1 + 2 / rows) + 5 * width * rows;
  CHECK(fw[1].other_flops == doctest::Approx(flops));
  // The kernel reads its rows of the frame and the 2 x 3 received rows, writes its rows of the output.
  CHECK(fw[1].bytes == doctest::Approx((2 * rows + 6) * width * 4));
}

TEST_CASE("spatial split: a halo exchange across Ethernet nodes costs the NIC's two crossing flows and its latency") {
  // cpu_cluster: 2 sockets a node (UPI 64 GB/s x 0.60 = 38.4 GB/s, 1 us), one 100 GbE NIC a node
  // (12.5 GB/s x 0.70 = 8.75 GB/s, 20 us), a 2-level fat tree: 3 switch hops of 1 us. cp 16 = 8 nodes.
  // A side of 15,360 B (one 4K row of fp32): an inner node's NIC sends one flow to each neighbouring
  // node, 2 x 15,360 / 8.75e9 = 3.5109 us + 20 + 3 us = 26.5109 us; inside the node one side over UPI,
  // 15,360 / 38.4e9 + 1 us = 1.4 us, runs meanwhile.
  const HardwareModel hw = cluster("cpu_cluster", 16);
  const CommGroup line{GroupKind::kContext, 16, 2};
  CHECK(halo_exchange_s(15360, line, hw) == doctest::Approx(26.5109e-6).epsilon(1e-4));
  // Two nodes: one crossing flow a node, 15,360 / 8.75e9 + 23 us = 24.7554 us.
  CHECK(halo_exchange_s(15360, CommGroup{GroupKind::kContext, 4, 2}, hw) ==
        doctest::Approx(24.7554e-6).epsilon(1e-4));
  // One node of two sockets: one neighbour over UPI, 1.4 us.
  CHECK(halo_exchange_s(15360, CommGroup{GroupKind::kContext, 2, 2}, hw) == doctest::Approx(1.4e-6).epsilon(1e-4));
  // The image pipeline on all 16 sockets, one 4K frame at a time for 64 frames: three exchanges a
  // frame, none hidden, 3 x 64 x 26.5109 us = 5.0901 ms of exposed cp communication.
  Strategy s = spatial(16, 1, 64);
  s.workload = Workload::kInference;
  s.dtype = DType::kFp32;
  const Expected<Plan> plan = lower(make_image_pipeline(2160, 3840), s, hw);
  REQUIRE(plan.has_value());
  const Prediction p = predict_analytical(*plan);
  double cp = 0;
  for (const CommStat& c : p.comms) {
    if (c.category == CommCategory::kContextParallel) cp = c.exposed_s;
  }
  CHECK(cp == doctest::Approx(3 * 64 * 26.5109e-6).epsilon(1e-4));
}

TEST_CASE("whole-chain fusion: an LSTM cell is one kernel, conv+BN+ReLU+pool one, a loss never joins") {
  // lstm-2layer: embedding, 2 cells of gates + 5 elementwise ops, projection, loss = 15 ops. The
  // cell tail fuses under epilogues only where an op reads just its predecessor (13 kernels);
  // whole chains take each cell's gate GEMM and its five elementwise ops: 1 + 2 + 1 + 1 = 5.
  Strategy s;
  s.micro_batch = 32, s.global_batch = 32;
  const ModelSpec lstm = model_preset("lstm-2layer");
  REQUIRE(lstm.graph.ops.size() == 15);
  fusion_preset("epilogues", &s.fusion);
  const Expected<Plan> epilogue = lower(lstm, s, cluster("dgx_a100", 1));
  REQUIRE(epilogue.has_value());
  CHECK(epilogue->layer->forward.size() == 13);
  fusion_preset("chains", &s.fusion);
  const Expected<Plan> chains = lower(lstm, s, cluster("dgx_a100", 1));
  REQUIRE(chains.has_value());
  const std::vector<Kernel>& fw = chains->layer->forward;
  REQUIRE(fw.size() == 5);
  CHECK(fw[1].fused_ops == 6);
  CHECK(fw[2].fused_ops == 6);
  CHECK(fw[4].fused_ops == 1);  // the loss
  // ResNet-50's stem: conv, batch norm, ReLU and the 3x3 max pool in one kernel.
  const ModelSpec resnet = model_preset("resnet50");
  REQUIRE(resnet.graph.ops[3].kind == GraphOpKind::kPool);
  const Expected<Plan> stem = lower(resnet, s, cluster("dgx_a100", 1));
  REQUIRE(stem.has_value());
  CHECK(stem->layer->forward[0].fused_ops == 4);
}

TEST_CASE("pipeline sends between nodes share the NICs only among the stage's ranks in the sending node") {
  // cpu_cluster: 2 sockets a node, one 100 GbE NIC (8.75 GB/s after its 0.70 efficiency, 20 us, 3
  // switch hops of 1 us). The image pipeline in 4 stages over 2 nodes (tp 1, dp 1): stage 1 -> 2
  // crosses the network, and only stage 1's one socket sends there: the whole NIC,
  // 33,177,600 B (one 4K fp32 frame) / 8.75e9 + 23 us = 3.8147 ms (not the half a NIC every
  // socket of a node would get if all sent at once: 7.6064 ms).
  Strategy s;
  s.pp = 4, s.micro_batch = 1, s.global_batch = 4, s.dtype = DType::kFp32, s.workload = Workload::kInference;
  const HardwareModel hw = cluster("cpu_cluster", 4);
  ModelSpec m = make_image_pipeline(2160, 3840);
  m.graph.ops.push_back(GraphOp{.name = "copy", .kind = GraphOpKind::kElementwise, .flops = 1,
                                .output_elements = 2160.0 * 3840, .inputs = {2}});
  const Expected<Plan> plan = lower(m, s, hw);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  const IterOp& send = plan->iteration.stages[1].forward.ops.back();
  REQUIRE(send.bytes == 33177600.0);
  CHECK(comm_op_s(send, *plan) == doctest::Approx(33177600.0 / 8.75e9 + 23e-6).epsilon(1e-9));
  // Inside a node (stage 0 -> 1 over UPI, 38.4 GB/s, 1 us).
  CHECK(comm_op_s(plan->iteration.stages[0].forward.ops.back(), *plan) ==
        doctest::Approx(33177600.0 / 38.4e9 + 1e-6).epsilon(1e-9));
  // With 2 replicas a stage (dp 2, pp 2), both sockets of node 0 send across at once: half each.
  s.pp = 2, s.dp = 2;
  const Expected<Plan> replicated = lower(m, s, hw);
  REQUIRE(replicated.has_value());
  CHECK(comm_op_s(replicated->iteration.stages[0].forward.ops.back(), *replicated) ==
        doctest::Approx(33177600.0 / 4.375e9 + 23e-6).epsilon(1e-9));
}
