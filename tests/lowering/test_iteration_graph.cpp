// The iteration graph (docs/iteration_graph.md) against its documented schema, and the counts
// of nodes a schedule implies, worked out by hand.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "hardware_models/src/hardware_json.h"
#include "strategies/lowering/iteration_graph.h"
#include "strategies/lowering/lower.h"
#include "tests/support/run_cli.h"
#include "tests/support/small_plans.h"

using namespace stratasim;
using nlohmann::json;

namespace {

Plan plan_of(const Strategy& s, int devices) {
  return testing::lower_on_dgx_a100(testing::small_gpt(8), s, devices);
}

Strategy pipeline(ScheduleKind kind, int pp, int gb, int v, int zero, bool overlap_dp) {
  Strategy s;
  s.pp = pp, s.schedule = kind, s.interleave = v, s.global_batch = gb, s.micro_batch = 1;
  s.zero_stage = zero, s.overlap_dp = overlap_dp;
  s.recompute = Recompute::kFull;
  return s;
}

const std::set<std::string> kTypes = {"COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE",
                                      "COMM_RECV_NODE", "MEM_STORE_NODE", "MEM_LOAD_NODE"};
const std::set<std::string> kKinds = {
    "forward",         "recompute",        "backward",        "weight_gradient", "zero_gather",
    "zero_reduce_scatter", "send_activation", "send_gradient", "recv_activation",
    "recv_gradient",   "gradient_reduce",  "parameter_gather", "embedding_sync",
    "optimizer_step",  "offload_gradients", "host_optimizer_step", "upload_parameters"};

// Every rule of docs/iteration_graph.md; returns the number of nodes per template kind.
std::map<std::string, int> check_schema(const json& g, const Plan& plan) {
  REQUIRE(g.at("schema") == "stratasim.iteration_graph");
  REQUIRE(g.at("version") == kIterationGraphVersion);
  CHECK(g.at("model").is_string());
  for (const char* k : {"tp", "pp", "dp", "interleave", "micro_batches", "zero_stage"}) {
    CHECK(g.at("strategy").at(k).is_number_integer());
  }
  CHECK(g.at("strategy").at("schedule").is_string());
  CHECK(g.at("devices") == plan.hardware.num_devices);
  CHECK(g.at("symmetry").is_string());
  for (const char* k : {"tensor", "data", "pipeline_embedding"}) {
    CHECK(g.at("groups").at(k).at("size").is_number_integer());
    CHECK(g.at("groups").at(k).at("ranks_per_node").is_number_integer());
  }
  const json& ops = g.at("ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    const json& op = ops[i];
    CAPTURE(op.dump());
    CHECK(op.at("op") == i);
    const std::string type = op.at("type");
    CHECK(kTypes.count(type) == 1);
    CHECK(kKinds.count(op.at("kind").get<std::string>()) == 1);
    const std::string step = op.at("step");
    CHECK((step == "forward" || step == "backward" || step == "weight" || step == "tail"));
    CHECK(op.contains("vstage") == (step != "tail"));
    const std::string stream = op.at("stream");
    const bool memory = type == "MEM_STORE_NODE" || type == "MEM_LOAD_NODE";
    if (type == "COMP_NODE") {
      CHECK((stream == "compute" || (stream == "host" && op.at("kind") == "host_optimizer_step")));
    } else {
      CHECK(stream == (memory ? "host" : "comm"));
    }
    if (type == "COMP_NODE" || memory) {
      CHECK(op.at("num_ops").get<double>() >= 0);
      CHECK(op.at("tensor_size").get<double>() >= 0);
    } else {
      CHECK(op.at("comm_size").get<double>() > 0);
    }
    if (type == "COMM_COLL_NODE") {
      CHECK(op.at("comm_type").is_string());
      CHECK(op.at("repeats").get<int>() >= 1);
      CHECK(op.at("group").is_string());
      CHECK(op.at("group_size").get<int>() >= 2);
      CHECK(op.at("group_ranks_per_node").get<int>() >= 1);
      CHECK(op.at("algorithm").is_string());
    }
    if (type == "COMM_SEND_NODE") CHECK(op.at("blocking").is_boolean());
    if (type == "COMM_SEND_NODE") CHECK(op.at("comm_dst").is_number_integer());
    if (type == "COMM_RECV_NODE") CHECK(op.at("comm_src").is_number_integer());
  }
  std::map<std::string, int> counts;
  std::set<long long> ids;
  std::map<std::string, int> sends, recvs;  // tag -> receiving rank
  const json& ranks = g.at("ranks");
  REQUIRE(static_cast<int>(ranks.size()) == plan.pp);
  for (size_t r = 0; r < ranks.size(); ++r) {
    CHECK(ranks[r].at("pipeline_rank") == r);
    CHECK(ranks[r].at("devices") == plan.tp * plan.mp * plan.dp);
    std::set<long long> mine;
    for (const json& n : ranks[r].at("nodes")) {
      const long long id = n.at("id");
      CHECK(ids.insert(id).second);  // unique over the graph
      const json& op = ops.at(n.at("op").get<size_t>());
      ++counts[op.at("kind").get<std::string>()];
      CHECK(n.contains("micro_batch") == (op.at("step") != "tail"));
      for (const char* key : {"data_deps", "ctrl_deps"}) {
        for (const json& d : n.at(key)) {
          CHECK(mine.count(d.get<long long>()) == 1);  // an earlier node of the same rank
        }
      }
      mine.insert(id);
      if (op.at("type") == "COMM_SEND_NODE") {
        CHECK(sends.emplace(n.at("comm_tag"), op.at("comm_dst").get<int>()).second);
      }
      if (op.at("type") == "COMM_RECV_NODE") {
        CHECK(recvs.emplace(n.at("comm_tag"), static_cast<int>(r)).second);
      }
    }
  }
  CHECK(sends == recvs);  // every message is received once, by the rank it was sent to
  return counts;
}

}  // namespace

TEST_CASE("iteration graph: the documented schema, for every schedule") {
  struct Case {
    ScheduleKind kind;
    int pp, gb, v, zero;
    bool overlap;
  };
  for (const Case& c : {Case{ScheduleKind::k1F1B, 4, 16, 1, 0, true},
                        Case{ScheduleKind::kGPipe, 2, 4, 1, 1, false},
                        Case{ScheduleKind::kInterleaved1F1B, 2, 8, 2, 3, true},
                        Case{ScheduleKind::kPipeDreamAsync, 4, 8, 1, 2, false},
                        Case{ScheduleKind::kZeroBubbleH1, 4, 16, 1, 2, true},
                        Case{ScheduleKind::kZeroBubbleH2, 4, 16, 1, 3, true}}) {
    // ZeRO-3 gathered per micro-batch (under pp its default is once per iteration, checked in
    // tests/lowering/test_hybrid_sharding.cpp).
    Strategy s = pipeline(c.kind, c.pp, c.gb, c.v, c.zero, c.overlap);
    s.zero3_reshard = Zero3Reshard::kPerMicroBatch;
    const Plan plan = plan_of(s, 8);
    CAPTURE(schedule_name(c.kind));
    const json g = json::parse(iteration_graph_json(plan));
    std::map<std::string, int> counts = check_schema(g, plan);
    // Every (micro-batch, virtual stage) has one forward, one recomputation, one backward;
    // every boundary carries m activations and m gradients.
    const int m = plan.micro_batches, vstages = plan.pp * plan.chunks;
    CHECK(counts.at("forward") == m * vstages);
    CHECK(counts.at("recompute") == m * vstages);
    CHECK(counts.at("backward") == m * vstages);
    // A split backward runs each micro-batch's W as a node of its own.
    CHECK(counts["weight_gradient"] == (splits_backward(c.kind) ? m * vstages : 0));
    CHECK(counts.at("send_activation") == m * (vstages - 1));
    CHECK(counts.at("recv_gradient") == m * (vstages - 1));
    CHECK(counts.at("optimizer_step") == plan.pp);
    CHECK(counts.at("embedding_sync") == 2);  // tied embeddings: first and last rank
    // dp = 8 / pp: ZeRO-3 gathers before every forward and backward (prefetch: two ops each,
    // the first layer's and the others'), ZeRO-2/3 reduce-scatter after every backward.
    const int gathers_per_step = c.overlap ? 2 : 1;
    CHECK(counts["zero_gather"] == (c.zero == 3 ? 2 * gathers_per_step * m * vstages : 0));
    CHECK(counts["zero_reduce_scatter"] ==
          (c.zero >= 2 ? (c.overlap ? 2 : 1) * m * vstages : 0));
    CHECK(counts["gradient_reduce"] == (c.zero <= 1 ? plan.pp : 0));
    CHECK(counts["parameter_gather"] == (c.zero == 1 || c.zero == 2 ? plan.pp : 0));
  }
}

TEST_CASE("iteration graph: optimizer offload writes the host copies and the CPU step in place of the optimizer step") {
  Strategy s = pipeline(ScheduleKind::k1F1B, 2, 8, 1, 2, true);
  s.offload = Offload::kOptimizer;
  const Plan plan = plan_of(s, 8);
  const json g = json::parse(iteration_graph_json(plan));
  std::map<std::string, int> counts = check_schema(g, plan);
  CHECK(counts["optimizer_step"] == 0);
  CHECK(counts.at("offload_gradients") == plan.pp);
  CHECK(counts.at("host_optimizer_step") == plan.pp);
  CHECK(counts.at("upload_parameters") == plan.pp);
}

TEST_CASE("iteration graph: stratasim explain --graph writes it, a bad path is exit 2") {
  const std::string out = "iteration_graph_cli_test.json";
  std::remove(out.c_str());
  const std::string scenario = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const testing::CliRun ok = testing::run_cli("explain " + scenario + " --graph " + out);
  CHECK(ok.code == 0);
  std::FILE* f = std::fopen(out.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  std::remove(out.c_str());
  CHECK(json::parse(text).at("schema") == "stratasim.iteration_graph");
  const testing::CliRun bad =
      testing::run_cli("explain " + scenario + " --graph /nonexistent-dir/graph.json");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("/nonexistent-dir/graph.json") != std::string::npos);
}
