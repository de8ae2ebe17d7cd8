// stratasim simulate SCENARIO.json [--set k=v] [--variant NAME] [--trace out.json] [--json OUT]
//   [--granularity stage|layer]:
// the SimGrid engine on one strategy, with the same report as evaluate.
#include <cstdio>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "apps/report.h"
#include "sim/core/atomic_file.h"
#include "sim/prediction/prediction_json.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/lower.h"
#include "strategies/lowering/mixed_cluster.h"
#include "strategies/strategy/strategy_json.h"
#if STRATASIM_WITH_SIMGRID
#include "sim/prediction/chrome_trace.h"
#include "sim/simgrid/simgrid_engine.h"
#endif

namespace stratasim {

#if STRATASIM_WITH_SIMGRID
namespace {

Strategy pick_variant(const Scenario& sc, const std::string& variant, const std::string& file) {
  if (variant.empty()) return sc.strategy;
  for (const auto& [name, s] : sc.variants) {
    if (name == variant) return s;
  }
  throw InputError(file, "variants", "\"" + variant + "\"", "is not a variant of this scenario");
}

// What each process of the trace stands for: pipeline rank r's devices, how they split, and
// (mixed clusters) the device of its group.
TraceLayout trace_layout(const Plan& plan) {
  TraceLayout l;
  l.devices_per_rank = static_cast<long long>(plan.tp) * plan.mp * plan.dp;
  for (auto [name, degree] : {std::pair{"tp", plan.tp}, {"mp", plan.mp}, {"cp", plan.cp},
                              {"dp", plan.data_parallel()}}) {
    if (degree > 1) l.peers += (l.peers.empty() ? "" : " x ") + std::string(name) + " " + std::to_string(degree);
  }
  if (plan.hardware.mixed()) {
    for (int r = 0; r < plan.pp; ++r) {
      l.rank_device.push_back(plan.hardware.groups[pipeline_rank_group(plan, r)].device.name);
    }
  }
  return l;
}

}  // namespace

int cmd_simulate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "simulate");
  if (args.positionals.size() != 1) {
    throw InputError("command line", "simulate", std::to_string(args.positionals.size()) + " files",
                     "takes exactly one SCENARIO.json");
  }
  const std::string granularity = args.option("granularity");
  if (!granularity.empty() && granularity != "stage" && granularity != "layer") {
    throw InputError("command line", "--granularity", "\"" + granularity + "\"",
                     "must be stage or layer");
  }
  const Scenario sc = load_scenario(args.positionals[0], args.sets);
  const Strategy strategy = pick_variant(sc, args.option("variant"), args.positionals[0]);
  Expected<Plan> plan = lower(sc.model, strategy, sc.hardware);
  if (!plan) {  // as evaluate reports it: the JSON path of the strategy (or variant) field
    std::fputs(infeasible_message(sc.file, args.option("variant"), plan.error()).c_str(), stderr);
    return 2;
  }
  SimgridOptions options;
  if (granularity == "layer") options.granularity = SimGranularity::kLayer;
  options.timeline = !args.option("trace").empty() || !args.option("json").empty();
  const Prediction p = predict_simgrid(*plan, options);
  std::fputs(evaluation_report(sc, *plan, p, args.option("variant")).c_str(), stdout);
  if (!args.option("trace").empty()) {
    write_file_atomically(args.option("trace"), chrome_trace(p, sc.name, trace_layout(*plan)));
  }
  if (!args.option("json").empty()) {
    Json out{{"scenario", sc.name},
             {"file", sc.file},
             {"strategy", to_json(strategy)},
             {"prediction", to_json(p)}};
    write_file_atomically(args.option("json"), json_text(out, 1) + "\n");
  }
  return 0;
}

#else

int cmd_simulate(int, char**) {
  std::fputs(
      "error: simulate: this stratasim was built without SimGrid "
      "(STRATASIM_WITH_SIMGRID=OFF)\n",
      stderr);
  return 2;
}

#endif

}  // namespace stratasim
