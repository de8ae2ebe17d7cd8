// SearchOptions::cancel stops run_search early: it returns what it evaluated, flagged cancelled.
#include <doctest/doctest.h>

#include <atomic>

#include "hardware_models/src/hardware_json.h"
#include "sim/search/search.h"
#include "strategies/model/model_json.h"

using namespace stratasim;

namespace {

SearchSpace cancel_space(const char* text) {
  const Json j = parse_json_text(text, "space.json");
  return read_search_space(JsonNode(j, "space.json", "search"));
}

HardwareModel a100s(int devices) {
  HardwareModel hw = catalog_cluster("dgx_a100");
  hw.num_devices = devices;
  return hw;
}

// 4 tp x 4 pp x 4 micro_batch x 2 schedule x 2 interleave x 3 recompute x 4 zero x 2 sp
// x 2 overlap_dp = 12288 points: 6 chunks of 2048.
constexpr const char* kBigSpace =
    R"({"tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8], "micro_batch": [1, 2, 4, 8],
        "schedule": ["1f1b", "interleaved"], "interleave": [1, 2],
        "recompute": ["none", "selective", "full"], "zero_stage": [0, 1, 2, 3],
        "sequence_parallel": [false, true], "overlap_dp": [false, true]})";

}  // namespace

TEST_CASE("search cancel: a search cancelled from its progress callback stops early") {
  const SearchSpace s = cancel_space(kBigSpace);
  REQUIRE(s.size() == 12288);
  Strategy base;
  base.global_batch = 512;
  std::atomic<bool> cancel{false};
  SearchOptions o;
  o.threads = 1;  // one worker: chunks run in order, so the stop point is exact
  o.cancel = &cancel;
  int reports = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    CHECK(total == 12288);
    ++reports;
    if (done >= 2048) cancel = true;  // after the first chunk
  };
  const SearchResult r = run_search(model_preset("gpt3-175b"), base, a100s(512), s, o);
  CHECK(r.cancelled);
  // The first chunk was finished before the flag was set; the flag is checked before every
  // point, so nothing of the second chunk ran.
  CHECK(r.points == 2048);
  CHECK(reports == 1);  // the worker stops right after the chunk that saw the flag
  uint64_t pruned = 0;
  for (const auto& [reason, n] : r.pruned) pruned += n;
  CHECK(r.feasible + pruned + r.duplicates == r.points);
  for (const Candidate& c : r.top) CHECK(c.index < 2048);
}

TEST_CASE("search cancel: a flag set before the start evaluates nothing, unset changes nothing") {
  const SearchSpace s = cancel_space(R"({"tp": [2, 4, 8], "pp": [2, 4, 8]})");
  Strategy base;
  base.global_batch = 512;
  const ModelSpec m = model_preset("gpt3-175b");
  std::atomic<bool> cancel{true};
  SearchOptions o;
  o.cancel = &cancel;
  const SearchResult stopped = run_search(m, base, a100s(512), s, o);
  CHECK(stopped.cancelled);
  CHECK(stopped.points == 0);
  CHECK(stopped.top.empty());

  cancel = false;
  const SearchResult full = run_search(m, base, a100s(512), s, o);
  SearchOptions plain;
  const SearchResult reference = run_search(m, base, a100s(512), s, plain);
  CHECK_FALSE(full.cancelled);
  CHECK(full.points == 9);
  CHECK(full.points == reference.points);
  REQUIRE(full.top.size() == reference.top.size());
  for (size_t i = 0; i < full.top.size(); ++i) CHECK(full.top[i].index == reference.top[i].index);
}

TEST_CASE("search cancel: merging shards keeps the cancelled flag") {
  SearchResult a, b;
  a.points = 10, b.points = 5, b.cancelled = true;
  const SearchResult m = merge_search_results({a, b}, 3);
  CHECK(m.cancelled);
  CHECK(m.points == 15);
  CHECK_FALSE(merge_search_results({a, a}, 3).cancelled);
}
