// Wall time and peak memory of the SimGrid engine at stage and layer granularity:
//   build/bench/bench_simgrid [SCENARIO.json] [VARIANT] [stage|layer|both]
// Default: GPT-3 175B on 1024 A100 (tp 8, pp 8, dp 16), variant "interleaved v=2", both
// granularities: the targets (<= 2 s at stage, <= 30 s at layer granularity, <= 4 GiB,
// on one core). Each simulation runs in a child process (predict_simgrid forks), so its peak
// RSS is read with getrusage(RUSAGE_CHILDREN): the largest child so far (stage runs first);
// the child's CPU time is printed too (wall time suffers when other processes share the core).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/units.h"
#include "sim/scenario/scenario.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"

using namespace stratasim;

int main(int argc, char** argv) {
  const std::string file =
      argc > 1 ? argv[1]
               : std::string(STRATASIM_SOURCE_DIR) + "/scenarios/gpt3_175b_1024_a100.json";
  const std::string variant = argc > 2 ? argv[2] : "interleaved v=2";
  const std::string which = argc > 3 ? argv[3] : "both";
  try {
    const Scenario sc = load_scenario(file);
    Strategy strategy = sc.strategy;
    for (const auto& [name, s] : sc.variants) strategy = name == variant ? s : strategy;
    const Expected<Plan> plan = lower(sc.model, strategy, sc.hardware);
    if (!plan) {
      std::fprintf(stderr, "infeasible: %s\n", plan.error().detail.c_str());
      return 2;
    }
    const Prediction a = predict_analytical(*plan);
    std::printf("scenario    %s / %s\n", sc.name.c_str(), variant.c_str());
    std::printf("plan        tp=%d pp=%d dp=%d v=%d m=%d, %d devices\n", plan->tp, plan->pp,
                plan->dp, plan->chunks, plan->micro_batches, plan->hardware.num_devices);
    for (const SimGranularity g : {SimGranularity::kStage, SimGranularity::kLayer}) {
      const char* name = g == SimGranularity::kStage ? "stage" : "layer";
      if (which != "both" && which != name) continue;
      rusage before{};
      getrusage(RUSAGE_CHILDREN, &before);
      const auto t0 = std::chrono::steady_clock::now();
      const Prediction p =
          predict_simgrid(*plan, SimgridOptions{.timeline = false, .granularity = g});
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rusage child{}, self{};
      getrusage(RUSAGE_CHILDREN, &child);
      getrusage(RUSAGE_SELF, &self);
      std::printf("-- %s granularity\n", name);
      std::printf("simgrid     iteration %.4f s, bubble %.2f%% (analytical %.4f s, %.2f%%)\n",
                  p.iteration_s, 100 * p.bubble_fraction, a.iteration_s, 100 * a.bubble_fraction);
      for (const std::string& n : p.notes) std::printf("note        %s\n", n.c_str());
      std::printf("wall time   %.3f s (simulation in a forked child, %s granularity)\n", wall,
                  name);
      auto cpu_s = [](const rusage& u) {
        return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
               kMicro * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
      };
      std::printf("cpu time    %.3f s (child: user + system)\n", cpu_s(child) - cpu_s(before));
      std::printf("peak RSS    child %.1f MiB, parent %.1f MiB\n", child.ru_maxrss * kKiB / kMiB,
                  self.ru_maxrss * kKiB / kMiB);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_simgrid: %s\n", e.what());
    return 1;
  }
}
