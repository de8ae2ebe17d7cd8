// Strategy evaluations per second of the analytical engine, single thread, lowering included:
//   build/bench/bench_analytical [scenarios/gpt3_175b_1024_a100.json] [seconds]
// Each evaluation varies the micro-batch size and schedule so no result is reused.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/lower.h"

int main(int argc, char** argv) {
  using namespace stratasim;
  const std::string file = argc > 1 ? argv[1] : "scenarios/gpt3_175b_1024_a100.json";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const Scenario sc = load_scenario(file);
  const int variants[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 3}, {4, 1}};
  long evaluations = 0, feasible = 0;
  double checksum = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int rep = 0; rep < 1000; ++rep) {
      Strategy s = sc.strategy;
      const auto& v = variants[evaluations % 6];
      s.micro_batch = v[0];
      s.interleave = v[1];
      s.schedule = v[1] > 1 ? ScheduleKind::kInterleaved1F1B : s.schedule;
      Expected<Plan> plan = lower(sc.model, s, sc.hardware);
      if (plan) {
        checksum += predict_analytical(*plan).iteration_s;
        ++feasible;
      }
      ++evaluations;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::printf("scenario %s\n", file.c_str());
  std::printf("%ld evaluations (%ld feasible) in %.2f s: %.0f evaluations/s, %.2f us each "
              "(checksum %.6g)\n",
              evaluations, feasible, elapsed, evaluations / elapsed, 1e6 * elapsed / evaluations,
              checksum);
  return 0;
}
