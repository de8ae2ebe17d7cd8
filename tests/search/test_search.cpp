#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/search/search.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

SearchSpace space_from(const char* text) {
  const Json j = parse_json_text(text, "space.json");
  return read_search_space(JsonNode(j, "space.json", "search"));
}

HardwareModel cluster(int devices) {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  return hw;
}

Candidate point(uint64_t index, double tokens, double memory, int devices) {
  Candidate c;
  c.index = index, c.tokens_per_s = tokens, c.peak_memory_B = memory, c.devices = devices;
  return c;
}

}  // namespace

TEST_CASE("search space: the product is enumerated lazily, axis 0 slowest") {
  const SearchSpace s = space_from(
      R"({"tp": [1, 2, 4], "pp": {"from": 1, "to": 8, "step": "x2"}, "recompute": ["none", "full"]})");
  // 3 tp x 4 pp (1, 2, 4, 8) x 2 recompute = 24 points.
  CHECK(s.size() == 24);
  Strategy base;
  SearchPoint p;
  point_at(s, 0, base, 8, p);
  CHECK(p.strategy.tp == 1);
  CHECK(p.strategy.pp == 1);
  CHECK(p.strategy.recompute == Recompute::kNone);
  // Index 23 = last of every axis; index 1 changes only the fastest axis (recompute).
  point_at(s, 23, base, 8, p);
  CHECK(p.strategy.tp == 4);
  CHECK(p.strategy.pp == 8);
  CHECK(p.strategy.recompute == Recompute::kFull);
  point_at(s, 1, base, 8, p);
  CHECK(p.strategy.tp == 1);
  CHECK(p.strategy.recompute == Recompute::kFull);
  // index = (tp_i * 4 + pp_i) * 2 + rc_i: tp=2 (1), pp=4 (2), none (0) -> 12.
  point_at(s, 12, base, 8, p);
  CHECK(p.strategy.tp == 2);
  CHECK(p.strategy.pp == 4);
}

TEST_CASE("search space: recompute_modules is an axis of module lists, searched under selective only") {
  const SearchSpace s = space_from(
      R"({"recompute": ["none", "selective"], "recompute_modules": [["core_attn"], ["mlp", "moe_act"]]})");
  CHECK(s.size() == 4);
  CHECK(s.axes[1].value_text(1) == "moe_act+mlp");
  Strategy base;
  SearchPoint p;
  point_at(s, 3, base, 8, p);  // selective, mlp + moe_act
  CHECK(p.strategy.recompute == Recompute::kSelective);
  CHECK(p.strategy.recompute_modules == (kModuleMlp | kModuleMoeAct));
  CHECK_FALSE(p.duplicate);
  point_at(s, 1, base, 8, p);  // none with modules: the same strategy as index 0
  CHECK(p.strategy.recompute_modules == kModuleCoreAttn);
  CHECK(p.duplicate);
  CHECK_THROWS_WITH_AS(space_from(R"({"recompute_modules": ["mlp"]})"),
                       doctest::Contains("search.recompute_modules[0]: \"mlp\" must list at least one module"),
                       InputError);
  CHECK_THROWS_WITH_AS(space_from(R"({"recompute_modules": [["attn"]]})"),
                       doctest::Contains("search.recompute_modules[0][0]: \"attn\""), InputError);
}

TEST_CASE("search space: unknown axes and bad values are named") {
  CHECK_THROWS_WITH_AS(space_from(R"({"tpp": [1]})"),
                       doctest::Contains("space.json: search.tpp: \"tpp\" is not a search axis"),
                       InputError);
  CHECK_THROWS_WITH_AS(space_from(R"({"schedule": ["zigzag"]})"),
                       doctest::Contains("search.schedule[0]: \"zigzag\" is not one of"),
                       InputError);
  CHECK_THROWS_WITH_AS(space_from(R"({"tp": []})"), doctest::Contains("gives no values"),
                       InputError);
}

TEST_CASE("search: every point is visited once and pruning reasons are counted") {
  // Megatron 1T (160 heads, 128 layers) on 48 GPUs, global batch 48; lower() checks the device
  // count first, then the model split, then the batch, then memory.
  //   device-count: 48 % (tp*pp) != 0 for (1,5), (3,5), (8,5), (8,8): 4 x 2 micro-batches = 8
  //   tensor-parallel: tp=3 does not divide 160 heads for pp in {1, 2, 8}: 3 x 2 = 6
  //   batch: the 5 remaining (tp, pp) with micro_batch 3: 48 % (dp*3) != 0 each time = 5
  //   out-of-memory: the 5 with micro_batch 1 need > 300 GB of model state per GPU = 5
  // 3 x 4 x 2 = 24 points, none feasible.
  const SearchSpace s = space_from(R"({"tp": [1, 3, 8], "pp": [1, 2, 5, 8], "micro_batch": [1, 3]})");
  Strategy base;
  base.global_batch = 48;
  base.recompute = Recompute::kFull;
  SearchOptions o;
  o.threads = 1;
  const SearchResult r = run_search(model_preset("megatron-1t"), base, cluster(48), s, o);
  CHECK(r.points == 24);
  CHECK(r.pruned.at("device-count") == 8);
  CHECK(r.pruned.at("tensor-parallel") == 6);
  CHECK(r.pruned.at("batch") == 5);
  CHECK(r.pruned.at("out-of-memory") == 5);
  CHECK(r.feasible == 0);
  CHECK(r.top.empty());
}

TEST_CASE("search: the Pareto front of a hand-made set") {
  // (tokens/s, memory, devices): a dominates d (more tokens, less memory, same devices);
  // b trades memory for speed; c uses fewer devices; e equals b exactly (kept: not dominated).
  const std::vector<Candidate> set = {point(0, 100, 50, 8), point(1, 120, 70, 8),
                                      point(2, 60, 40, 4), point(3, 90, 60, 8),
                                      point(4, 120, 70, 8), point(5, 50, 45, 4)};
  const std::vector<Candidate> front = pareto_front(set);
  std::vector<uint64_t> ids;
  for (const Candidate& c : front) ids.push_back(c.index);
  // Sorted by devices, then throughput: c (4 devices); then b, e (120), a (100).
  CHECK(ids == std::vector<uint64_t>{2, 1, 4, 0});
  CHECK(dominates(set[0], set[3]));
  CHECK_FALSE(dominates(set[1], set[4]));
}

TEST_CASE("search: results do not depend on the number of threads") {
  const SearchSpace s = space_from(
      R"({"tp": [2, 4, 8], "pp": [2, 4, 8], "micro_batch": [1, 2], "interleave": [1, 2],
          "schedule": ["1f1b", "interleaved"], "recompute": ["selective", "full"]})");
  Strategy base;
  base.global_batch = 512;
  SearchOptions one, two;
  one.threads = 1, two.threads = 2, one.top_k = two.top_k = 5;
  const ModelSpec m = model_preset("gpt3-175b");
  const SearchResult a = run_search(m, base, cluster(512), s, one);
  const SearchResult b = run_search(m, base, cluster(512), s, two);
  CHECK(a.points == b.points);
  CHECK(a.pruned == b.pruned);
  REQUIRE(a.top.size() == b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) {
    CHECK(a.top[i].index == b.top[i].index);
    CHECK(a.top[i].tokens_per_s == b.top[i].tokens_per_s);
  }
  REQUIRE(a.pareto.size() == b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i) CHECK(a.pareto[i].index == b.pareto[i].index);
  // The best point is really the best of the top list.
  for (const Candidate& c : a.top) CHECK(c.tokens_per_s <= a.top[0].tokens_per_s);
}

TEST_CASE("search: a hardware sweep over cluster presets and device counts") {
  // 2 clusters x 2 device counts x 2 tp = 8 points. GPT-3 with pp=8 and full recomputation
  // needs tp=8 to fit 80 GB (tp=4 leaves 175e9 * 16 B / 32 = 87.5 GB of model state per GPU).
  const SearchSpace s = space_from(
      R"({"cluster": ["dgx_a100", "dgx_h100"], "devices": [64, 128], "tp": [4, 8]})");
  CHECK(s.size() == 8);
  CHECK(s.axes[0].value_text(1) == "dgx_h100");
  Strategy base;
  base.pp = 8;
  base.global_batch = 512;
  base.recompute = Recompute::kFull;
  SearchOptions o;
  o.threads = 1;
  o.top_k = 8;
  const SearchResult r = run_search(model_preset("gpt3-175b"), base, cluster(64), s, o);
  CHECK(r.points == 8);
  REQUIRE(r.feasible == 4);
  CHECK(r.pruned.at("out-of-memory") == 4);
  // H100 has 3.2x the A100's peak: the fastest point is an H100 one, with the most devices.
  CHECK(r.top[0].hardware == "dgx_h100");
  CHECK(r.top[0].devices == 128);
  int h100 = 0;
  for (const Candidate& c : r.top) h100 += c.hardware == "dgx_h100";
  CHECK(h100 == 2);
  CHECK_THROWS_WITH_AS(space_from(R"({"cluster": ["dgx_z9"]})"),
                       doctest::Contains("search.cluster[0]: \"dgx_z9\" is not a cluster preset"),
                       InputError);
}

TEST_CASE("search: missing_search_input names what the search lacks, in order") {
  HardwareModel hw = cluster(8);
  hw.device.price_per_hour = 0;
  const SearchSpace none;
  const SearchSpace tp = space_from(R"({"tp": [1, 2]})");
  SearchOptions o;
  CHECK(missing_search_input(none, o, hw) == MissingSearchInput::kAxes);
  CHECK_FALSE(missing_search_input(tp, o, hw).has_value());  // throughput needs nothing more
  // cost per token: a price from the options or from the catalog, else nothing to rank by.
  o.objective = Objective::kCostPerToken;
  CHECK(missing_search_input(tp, o, hw) == MissingSearchInput::kPrice);
  CHECK(missing_search_input(none, o, hw) == MissingSearchInput::kAxes);  // axes come first
  o.price_per_device_hour = 2.5;
  CHECK_FALSE(missing_search_input(tp, o, hw).has_value());
  o.price_per_device_hour = 0;
  hw.device.price_per_hour = 1.8;
  CHECK_FALSE(missing_search_input(tp, o, hw).has_value());
  // time to train: a token budget.
  o.objective = Objective::kTimeToTrain;
  CHECK(missing_search_input(tp, o, hw) == MissingSearchInput::kTrainTokens);
  o.train_tokens = 1e12;
  CHECK_FALSE(missing_search_input(tp, o, hw).has_value());
}
