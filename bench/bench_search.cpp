// Points per second and wall time of the design-space search (issue 5's benchmark):
//   build/bench/bench_search [SCENARIO.json ...]
// For each scenario, its own "search" space and a larger one (every axis of the issue: tp, pp,
// micro-batch, schedule, interleave, recompute, sp, ZeRO stage, DP overlap) are searched with
// 1 and with all hardware threads. Points include the pruned ones, as the search visits them.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "sim/scenario/scenario.h"
#include "sim/search/search.h"

using namespace stratasim;

namespace {

SearchSpace large_space() {
  const Json j = parse_json_text(R"({
    "tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8, 16, 32, 64, 128], "micro_batch": [1, 2, 4, 8],
    "schedule": ["gpipe", "1f1b", "interleaved"], "interleave": [1, 2, 4, 8],
    "recompute": ["none", "selective", "full"], "sequence_parallel": [false, true],
    "zero_stage": [0, 1, 2, 3], "overlap_dp": [false, true]})", "bench");
  return read_search_space(JsonNode(j, "bench", "search"));
}

// Issue 15's space for a mixture-of-experts model: expert and context parallelism, the
// all-to-all overlap and the pipeline/batching axes around them.
SearchSpace moe_space() {
  const Json j = parse_json_text(R"({
    "tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8, 16], "ep": [1, 8, 16, 32, 64, 128, 256],
    "cp": [1, 2, 4], "micro_batch": [1, 2, 4], "schedule": ["1f1b", "interleaved"],
    "interleave": [1, 2, 4], "recompute": ["none", "selective", "full"],
    "sequence_parallel": [false, true], "overlap_ep": [false, true]})", "bench");
  return read_search_space(JsonNode(j, "bench", "search"));
}

void measure(const Scenario& sc, const SearchSpace& space, const char* label, int threads) {
  SearchOptions o;
  o.threads = threads;
  // The first run fills the per-thread caches (compiled schedules, lowered blocks); the
  // second shows a search that repeats shapes an earlier one saw. Both are reported.
  for (const char* pass : {"cold", "warm"}) {
    const auto start = std::chrono::steady_clock::now();
    const SearchResult r = run_search(sc.model, sc.strategy, sc.hardware, space, o);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("  %-6s %-5s %d thread(s): %7llu points (%5llu fit) in %7.3f s = %9.0f points/s; "
                "best %.4g tokens/s\n",
                label, pass, threads, static_cast<unsigned long long>(r.points),
                static_cast<unsigned long long>(r.feasible), s, r.points / s,
                r.top.empty() ? 0.0 : r.top[0].tokens_per_s);
  }
}

}  // namespace

int run_bench(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) files.push_back(argv[i]);
  if (files.empty()) {
    files = {"scenarios/megatron_1t_3072_a100.json", "scenarios/gpt3_175b_1024_a100.json",
             "scenarios/deepseek_v3_2048_h100.json"};
  }
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const SearchSpace large = large_space();
  for (const std::string& f : files) {
    const Scenario sc = load_scenario(f);
    std::printf("%s\n", f.c_str());
    for (int t : {1, all}) {
      if (!sc.search.axes.empty()) measure(sc, sc.search, "own", t);
      const bool moe = sc.model.family != ModelFamily::kOpGraph && sc.model.transformer.moe.enabled();
      measure(sc, moe ? moe_space() : large, moe ? "moe" : "large", t);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_bench(argc, argv);
  } catch (const stratasim::InputError& e) {
    std::fprintf(stderr, "error: %s (run from the repository root, or pass scenario paths)\n",
                 e.what());
    return 2;
  }
}
