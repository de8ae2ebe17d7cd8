// Task parallelism on one device (Strategy::streams, sim/cost/concurrent_kernels.h): kernels of
// independent branches share the device max-min fairly, each capped at the share it keeps busy
// alone. Every expected value below is worked by hand from that rule.
#include <doctest/doctest.h>

#include "sim/cost/block_cost.h"
#include "sim/cost/concurrent_kernels.h"
#include "sim/cost/kernel_cost.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

ConcurrentKernel task(double alone_s, double demand, std::vector<int> deps = {}) {
  return {alone_s, demand, std::move(deps)};
}

TEST_CASE("concurrent kernels: two branches take between the longer one and the sum, as the device share dictates") {
  // Demands 0.4 + 0.4 fit the device: both run at full speed, the pair takes max(1, 1) = 1.
  CHECK(run_concurrent({task(1, 0.4), task(1, 0.4)}, 2).makespan_s == doctest::Approx(1.0));
  // Each fills the device alone: half each, work 1 device-second each, the pair takes 2 = sum.
  CHECK(run_concurrent({task(1, 1), task(1, 1)}, 2).makespan_s == doctest::Approx(2.0));
  // 0.8 each: half each, work 0.8 device-seconds at rate 0.5 -> 1.6.
  CHECK(run_concurrent({task(1, 0.8), task(1, 0.8)}, 2).makespan_s == doctest::Approx(1.6));
  // 0.3 and 0.9: the equal share 0.5 exceeds 0.3, so A takes 0.3 (full speed, done at 1) and B
  // gets 0.7; by t = 1 B did 0.7 of its 0.9, the remaining 0.2 at its full 0.9 takes 0.2/0.9.
  const ConcurrentRun r = run_concurrent({task(1, 0.3), task(1, 0.9)}, 2);
  CHECK(r.end_s[0] == doctest::Approx(1.0));
  CHECK(r.end_s[1] == doctest::Approx(1.0 + 0.2 / 0.9));
  // A kernel that occupies nothing (pure latency) never slows the other.
  CHECK(run_concurrent({task(1, 0), task(1, 1)}, 2).makespan_s == doctest::Approx(1.0));
}

TEST_CASE("concurrent kernels: one stream runs everything after the last, dependencies and the stream count order the rest") {
  CHECK(run_concurrent({task(1, 0.1), task(2, 0.1), task(0.5, 0.1)}, 1).makespan_s == doctest::Approx(3.5));
  // A -> B, C independent, all demanding half the device: A and C together in [0, 1], B in [1, 2].
  const ConcurrentRun r = run_concurrent({task(1, 0.5), task(1, 0.5, {0}), task(1, 0.5)}, 2);
  CHECK(r.start_s[1] == doctest::Approx(1.0));
  CHECK(r.makespan_s == doctest::Approx(2.0));
  // Three independent light kernels on two streams: the third waits for a free stream.
  const ConcurrentRun q = run_concurrent({task(1, 0.2), task(1, 0.2), task(1, 0.2)}, 2);
  CHECK(q.start_s[2] == doctest::Approx(1.0));
  CHECK(q.makespan_s == doctest::Approx(2.0));
  // Ready order is the FIFO of kernels::run_dag: index order among the initially ready.
  CHECK(q.start_s[0] == 0.0);
  CHECK(q.start_s[1] == 0.0);
}

TEST_CASE("concurrent kernels: a kernel's device share is its plateau time over its time alone") {
  KernelTime t;
  t.total_s = 2e-3;
  t.plateau_s = 5e-4;
  CHECK(device_demand(t) == doctest::Approx(0.25));
  t.total_s = 0;
  CHECK(device_demand(t) == 0.0);
}

using testing::two_branch_graph;

// The kernel of phase list ks that starts with model op `op` (op graphs name ops by index).
const Kernel& kernel_of_op(const std::vector<Kernel>& ks, const Block& b, int op) {
  for (const Kernel& k : ks) {
    if (b.graph.ops[k.first_op].source_op == op) return k;
  }
  FAIL("no kernel starts with op " << op);
  return ks.front();
}

struct BranchTimes {
  double forward_1, forward_2, backward_1, backward_2, a_forward, a_backward, u_forward, u_backward;
};

BranchTimes branch_times(int micro_batch) {
  Strategy s;
  s.micro_batch = micro_batch;
  s.global_batch = micro_batch;
  const Plan one = testing::lower_on_dgx_a100(two_branch_graph(), s, 1);
  s.streams = 2;
  const Plan two = testing::lower_on_dgx_a100(two_branch_graph(), s, 1);
  const Block& b = *one.layer;
  const BlockCost c1 = block_cost(b, one), c2 = block_cost(*two.layer, two);
  const Kernel& af = kernel_of_op(b.forward, b, 0);
  const Kernel& ab = kernel_of_op(b.backward, b, 0);
  const KernelTime tf = kernel_time(af, one.hardware.device, s.dtype);
  const KernelTime tb = kernel_time(ab, one.hardware.device, s.dtype);
  return {c1.forward_s, c2.forward_s, c1.backward_s, c2.backward_s,
          tf.total_s,   tb.total_s,   device_demand(tf), device_demand(tb)};
}

TEST_CASE("streams: a two-branch graph on one device takes max(branch) when the branches fit the device together") {
  // 32 samples: 2 x 1024 x 1024 x 32 = 67 MFLOP per branch, far below the A100 GEMM curve's
  // half size, so each branch keeps well under half the device busy.
  const BranchTimes t = branch_times(32);
  REQUIRE(t.u_forward < 0.5);
  REQUIRE(t.u_backward < 0.5);
  // One stream: a + b + merge + loss. Two: max(a, b) + merge + loss = one stream minus a.
  CHECK(t.forward_2 == doctest::Approx(t.forward_1 - t.a_forward).epsilon(1e-9));
  // Backward: loss' -> merge' -> {a', b'} concurrently.
  CHECK(t.backward_2 == doctest::Approx(t.backward_1 - t.a_backward).epsilon(1e-9));
}

TEST_CASE("streams: branches that each fill more than half the device share it and take 2 u t, between max and sum") {
  // 65536 samples: 137 GFLOP per branch, near the GEMM plateau (u > 0.5). Two equal kernels
  // get half the device each: work u t at rate 1/2 takes 2 u t (t alone).
  const BranchTimes t = branch_times(65536);
  REQUIRE(t.u_forward > 0.5);
  CHECK(t.forward_2 == doctest::Approx(t.forward_1 - 2 * t.a_forward + 2 * t.u_forward * t.a_forward).epsilon(1e-9));
  CHECK(t.forward_2 > t.forward_1 - t.a_forward);  // slower than max(a, b) + rest
  CHECK(t.forward_2 < t.forward_1);                // faster than one after the other
}

TEST_CASE("streams: the dependencies of an operator graph's kernels follow its tensors, reversed for the backward") {
  Strategy s;
  const Plan p = testing::lower_on_dgx_a100(two_branch_graph(), s, 1);
  const Block& b = *p.layer;
  REQUIRE(b.forward.size() == 4);
  const auto f = kernel_dependencies(b.graph, b.forward, 0, b.forward.size(), false);
  CHECK(f[0].empty());
  CHECK(f[1].empty());
  CHECK(f[2] == std::vector<int>{0, 1});  // merge waits for both branches
  CHECK(f[3] == std::vector<int>{2});
  const auto bw = kernel_dependencies(b.graph, b.backward, 0, b.backward.size(), true);
  // Backward kernels run loss', merge', then a', b' (in reverse op order): a' and b' wait for merge'.
  for (size_t k = 0; k < b.backward.size(); ++k) {
    const int op = b.graph.ops[b.backward[k].first_op].source_op;  // 0 a, 1 b, 2 merge, 3 loss
    if (op == 0 || op == 1) CHECK(bw[k].size() == 1);
    if (op == 3) CHECK(bw[k].empty());
  }
}

TEST_CASE("streams: a transformer is refused with the reason, an operator graph is not") {
  Strategy s;
  s.streams = 2;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 1;
  Expected<Plan> p = lower(testing::small_gpt(2), s, hw);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().field == "streams");
  CHECK(p.error().detail.find("streams=2 runs an operator graph's independent branches concurrently") != std::string::npos);
  CHECK(lower(two_branch_graph(), s, hw).has_value());
}

}  // namespace
}  // namespace stratasim
