// The stratasim command on bad input: one clear message naming file, JSON path, value and
// rule; exit code 2; no crash.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace {

using Run = stratasim::testing::CliRun;

Run run(const std::string& args) { return stratasim::testing::run_cli(args); }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "stratasim_cli_tests";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kGood = R"({
  "model": "gpt3-175b",
  "cluster": {"preset": "dgx_a100", "devices": 1024},
  "strategy": {"tp": 8, "pp": 8, "global_batch": 1536, "recompute": "full"}
})";

}  // namespace

TEST_CASE("cli: evaluate prints a report and exits 0") {
  const Run r = run("evaluate " + write_temp("good.json", kGood));
  CHECK(r.code == 0);
  CHECK(r.output.find("iteration time") != std::string::npos);
  CHECK(r.output.find("memory per device") != std::string::npos);
}

TEST_CASE("cli: malformed JSON names file:line:column") {
  const std::string f = write_temp("malformed.json", "{\n  \"model\": \"gpt3-175b\",\n  \"strategy\": {,}\n}");
  const Run r = run("evaluate " + f);
  CHECK(r.code == 2);
  CHECK(r.output.find("error: " + f + ":3:16: malformed JSON: syntax error") != std::string::npos);
}

TEST_CASE("cli: unknown key, bad unit, missing field, infeasible strategy") {
  std::string text = kGood;
  const std::string unknown = write_temp("unknown.json",
      std::string(kGood).replace(std::string(kGood).find("\"recompute\""), 11, "\"recompte\""));
  Run r = run("evaluate " + unknown);
  CHECK(r.code == 2);
  CHECK(r.output.find(unknown + ": strategy.recompte: \"recompte\" is an unknown key (did you "
                      "mean 'recompute'?)") != std::string::npos);

  const std::string unit = write_temp("unit.json", R"({"model": "gpt3-175b",
    "cluster": {"preset": "dgx_a100", "devices": 8, "node": {"device_link": {"preset": "nvlink3", "bandwidth": "300GBs"}}},
    "strategy": {"tp": 8, "global_batch": 8}})");
  r = run("evaluate " + unit);
  CHECK(r.code == 2);
  CHECK(r.output.find("cluster.node.device_link.bandwidth: \"300GBs\" has unknown unit 'GBs'") !=
        std::string::npos);

  const std::string missing = write_temp("missing.json", R"({"model": "gpt3-175b",
    "cluster": "dgx_a100", "strategy": {"tp": 8}})");
  r = run("evaluate " + missing);
  CHECK(r.code == 2);
  CHECK(r.output.find(missing + ": strategy.global_batch: (missing) is a required field") !=
        std::string::npos);

  const std::string infeasible = write_temp("infeasible.json", kGood);
  r = run("evaluate " + infeasible + " --set strategy.pp=7 --set cluster.devices=56");
  CHECK(r.code == 2);
  CHECK(r.output.find(infeasible + ": strategy.pp: infeasible (pipeline-parallel): pp=7 does not "
                      "divide layers=96") != std::string::npos);
}

TEST_CASE("cli: --set reaches into presets and bad options are named") {
  const std::string f = write_temp("set.json", kGood);
  Run r = run("evaluate " + f + " --set model.seq_len=4096 --set strategy.tp=4 --set strategy.pp=16");
  CHECK(r.code == 0);
  CHECK(r.output.find("seq 4096") != std::string::npos);
  CHECK(r.output.find("tp=4 pp=16") != std::string::npos);
  r = run("evaluate " + f + " --sett strategy.tp=4");
  CHECK(r.code == 2);
  CHECK(r.output.find("--sett: \"--sett\" is not an option of this command") != std::string::npos);
  r = run("evaluate " + f + " --set strategy");
  CHECK(r.code == 2);
  CHECK(r.output.find("must have the form key.path=value") != std::string::npos);
  r = run("evaluate /nonexistent/x.json");
  CHECK(r.code == 2);
  CHECK(r.output.find("/nonexistent/x.json: cannot open file for reading") != std::string::npos);
}

TEST_CASE("cli: --json is written whole, and explain prints the plan") {
  const std::string f = write_temp("json.json", kGood);
  const std::string out = write_temp("out.json", "old");
  Run r = run("evaluate " + f + " --json " + out);
  CHECK(r.code == 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"iteration_s\"") != std::string::npos);
  r = run("explain " + f);
  CHECK(r.code == 0);
  CHECK(r.output.find("transformer layer:") != std::string::npos);
  CHECK(r.output.find("stage 7 (rank 7, chunk 0): layers 84-95 + head") != std::string::npos);
  // Each collective names the group it spans: tp 8 for the layer's all-reduces, and with
  // cp 2 the ring attention's K/V exchange runs over the 2 context ranks, not over tp.
  r = run("explain " + f + " --set strategy.cp=2 --set strategy.fusion=all");
  CHECK(r.code == 0);
  CHECK(r.output.find("comm all-reduce over tensor(8)") != std::string::npos);
  CHECK(r.output.find("cp_ring_kv") != std::string::npos);
  CHECK(r.output.find("comm all-gather over context(2)") != std::string::npos);
}

TEST_CASE("cli: every bundled scenario evaluates") {
  const Run r = run(std::string("compare ") + STRATASIM_SOURCE_DIR + "/scenarios");
  CHECK(r.code == 0);
  CHECK(r.output.find("failed to load") != std::string::npos);
  CHECK(r.output.find(" 0 failed to load") != std::string::npos);
}

TEST_CASE("cli: search without a search block lists the derived axes and searches them") {
  // tiny_2gpu_1layer: 2 A100s, 16 heads, 1 layer: tp 1/2, pp 1 only (one layer).
  const Run r = run(std::string("search ") + STRATASIM_SOURCE_DIR + "/scenarios/tiny_2gpu_1layer.json --top 2");
  CHECK(r.code == 0);
  CHECK(r.output.find("no \"search\" block in ") != std::string::npos);
  CHECK(r.output.find("searching the space derived from the model and the cluster: tp(2) x "
                      "micro_batch(3)") != std::string::npos);
  CHECK(r.output.find("the same strategy as another point once knobs that do not apply are "
                      "normalized") != std::string::npos);
  CHECK(r.output.find(" fusion    type overlap ") != std::string::npos);

  // Every knob the search varies has a CSV column, dtype and the overlaps included.
  const std::string csv = (std::filesystem::temp_directory_path() / "stratasim_cli_tests" /
                           "derived.csv").string();
  const Run with_csv = run(std::string("search ") + STRATASIM_SOURCE_DIR +
                           "/scenarios/tiny_2gpu_1layer.json --top 2 --csv " + csv);
  CHECK(with_csv.code == 0);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header ==
        "rank,index,cluster,devices,tp,pp,dp,cp,cp_comm,ep,shard_group,micro_batch,interleave,schedule,"
        "recompute,recompute_modules,recompute_layers,zero_stage,sequence_parallel,fusion,dtype,overlap_dp,overlap_tp,overlap_ep,ep_dispatch,streams,"
        "offload,stage_layers,iteration_s,tokens_per_s,mfu,bubble_fraction,comm_exposed_s,peak_memory_B,objective");
  std::string first;
  std::getline(in, first);
  CHECK(first.find(",dgx_a100,2,") != std::string::npos);

  const Run empty = run("search " + write_temp("empty_search.json", std::string(kGood).insert(
                                                   std::string(kGood).rfind('}'), ", \"search\": {}")));
  CHECK(empty.code == 2);
  CHECK(empty.output.find("search: (empty) leaves nothing to search") != std::string::npos);
}

TEST_CASE("cli: cost_per_token without a price is refused, with one it ranks by cost") {
  const std::string tiny = std::string(STRATASIM_SOURCE_DIR) + "/scenarios/tiny_2gpu_1layer.json";
  const Run none = run("search " + tiny + " --objective cost_per_token --top 1");
  CHECK(none.code == 2);
  CHECK(none.output.find("--objective: \"cost_per_token\" needs a price per device-hour: --price "
                         "2.5 (USD), or cluster.device.price_per_hour in the scenario") !=
        std::string::npos);
  const Run priced = run("search " + tiny + " --objective cost_per_token --price 2.5 --top 1");
  CHECK(priced.code == 0);
  const Run in_cluster =
      run("search " + tiny + " --objective cost_per_token --top 1 --set cluster.device.price_per_hour=2.5");
  CHECK(in_cluster.code == 0);
}

TEST_CASE("cli: evaluate --train-tokens reports days, device-hours and cost from the throughput") {
  const std::string f = write_temp("budget.json", kGood);
  const std::string out = write_temp("budget_out.json", "");
  const Run r = run("evaluate " + f + " --train-tokens 300e9 --price 2 --json " + out);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("token budget         3e+11 tokens:") != std::string::npos);
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  const double tokens_per_s = j["prediction"]["tokens_per_s"];
  // By hand: 3e11 tokens at the predicted rate, 86400 s a day, 1024 devices, 2 USD per device-hour.
  const double seconds = 300e9 / tokens_per_s;
  CHECK(j["token_budget"]["days"].get<double>() == doctest::Approx(seconds / 86400));
  CHECK(j["token_budget"]["device_hours"].get<double>() == doctest::Approx(seconds / 3600 * 1024));
  CHECK(j["token_budget"]["cost_usd"].get<double>() == doctest::Approx(2 * seconds / 3600 * 1024));
  const Run zero = run("evaluate " + f + " --train-tokens 0");
  CHECK(zero.code == 2);
  CHECK(zero.output.find("--train-tokens: 0 must be a positive number of tokens") != std::string::npos);
  const Run negative = run("evaluate " + f + " --price -1");
  CHECK(negative.code == 2);
  CHECK(negative.output.find("--price") != std::string::npos);
}

TEST_CASE("cli: throughput_per_device ranks a devices sweep by tokens/s per device, not by cluster size") {
  const std::string f = write_temp("devices_sweep.json", R"({
  "model": "gpt3-175b", "cluster": {"preset": "dgx_a100", "devices": 1024},
  "strategy": {"tp": 8, "pp": 8, "global_batch": 1536, "recompute": "full"},
  "search": {"devices": [256, 512, 1024], "micro_batch": [1, 2]}})");
  const std::string plain = write_temp("devices_plain.json", ""), per = write_temp("devices_per.json", "");
  REQUIRE(run("search " + f + " --json " + plain).code == 0);
  const Run r = run("search " + f + " --objective throughput_per_device --json " + per);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("top 6 by throughput_per_device") != std::string::npos);
  std::ifstream a(plain), b(per);
  const nlohmann::json by_throughput = nlohmann::json::parse(a), by_device = nlohmann::json::parse(b);
  CHECK(by_throughput["top"][0]["devices"] == 1024);  // the largest cluster has the most tokens/s
  double last = 1e300;
  for (const auto& c : by_device["top"]) {
    const double per_device = c["tokens_per_s"].get<double>() / c["devices"].get<double>();
    CHECK(c["objective"].get<double>() == doctest::Approx(per_device));
    CHECK(per_device <= last);
    last = per_device;
  }
  CHECK(by_device["top"][0]["devices"] != 1024);  // fewer devices use them better (smaller dp, less sync)
}

TEST_CASE("cli: the report header names the knobs that took their defaults") {
  const std::string f = write_temp("defaults.json", kGood);
  Run r = run("evaluate " + f);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("defaults  fusion none, micro_batch 1, zero_stage 0, dtype bf16, overlap_dp off, "
                      "overlap_tp off, sequence_parallel off, schedule 1f1b (not set in the scenario") !=
        std::string::npos);
  r = run("evaluate " + f + " --set strategy.fusion=megatron --set strategy.zero_stage=1");
  CHECK(r.output.find("defaults  micro_batch 1, dtype bf16,") != std::string::npos);
  // A cluster without "devices" is one node, said so.
  const std::string node = write_temp("one_node.json", R"({"model": "gpt3-175b", "cluster": "dgx_a100",
    "strategy": {"tp": 8, "global_batch": 8, "recompute": "full", "fusion": "megatron", "micro_batch": 1,
                 "zero_stage": 1, "dtype": "bf16", "overlap_dp": true, "overlap_tp": true, "sequence_parallel": true}})");
  r = run("evaluate " + node);
  CHECK(r.output.find("defaults  cluster.devices 8 (one node)") != std::string::npos);
}
