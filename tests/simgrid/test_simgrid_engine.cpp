// The SimGrid engine against the analytical engine where both must agree (no shared links),
// against hand-derived alpha-beta times, on the textbook 1F1B picture, and under contention.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/core/units.h"
#include "sim/prediction/chrome_trace.h"
#include "sim/scenario/scenario.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/simgrid/simgrid_test_plans.h"
#include "tests/support/run_cli.h"

namespace stratasim {
namespace {

using testing::pipeline;
using testing::plan_for;
using testing::rel;

// (a) One pipeline, no data parallelism: nothing is shared except a host's own links, so the
// simulated timeline must reproduce the analytical list schedule.
double worst_iteration_error = 0, worst_bubble_error = 0;

void check_agreement(const Plan& plan) {
  const Prediction a = predict_analytical(plan);
  const Prediction s = predict_simgrid(plan, SimgridOptions{.timeline = false});
  CAPTURE(plan.pp);
  CAPTURE(plan.micro_batches);
  CAPTURE(plan.chunks);
  CHECK(s.engine == "simgrid");
  CHECK(rel(s.iteration_s, a.iteration_s) < 0.02);
  // Relative, or both zero (DualPipe on 2 ranks has no bubble).
  const double bubble_error = a.bubble_fraction > 0 ? rel(s.bubble_fraction, a.bubble_fraction)
                                                    : std::abs(s.bubble_fraction);
  CHECK(bubble_error < 0.02);
  CHECK(rel(s.pipeline_s, a.pipeline_s) < 0.02);
  worst_iteration_error = std::max(worst_iteration_error, rel(s.iteration_s, a.iteration_s));
  worst_bubble_error = std::max(worst_bubble_error, bubble_error);
}

TEST_CASE("simgrid: agrees with the analytical engine on one node (pp=4, pp=2)") {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (int m : {4, 8, 12}) check_agreement(plan_for(pipeline(schedule, 1, 4, m), 4));
    check_agreement(plan_for(pipeline(schedule, 2, 2, 6), 4));
  }
  for (int m : {4, 8}) check_agreement(plan_for(pipeline("interleaved", 1, 4, m, 2), 4));
  check_agreement(plan_for(pipeline("interleaved", 2, 2, 4, 2), 4));
  // DualPipe: two chains in opposite directions, the mirror ranks' gradient all-reduce.
  for (int m : {8, 12}) check_agreement(plan_for(pipeline("dualpipe", 1, 4, m), 4));
  check_agreement(plan_for(pipeline("dualpipe", 2, 2, 4), 4));
  // Inference: the forward stream alone (GPipe's forwards, no tail).
  for (int m : {1, 6}) {
    check_agreement(plan_for(R"({"workload": "inference", "pp": 4, "micro_batch": 1, "global_batch": )" +
                                 std::to_string(m) + R"(, "fusion": "megatron"})",
                             4));
  }
  // ZB-V: a V of 2p stages, the turn on one rank.
  for (int m : {4, 9}) check_agreement(plan_for(pipeline("zb_v", 1, 4, m), 4));
  MESSAGE("worst relative error: iteration " << worst_iteration_error << ", bubble "
                                             << worst_bubble_error);
}

TEST_CASE("simgrid: agrees with the analytical engine on a pipeline across nodes (tp=8, dp=1)") {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    check_agreement(plan_for(pipeline(schedule, 8, 4, 8), 32));
    check_agreement(plan_for(pipeline(schedule, 8, 2, 5), 16));
  }
  check_agreement(plan_for(pipeline("interleaved", 8, 4, 8, 2), 32));
  check_agreement(plan_for(pipeline("dualpipe", 8, 4, 8), 32));
  check_agreement(plan_for(pipeline("zb_v", 8, 4, 8), 32));
  MESSAGE("worst relative error: iteration " << worst_iteration_error << ", bubble "
                                             << worst_bubble_error);
}

// Context parallelism's three exchanges (ring, Ulysses, all-gather) on one node with a pipeline
// of 2: tp 2 x cp 2 x pp 2 on 8 GPUs, nothing shared but a host's own links, so the replay
// must match the analytical schedule within the 0.5% the engines promise (issue 15).
TEST_CASE("simgrid: ring and Ulysses and all-gather context parallelism agree with the analytical engine") {
  for (const char* comm : {"ring", "a2a", "all_gather"}) {
    CAPTURE(comm);
    const Plan plan = plan_for(std::string(R"({"tp": 2, "cp": 2, "pp": 2, "micro_batch": 1, "global_batch": 4,)") +
                                   R"( "fusion": "all", "cp_comm": ")" + comm + R"("})",
                               8);
    REQUIRE(plan.cp == 2);
    const Prediction a = predict_analytical(plan);
    const Prediction s = predict_simgrid(plan, SimgridOptions{.timeline = false});
    CHECK(rel(s.iteration_s, a.iteration_s) < 0.005);
  }
  // PyTorch's all-gather rotation of the ring (fp32 merges), the same way.
  const Plan gathered = plan_for(R"({"tp": 2, "cp": 2, "pp": 2, "micro_batch": 1, "global_batch": 4,
                                     "fusion": "all", "cp_rotate": "all_gather", "cp_merge": "eager_fp32"})", 8);
  const Prediction a = predict_analytical(gathered);
  CHECK(rel(predict_simgrid(gathered, SimgridOptions{.timeline = false}).iteration_s, a.iteration_s) < 0.005);
}

// Partial recomputation (recompute_layers: 1 of each stage's 4 layers recomputed whole): the
// replay runs the recomputed and the kept layers as the analytical schedule does, within 0.5%,
// at stage and at layer granularity.
TEST_CASE("simgrid: partial recomputation agrees with the analytical engine") {
  const Plan plan = plan_for(R"({"tp": 2, "pp": 2, "micro_batch": 1, "global_batch": 8, "schedule": "1f1b",
                                  "recompute": "full", "recompute_layers": 1, "fusion": "megatron"})",
                             4);
  REQUIRE(plan.stages[0].recomputed_layers == 1);
  const Prediction a = predict_analytical(plan);
  REQUIRE(a.recompute_s > 0);
  CHECK(rel(predict_simgrid(plan, SimgridOptions{.timeline = false}).iteration_s, a.iteration_s) < 0.005);
  const SimgridOptions layer{.timeline = false, .granularity = SimGranularity::kLayer};
  CHECK(rel(predict_simgrid(plan, layer).iteration_s, a.iteration_s) < 0.005);
}

// The embedding and the loss counted as layers (2 layers on pp 4: the first and last stages
// hold none): the replay agrees with the analytical schedule as other pipelines do (2%,
// check_agreement above; 0.6% here).
TEST_CASE("simgrid: stages holding no layer agree with the analytical engine") {
  const Plan plan = plan_for(R"({"pp": 4, "micro_batch": 1, "global_batch": 8, "schedule": "1f1b",
                                  "fusion": "megatron", "account_for_embedding_in_pipeline_split": true,
                                  "account_for_loss_in_pipeline_split": true})",
                             4, "{}", 2);
  REQUIRE(plan.stages.front().layers == 0);
  REQUIRE(plan.stages.back().layers == 0);
  const Prediction a = predict_analytical(plan);
  CHECK(rel(predict_simgrid(plan, SimgridOptions{.timeline = false}).iteration_s, a.iteration_s) < 0.02);
  const SimgridOptions layer{.timeline = false, .granularity = SimGranularity::kLayer};
  CHECK(rel(predict_simgrid(plan, layer).iteration_s, a.iteration_s) < 0.02);
}

// PipeDream async: the simulation runs iterations back to back without flush and measures the
// steady-state iteration; the analytical engine reports m x the steady-state period.
TEST_CASE("simgrid: PipeDream async agrees with the analytical steady state") {
  worst_iteration_error = worst_bubble_error = 0;
  for (int m : {2, 4, 8, 13}) check_agreement(plan_for(pipeline("pipedream_async", 1, 4, m), 4));
  check_agreement(plan_for(pipeline("pipedream_async", 2, 2, 6), 4));
  check_agreement(plan_for(pipeline("pipedream_async", 1, 8, 8), 8));
  check_agreement(plan_for(pipeline("pipedream_async", 8, 4, 8), 32));
  check_agreement(plan_for(pipeline("pipedream_async", 8, 2, 3), 16));
  for (const char* overlap : {"false", "true"}) {  // data parallelism inside one node
    check_agreement(plan_for(std::string(R"({"tp": 2, "pp": 2, "micro_batch": 1, "global_batch": 8,
                        "schedule": "pipedream_async", "fusion": "megatron", "overlap_dp": )") +
                                 overlap + "}",
                             8));
  }
  MESSAGE("pipedream async, worst relative error: iteration " << worst_iteration_error
                                                              << ", bubble " << worst_bubble_error);
}

// The async timeline is one steady-state iteration: every rank runs each of the m
// micro-batches' forward and backward once, in 1F1B order, from time 0 on.
TEST_CASE("simgrid: the PipeDream async timeline shows one steady-state iteration") {
  const int p = 4, m = 6;
  const Prediction s = predict_simgrid(plan_for(pipeline("pipedream_async", 1, p, m), 4));
  for (int r = 0; r < p; ++r) {
    std::vector<int> forwards(m), backwards(m);
    for (const TimelineEvent& e : s.timeline) {
      if (e.device != r) continue;
      CHECK(e.start_s >= 0);
      CHECK(e.end_s <= s.iteration_s * 2);
      if (e.kind == EventKind::kForward) ++forwards.at(e.micro_batch);
      if (e.kind == EventKind::kBackward) ++backwards.at(e.micro_batch);
    }
    CAPTURE(r);
    CHECK(forwards == std::vector<int>(m, 1));
    CHECK(backwards == std::vector<int>(m, 1));
  }
}

// Layer granularity executes each op layer by layer (embedding and head attached to their
// stages); with nothing contended the iteration must not change.
TEST_CASE("simgrid: layer granularity gives the stage-granularity iteration time") {
  const SimgridOptions stage{.timeline = false};
  const SimgridOptions layer{.timeline = false, .granularity = SimGranularity::kLayer};
  double worst = 0;
  auto check = [&](const Plan& plan) {
    const Prediction a = predict_simgrid(plan, stage);
    const Prediction b = predict_simgrid(plan, layer);
    CAPTURE(plan.pp);
    CAPTURE(plan.micro_batches);
    CAPTURE(plan.chunks);
    CHECK(rel(b.iteration_s, a.iteration_s) < 0.02);
    CHECK(rel(b.pipeline_s, a.pipeline_s) < 0.02);
    CHECK(std::abs(b.bubble_fraction - a.bubble_fraction) <
          0.02 * std::max(a.bubble_fraction, 1e-3));
    worst = std::max(worst, rel(b.iteration_s, a.iteration_s));
  };
  for (const char* schedule : {"gpipe", "1f1b", "pipedream_async"}) {
    check(plan_for(pipeline(schedule, 1, 4, 8), 4));
  }
  check(plan_for(pipeline("interleaved", 1, 4, 8, 2), 4));
  check(plan_for(pipeline("1f1b", 8, 4, 8), 32));
  check(plan_for(  // recomputation and data parallelism with overlapped buckets
      R"({"tp": 2, "pp": 2, "micro_batch": 1, "global_batch": 8, "schedule": "1f1b",
          "recompute": "full", "overlap_dp": true, "fusion": "megatron"})",
      8));
  MESSAGE("layer vs stage granularity, worst relative iteration error: " << worst);
  // The timeline shows the layers: rank 0 of an 8-layer, p=4 pipeline runs layers 0 and 1.
  const Prediction t = predict_simgrid(plan_for(pipeline("1f1b", 1, 4, 4), 4),
                                       SimgridOptions{.granularity = SimGranularity::kLayer});
  int layer_events = 0;
  for (const TimelineEvent& e : t.timeline) {
    if (e.device == 0 && e.kind == EventKind::kForward && e.micro_batch == 0) {
      layer_events += e.name == "F0/L0" || e.name == "F0/L1";
    }
  }
  CHECK(layer_events == 2);
}

// Blocking sends across nodes, worked by hand: a DGX A100 node has 8 HDR NICs of 200 Gb/s at
// 90% efficiency = 180 GB/s, shared by its 8 tensor-parallel devices: 22.5 GB/s each. Nodes 0
// and 1 hang under the same leaf switch: alpha = NIC 3 us + one switch hop 0.2 us. Rank 0
// sends m activations, rank 1 m gradients, each of p2p_bytes.
TEST_CASE("simgrid: point-to-point transfers take S/B + alpha on the simulated network") {
  const int m = 4;
  const Plan plan = plan_for(pipeline("1f1b", 8, 2, m), 16);
  const double per_message = plan.p2p_bytes / 22.5e9 + 3.2e-6;
  const Prediction s = predict_simgrid(plan, SimgridOptions{.timeline = false});
  bool found = false;
  for (const CommStat& c : s.comms) {
    if (c.category != CommCategory::kPipelineP2P) continue;
    found = true;
    CHECK(c.total_s == doctest::Approx(m * per_message).epsilon(1e-6));
    CHECK(c.exposed_s == doctest::Approx(c.total_s));  // blocking sends are all exposed
  }
  CHECK(found);
}

// Megatron-Core's overlap_p2p_comm (Strategy::overlap_p2p_interleaved): its interleaved
// schedule posts each pass's send and receive and waits for them before the pass that needs
// them; its non-interleaved 1F1B rejects the option and blocks. So with the flag an
// interleaved plan's sends are asynchronous, exactly as with overlap_p2p itself, and a 1F1B
// plan's block, exactly as without it. Across nodes (tp 8, pp 4 over four DGX A100) the
// blocking interleaved run exposes every transfer; the overlapped one hides most of them, and
// both engines agree on it.
TEST_CASE("simgrid: overlap_p2p_interleaved makes only an interleaved schedule's sends asynchronous") {
  auto with = [](std::string strategy, const char* extra) {
    strategy.insert(strategy.size() - 1, extra);
    return strategy;
  };
  const std::string interleaved = pipeline("interleaved", 8, 4, 8, 2);
  const Plan flagged = plan_for(with(interleaved, R"(, "overlap_p2p_interleaved": true)"), 32);
  const Plan explicit_async = plan_for(with(interleaved, R"(, "overlap_p2p": true)"), 32);
  const Plan blocking = plan_for(interleaved, 32);
  CHECK(flagged.strategy.overlap_p2p);
  CHECK_FALSE(blocking.strategy.overlap_p2p);
  for (const StageProgram& st : flagged.iteration.stages) {
    for (const IterOp& op : st.forward.ops) {
      if (op.kind == IterOpKind::kSendActivation) CHECK_FALSE(op.blocking);
    }
  }
  const Prediction f = predict_analytical(flagged), e = predict_analytical(explicit_async),
                   b = predict_analytical(blocking);
  CHECK(f.iteration_s == doctest::Approx(e.iteration_s).epsilon(1e-12));
  auto p2p = [](const Prediction& p) {
    for (const CommStat& c : p.comms) {
      if (c.category == CommCategory::kPipelineP2P) return c;
    }
    FAIL("no pipeline p2p in the prediction");
    return CommStat{};
  };
  CHECK(p2p(b).exposed_s == doctest::Approx(p2p(b).total_s));
  CHECK(p2p(f).total_s == doctest::Approx(p2p(b).total_s));
  CHECK(p2p(f).exposed_s < 0.5 * p2p(f).total_s);
  CHECK(f.iteration_s < b.iteration_s);
  check_agreement(flagged);

  // 1F1B: the flag changes nothing.
  const std::string one_f_one_b = pipeline("1f1b", 8, 4, 8);
  const Plan flagged_1f1b = plan_for(with(one_f_one_b, R"(, "overlap_p2p_interleaved": true)"), 32);
  CHECK_FALSE(flagged_1f1b.strategy.overlap_p2p);
  CHECK(predict_analytical(flagged_1f1b).iteration_s ==
        doctest::Approx(predict_analytical(plan_for(one_f_one_b, 32)).iteration_s).epsilon(1e-12));

  // The key reads, writes back only when true, round-trips; a non-bool names the file and key.
  const Strategy read = read_strategy(JsonNode(
      parse_json_text(R"({"global_batch": 8, "overlap_p2p_interleaved": true})", "s.json"), "s.json", "strategy"));
  CHECK(read.overlap_p2p_interleaved);
  CHECK(to_json(read).at("overlap_p2p_interleaved") == true);
  CHECK(read_strategy(JsonNode(to_json(read), "rt", "strategy")) == read);
  CHECK_FALSE(to_json(Strategy{}).contains("overlap_p2p_interleaved"));
  const std::string what = testing::input_error_message([] {
    read_strategy(JsonNode(parse_json_text(R"({"global_batch": 8, "overlap_p2p_interleaved": 1})", "s.json"),
                           "s.json", "strategy"));
  });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.overlap_p2p_interleaved") != std::string::npos);
}

// (b) 1F1B for p=4, m=8 from the Chrome trace: rank r runs p-r-1 warm-up forwards, then
// pairs (forward k + w, backward k), then the w cool-down backwards (Narayanan et al. 2021).
TEST_CASE("simgrid: the 1F1B trace (p=4, m=8) shows warm-up, steady 1F1B and cool-down") {
  const int p = 4, m = 8;
  const Plan plan = plan_for(pipeline("1f1b", 1, p, m), 4);
  const Prediction s = predict_simgrid(plan);
  const Json trace = Json::parse(chrome_trace(s, "1f1b"));
  for (int r = 0; r < p; ++r) {
    std::vector<std::string> ops;  // compute track of rank r, in time order
    double last = -1;
    for (const Json& e : trace.at("traceEvents")) {
      if (e.at("ph") != "X" || e.at("pid") != r || e.at("tid") != 0) continue;
      const std::string cat = e.at("cat");
      if (cat != "forward" && cat != "backward") continue;
      CHECK(e.at("ts").get<double>() >= last);
      last = e.at("ts").get<double>();
      ops.push_back(e.at("name").get<std::string>());
    }
    std::vector<std::string> expected;
    auto op = [&](char kind, int mb) { expected.push_back(kind + std::to_string(mb)); };
    const int w = p - r - 1;
    for (int k = 0; k < w; ++k) op('F', k);
    for (int k = 0; k < m - w; ++k) op('F', k + w), op('B', k);
    for (int k = m - w; k < m; ++k) op('B', k);
    CAPTURE(r);
    CHECK(ops == expected);
  }
  // Every rank waits at the start for the forward to reach it: rank r idles before F0.
  for (const TimelineEvent& e : s.timeline) {
    if (e.device == 3 && e.kind == EventKind::kForward && e.micro_batch == 0) {
      CHECK(e.start_s > 0);
    }
  }
}

// The trace's flows and counters for 1F1B, p=4, m=8, blocking sends:
//  - every activation send (ranks 0..2, m each) ends at the forward of its micro-batch on the
//    next rank, every gradient send (ranks 1..3) at the backward on the rank before: 2 (p-1) m
//    flows, each "f" at the start of the consuming operation;
//  - rank r holds at most p - r micro-batches' activations at once (Narayanan et al. 2021,
//    Sec. 2.2: 1F1B keeps p - r in flight), so the activations counter's peak is p - r times
//    its first step and equals the rank's stored activations;
//  - while a send alone is under way the rank's comm counter shows its message in MB.
TEST_CASE("simgrid: the trace links each send to its consumer and counts memory and bytes") {
  const int p = 4, m = 8;
  const Plan plan = plan_for(pipeline("1f1b", 1, p, m), 4);
  const Prediction s = predict_simgrid(plan);
  const Json trace = Json::parse(chrome_trace(s, "1f1b", TraceLayout{.devices_per_rank = 1}));
  auto start_of = [&](int rank, const std::string& name) {
    for (const TimelineEvent& e : s.timeline) {
      if (e.device == rank && e.name == name) return e.start_s / 1e-6;
    }
    return -1.0;
  };
  std::map<int, Json> starts;
  int activations = 0, gradients = 0;
  std::vector<double> first_step(p, 0), peak(p, 0), peak_bytes(p, 0);
  std::vector<std::string> names(p);
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "s") starts[e.at("id").get<int>()] = e;
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      names[e.at("pid").get<int>()] = e.at("args").at("name");
    }
    if (e.at("ph") == "C") {
      const int r = e.at("pid");
      const Json& args = e.at("args");
      if (args.contains("activations")) {
        const double a = args.at("activations");
        if (first_step[r] == 0 && a > 0) first_step[r] = a;
        peak[r] = std::max(peak[r], a);
        CHECK(args.at("states").get<double>() > 0);
      }
      // A send alone (ranks 0 and 3 also all-reduce the tied embedding: a larger level).
      if (args.contains("bytes") && std::abs(args.at("bytes").get<double>() - plan.p2p_bytes / 1e6) < 1e-9) {
        peak_bytes[r] = args.at("bytes");
      }
    }
    if (e.at("ph") != "f") continue;
    const Json& from = starts.at(e.at("id").get<int>());
    const int r = from.at("pid"), to = e.at("pid");
    CHECK(e.at("bp") == "e");
    // The consumer: F<k> on the next rank, or the recomputation or backward of k on the one before.
    if (from.at("name") == "activation") {
      ++activations;
      CHECK(to == r + 1);
    } else {
      ++gradients;
      CHECK(to == r - 1);
    }
    bool at_consumer = false;
    for (int k = 0; k < m; ++k) {
      const std::string op = (from.at("name") == "activation" ? "F" : "B") + std::to_string(k);
      at_consumer |= std::abs(e.at("ts").get<double>() - start_of(to, op)) < 1e-6;
    }
    CHECK(at_consumer);
  }
  CHECK(activations == (p - 1) * m);
  CHECK(gradients == (p - 1) * m);
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    CHECK(peak[r] / first_step[r] == doctest::Approx(p - r));
    CHECK(peak[r] == doctest::Approx(s.rank_memory[r].activations_B / kGiB));
    CHECK(peak_bytes[r] == doctest::Approx(plan.p2p_bytes / 1e6));
    CHECK(names[r] == "pipeline rank " + std::to_string(r) + ": devices " + std::to_string(r) + "-" +
                          std::to_string(r));
  }
}

// (c) Data-parallel rings of two pipeline stages across an oversubscribed fat tree. tp=8 fills
// a node, dp=3: stage 0 on nodes 0-2, stage 1 on nodes 3-5; two nodes per leaf, so the leaf of
// nodes 2 and 3 carries both stages' rings through one uplink. The analytical engine does not
// model oversubscription: with 4:1 the simulation must be slower, with 1:1 close to it.
TEST_CASE("simgrid: oversubscribed fat tree slows data-parallel rings, less so at 1:1") {
  auto gap = [](double oversubscription) {
    const std::string net =
        R"({"oversubscription": )" + std::to_string(oversubscription) + R"(, "nodes_per_leaf": 2})";
    const Plan plan = plan_for(
        R"({"tp": 8, "pp": 2, "micro_batch": 1, "global_batch": 6, "schedule": "1f1b",
            "collective": "ring", "fusion": "megatron"})",
        48, net, 4, 4096, 256);
    const double analytical = predict_analytical(plan).iteration_s;
    const double simulated = predict_simgrid(plan, SimgridOptions{.timeline = false}).iteration_s;
    return (simulated - analytical) / analytical;
  };
  const double gap4 = gap(4), gap1 = gap(1);
  MESSAGE("contention gap: oversubscription 4: " << gap4 << ", 1: " << gap1);
  CHECK(gap4 > 0.05);
  CHECK(std::abs(gap1) < gap4 / 2);
  CHECK(std::abs(gap1) < 0.02);
}

// A flat data-parallel ring over 16 devices in 2 nodes (tp = 1): one ring edge leaves each
// node, with the node's NICs to itself (collective_cost.h spanning_level); the simulated ring
// over the platform's NIC links must take the analytical time. Issue 12 measured the old
// per-device share at 8x the simulated time. A ~1B-parameter model in one 2 GB bucket, so that
// the bandwidth term dominates: the engines' latencies differ (the analytical alpha climbs to
// the top of the fat tree, the simulated route only to the nodes' common switch).
TEST_CASE("simgrid: a flat ring across nodes runs at the node's NICs, as the analytical engine says") {
  for (int devices : {16, 32}) {
    CAPTURE(devices);
    const Plan plan = plan_for(std::string(R"({"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": )") +
                                   std::to_string(devices) +
                                   R"(, "collective": "ring", "overlap_dp": false, "dp_bucket": "4GB", "fusion": "megatron"})",
                               devices, "{}", 4, 4096, 256);
    const Prediction a = predict_analytical(plan);
    const Prediction s = predict_simgrid(plan, SimgridOptions{.timeline = false});
    auto dp_total = [](const Prediction& p) {
      for (const CommStat& c : p.comms) {
        if (c.category == CommCategory::kDataParallel) return c.total_s;
      }
      return 0.0;
    };
    REQUIRE(dp_total(a) > 0);
    CHECK(rel(dp_total(s), dp_total(a)) < 0.01);
    CHECK(rel(s.iteration_s, a.iteration_s) < 0.005);
  }
}

// A ring's steps aggregated under the message budget (SimgridOptions::max_ring_messages) keep
// its time: 64 devices in 8 rail-optimized nodes run an all-reduce ring of 126 steps in 8
// channels (8 x 64 messages a step). With a budget of one message it runs in 1 step carrying
// all the bytes (the skipped steps' latency added), with 1e6 in max_ring_steps (64) steps:
// each step's flows share the links the same way, so the two take the same time, within the
// latency the longer replay pays in its per-step handshakes.
TEST_CASE("simgrid: a ring aggregated into fewer steps by the message budget takes the same time") {
  const Plan plan = plan_for(
      R"({"tp": 1, "pp": 1, "micro_batch": 1, "global_batch": 64, "collective": "ring",
          "overlap_dp": false, "dp_bucket": "4GB", "fusion": "megatron"})",
      64, R"({"topology": "rail_optimized"})", 4, 4096, 256);
  auto dp_total = [](const Prediction& p) {
    for (const CommStat& c : p.comms) {
      if (c.category == CommCategory::kDataParallel) return c.total_s;
    }
    return 0.0;
  };
  const Prediction one = predict_simgrid(plan, SimgridOptions{.timeline = false, .max_ring_messages = 1});
  const Prediction many =
      predict_simgrid(plan, SimgridOptions{.timeline = false, .max_ring_messages = 1000000});
  REQUIRE(dp_total(many) > 0);
  CHECK(rel(dp_total(one), dp_total(many)) < 0.02);
  CHECK(rel(one.iteration_s, many.iteration_s) < 0.005);
  // The notes count the activities: the budget cut the messages, not just the steps' sizes.
  auto activities = [](const Prediction& p) {
    for (const std::string& n : p.notes) {
      const auto at = n.find(" nodes, ");
      if (n.rfind("simgrid: ", 0) == 0 && at != std::string::npos) {
        return std::stoll(n.substr(at + 8));
      }
    }
    return 0LL;
  };
  REQUIRE(activities(many) > 0);
  CHECK(activities(one) * 8 < activities(many));
}

// (d) Bad input is reported, never a crash.
TEST_CASE("simgrid: bad options are InputErrors") {
  const Plan plan = plan_for(pipeline("1f1b", 1, 2, 4), 2);
  CHECK_THROWS_WITH_AS(predict_simgrid(plan, SimgridOptions{.max_ring_steps = 0}),
                       "simgrid options: max_ring_steps: 0 must be >= 1", InputError);
  CHECK_THROWS_WITH_AS(predict_simgrid(plan, SimgridOptions{.max_ring_messages = 0}),
                       "simgrid options: max_ring_messages: 0 must be >= 1", InputError);
}

using stratasim::testing::run_cli;
using Run = stratasim::testing::CliRun;

TEST_CASE("simgrid: stratasim simulate reports infeasible plans and bad input with exit code 2") {
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const Run infeasible = run_cli("simulate " + tiny + " --set strategy.tp=1 --set strategy.pp=2");
  CHECK(infeasible.code == 2);
  CHECK(
      infeasible.output.find("infeasible (pipeline-parallel): pp*interleave=2 exceeds layers=1") !=
      std::string::npos);
  const Run variant = run_cli("simulate " + tiny + " --variant nope");
  CHECK(variant.code == 2);
  CHECK(variant.output.find("variants: \"nope\" is not a variant of this scenario") !=
        std::string::npos);
}

TEST_CASE("simgrid: stratasim simulate --granularity layer runs, a bad value is an error") {
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const Run layer = run_cli("simulate " + tiny + " --set strategy.tp=1 --set strategy.pp=2 " +
                            "--set model.layers=2 --granularity layer");
  CHECK(layer.code == 0);
  CHECK(layer.output.find("iteration time") != std::string::npos);
  const Run bad = run_cli("simulate " + tiny + " --granularity op");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--granularity: \"op\" must be stage or layer") != std::string::npos);
}

TEST_CASE("simgrid: stratasim simulate writes the report and a Perfetto trace") {
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const auto trace = std::filesystem::temp_directory_path() / "stratasim_simgrid_trace.json";
  std::filesystem::remove(trace);
  const Run r = run_cli("simulate " + tiny + " --set strategy.tp=1 --set strategy.pp=2 " +
                        "--set model.layers=2 --trace " + trace.string());
  CHECK(r.code == 0);
  CHECK(r.output.find("iteration time") != std::string::npos);
  CHECK(r.output.find("note: simgrid: 2 hosts simulated for 2 devices") != std::string::npos);
  const Json t = load_json_file(trace.string());
  int forwards = 0;
  for (const Json& e : t.at("traceEvents")) forwards += e.at("name") == "F0" ? 1 : 0;
  CHECK(forwards == 2);  // micro-batch 0's forward on each of the 2 pipeline ranks
}

}  // namespace
}  // namespace stratasim
