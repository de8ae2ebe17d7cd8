// A placed operator graph (Strategy::placement) in the SimGrid engine: one host per replica
// stands for its placed devices, whose gradient syncs share the links above their ports like
// tensor-parallel peers'. Without contention it agrees with the analytical engine, across
// nodes too.
#include <doctest/doctest.h>

#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

// input -> {a.fc, b.fc} -> merge -> loss, b on device 1 of each replica.
ModelSpec two_branches() { return testing::two_branch_graph("a.fc", "b.fc"); }

TEST_CASE("simgrid: a placed operator graph agrees with the analytical engine, in one node and across two") {
  for (const int devices : {8, 16}) {
    Strategy s;
    s.micro_batch = 64;
    s.global_batch = 64 * devices / 2;
    s.placement = {{"b", 1}, {"*", 0}};
    const Plan plan = testing::lower_on_dgx_a100(two_branches(), s, devices);
    REQUIRE(plan.mp == 2);
    const Prediction a = predict_analytical(plan);
    const Prediction g = predict_simgrid(plan, {.timeline = false});
    CAPTURE(devices);
    // One node: equal up to the simulator's clock resolution. Two nodes: the data-parallel ring's messages through the NICs, within 2%
    // (each host's flows stand for both placed devices'; without that they would get twice the
    // NIC bandwidth and the sync would be ~17% shorter).
    CHECK(std::abs(g.iteration_s - a.iteration_s) / a.iteration_s < (devices == 8 ? 1e-6 : 0.02));
    bool noted = false;
    for (const std::string& n : g.notes) noted = noted || n.find("simgrid: placement: one host per replica stands for its 2 placed devices") != std::string::npos;
    CHECK(noted);
  }
}

}  // namespace
}  // namespace stratasim
