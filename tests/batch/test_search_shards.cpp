#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/search/search.h"
#include "sim/search/search_json.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

SearchSpace space_from(const char* text) {
  const Json j = parse_json_text(text, "space.json");
  return read_search_space(JsonNode(j, "space.json", "search"));
}

void check_same(const SearchResult& a, const SearchResult& b) {
  CHECK(a.points == b.points);
  CHECK(a.feasible == b.feasible);
  CHECK(a.pruned == b.pruned);
  REQUIRE(a.top.size() == b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) {
    CHECK(a.top[i].index == b.top[i].index);
    CHECK(a.top[i].score == b.top[i].score);
    CHECK(a.top[i].strategy == b.top[i].strategy);
  }
  REQUIRE(a.pareto.size() == b.pareto.size());
  for (size_t i = 0; i < a.pareto.size(); ++i) CHECK(a.pareto[i].index == b.pareto[i].index);
}

}  // namespace

TEST_CASE("search shards: chunks of 2048 indices are dealt round-robin") {
  REQUIRE(kSearchChunk == 2048);
  // 10000 points = chunks [0,2048) [2048,4096) [4096,6144) [6144,8192) [8192,10000).
  // 2 shards: chunks 0, 2, 4 = 2048 + 2048 + 1808 = 5904 points; chunks 1, 3 = 4096 points.
  CHECK(shard_points(10000, Shard{0, 2}) == 5904);
  CHECK(shard_points(10000, Shard{1, 2}) == 4096);
  // 3 shards: {0, 3} = 4096, {1, 3} = 2048 + 1808 = 3856, {2, 3} = 2048.
  CHECK(shard_points(10000, Shard{0, 3}) == 4096);
  CHECK(shard_points(10000, Shard{1, 3}) == 3856);
  CHECK(shard_points(10000, Shard{2, 3}) == 2048);
  // More shards than chunks: the last ones are empty; one shard is the whole space.
  CHECK(shard_points(100, Shard{0, 4}) == 100);
  CHECK(shard_points(100, Shard{3, 4}) == 0);
  CHECK(shard_points(10000, Shard{0, 1}) == 10000);
}

TEST_CASE("search shards: merged shards equal the whole search, also via the shard JSON") {
  const SearchSpace s = space_from(
      R"({"tp": [2, 4, 8], "pp": [2, 4, 8, 16], "micro_batch": [1, 2, 4, 8],
          "schedule": ["1f1b", "interleaved"], "recompute": ["none", "selective", "full"],
          "interleave": [1, 2], "sequence_parallel": [false, true], "zero_stage": [0, 1, 2, 3],
          "overlap_dp": [false, true]})");
  Strategy base;
  base.global_batch = 512;
  SearchOptions o;
  o.threads = 2, o.top_k = 5;
  const ModelSpec m = model_preset("gpt3-175b");
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 512;
  const SearchResult whole = run_search(m, base, hw, s, o);
  REQUIRE(whole.feasible > 10);  // so the top 5 is a real selection
  REQUIRE(whole.pareto.size() > 1);

  std::vector<SearchResult> direct, via_json;
  // 3 x 4 x 4 x 2 x 3 x 2 x 2 x 4 x 2 = 9216 points = 4 full chunks + 1024: shard 0 of 3 takes
  // chunks 0 and 3, shard 1 chunks 1 and 4 (the partial one), shard 2 chunk 2.
  REQUIRE(s.size() == 9216);
  for (int k = 0; k < 3; ++k) {
    SearchResult part = run_search_shard(m, base, hw, s, o, Shard{k, 3});
    CHECK(part.points == shard_points(s.size(), Shard{k, 3}));
    CHECK(part.points == (k == 0 ? 4096u : k == 1 ? 3072u : 2048u));
    via_json.push_back(search_shard_from_json(search_shard_json(part), m, base, hw, s, o));
    direct.push_back(std::move(part));
  }
  check_same(merge_search_results(direct, o.top_k), whole);
  check_same(merge_search_results(via_json, o.top_k), whole);
  // The JSON written for the search is the same bytes either way.
  CHECK(search_result_json(merge_search_results(via_json, o.top_k), s, o, hw).dump() ==
        search_result_json(whole, s, o, hw).dump());
}

TEST_CASE(
    "search shards: evaluate_index rebuilds a candidate, and nothing for an infeasible point") {
  // Index 0 is tp=5, which does not divide gpt3-175b's 96 heads; index 1 is tp=8.
  const SearchSpace s = space_from(R"({"tp": [5, 8]})");
  Strategy base;
  base.pp = 8, base.global_batch = 512, base.recompute = Recompute::kFull;
  SearchOptions o;
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = 512;
  const ModelSpec m = model_preset("gpt3-175b");
  CHECK_FALSE(evaluate_index(m, base, hw, s, o, 0).has_value());
  const std::optional<Candidate> c = evaluate_index(m, base, hw, s, o, 1);
  REQUIRE(c.has_value());
  CHECK(c->strategy.tp == 8);
  CHECK(c->index == 1);
  CHECK(c->score == c->tokens_per_s);  // objective throughput
}
