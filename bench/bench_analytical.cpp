// Strategy evaluations per second of the analytical engine, one thread, lowering included:
//   build/bench/bench_analytical [SCENARIO.json] [SECONDS]
// Three measurements on the scenario:
//   base    - the scenario's own strategy, evaluated over and over (lower + predict);
//   sweep   - a grid of strategies a search visits (tp, pp, micro-batch, schedule/interleave,
//             recomputation), infeasible points included, as issue 5's search will;
//   cold    - the sweep with the per-thread block caches defeated (every point a new shape),
//             i.e. the cost of a point no earlier point shares anything with;
//   graph   - the iteration graph of scenarios/megatron_1t_3072_a100.json (explain --graph):
//             its size and the time to build its JSON text (issue 13: < 50 MB, < 2 s).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/iteration_graph.h"
#include "strategies/lowering/lower.h"

using namespace stratasim;

namespace {

std::vector<Strategy> sweep_grid(const Strategy& base) {
  std::vector<Strategy> grid;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2, 4, 8, 16}) {
      for (int mb : {1, 2, 4}) {
        for (int v : {1, 2, 3}) {
          for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
            Strategy s = base;
            s.tp = tp, s.pp = pp, s.dp = 0, s.micro_batch = mb, s.interleave = v,
            s.recompute = rc;
            s.schedule = v > 1 ? ScheduleKind::kInterleaved1F1B : ScheduleKind::k1F1B;
            grid.push_back(s);
          }
        }
      }
    }
  }
  return grid;
}

struct Result {
  long evaluations = 0, feasible = 0;
  double seconds = 0, checksum = 0;
};

template <class Mutate>
Result run(const Scenario& sc, const std::vector<Strategy>& grid, double seconds, Mutate mutate) {
  Result r;
  const auto start = std::chrono::steady_clock::now();
  while (r.seconds < seconds) {
    for (size_t i = 0; i < grid.size(); ++i) {
      ModelSpec model = sc.model;
      mutate(model, r.evaluations);
      Expected<Plan> plan = lower(model, grid[i], sc.hardware);
      if (plan) {
        r.checksum += predict_analytical(*plan).iteration_s;
        ++r.feasible;
      }
      ++r.evaluations;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return r;
}

void print(const char* name, const Result& r) {
  std::printf("%-6s %9ld evaluations (%ld feasible) in %.2f s: %9.0f evaluations/s, %6.2f us each\n",
              name, r.evaluations, r.feasible, r.seconds, r.evaluations / r.seconds,
              1e6 * r.seconds / r.evaluations);
}

}  // namespace

int run_bench(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : "scenarios/gpt3_175b_1024_a100.json";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const Scenario sc = load_scenario(file);
  std::printf("scenario %s, %.1f s per measurement, one thread\n", file.c_str(), seconds);
  auto same = [](ModelSpec&, long) {};
  print("base", run(sc, {sc.strategy}, seconds, same));
  const std::vector<Strategy> grid = sweep_grid(sc.strategy);
  print("sweep", run(sc, grid, seconds, same));
  // A vocabulary that changes every point makes every block a new cache entry.
  print("cold", run(sc, grid, seconds, [](ModelSpec& m, long i) {
          m.transformer.vocab += static_cast<int>(i % 100000) * 8;
        }));
  const Scenario big = load_scenario("scenarios/megatron_1t_3072_a100.json");
  const auto start = std::chrono::steady_clock::now();
  Expected<Plan> plan = lower(big.model, big.strategy, big.hardware);
  if (!plan) return 1;
  const std::string graph = iteration_graph_json(*plan);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("graph  megatron-1t/3072: %.1f MB of JSON in %.3f s (lower + expand)\n",
              graph.size() / 1e6, s);
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
