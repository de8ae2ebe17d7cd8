// A mixed cluster (HardwareModel::groups) in the SimGrid engine: the platform gives each node
// its own group's links, each pipeline rank syncs on its group's devices and links, and a
// transfer between the groups crosses both nodes' NICs. Without contention it agrees with the
// analytical engine.
#include <doctest/doctest.h>

#include <cmath>

#include "hardware_models/src/hardware_json.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

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
