#include <cstdio>

#include "sim/core/json_reader.h"
#include "sim/core/text.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "apps/report.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/cost/stage_costs.h"
#include "sim/core/atomic_file.h"
#include "sim/prediction/prediction_json.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/iteration_graph.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "validate/intervals.h"

namespace stratasim {
namespace {

struct Loaded {
  Scenario scenario;
  Strategy strategy;
  std::string variant;  // empty: the base strategy
};

Loaded load(const CliArgs& args, const char* command) {
  if (args.positionals.size() != 1) {
    throw InputError("command line", command, std::to_string(args.positionals.size()) + " files",
                     "takes exactly one SCENARIO.json");
  }
  Loaded l{load_scenario(args.positionals[0], args.sets), {}};
  l.strategy = l.scenario.strategy;
  const std::string variant = args.option("variant");
  if (!variant.empty()) {
    bool found = false;
    for (const auto& [name, s] : l.scenario.variants) {
      if (name == variant) l.strategy = s, found = true;
    }
    l.variant = variant;
    if (!found) {
      throw InputError(args.positionals[0], "variants", "\"" + variant + "\"",
                       "is not a variant of this scenario");
    }
  }
  return l;
}

// An infeasible strategy is bad input for evaluate/explain: one message, exit code 2.
int report_infeasible(const Loaded& l, const Infeasible& why) {
  std::fputs(infeasible_message(l.scenario.file, l.variant, why).c_str(), stderr);
  return 2;
}

// A token budget (evaluate --train-tokens) at the predicted throughput: wall-clock days,
// device-hours and, with a price per device-hour, the cost.
struct TokenBudget {
  double tokens = 0, price_per_device_hour = 0;
  double days = 0, device_hours = 0, cost_usd = 0;
};

TokenBudget token_budget(double tokens, double price, const Prediction& p, int devices) {
  TokenBudget b{tokens, price};
  const double seconds = p.tokens_per_s > 0 ? tokens / p.tokens_per_s : 0;
  b.days = seconds / kSecondsPerDay;
  b.device_hours = seconds / kSecondsPerHour * devices;
  b.cost_usd = b.device_hours * price;
  return b;
}

std::string token_budget_report(const TokenBudget& b, int devices) {
  std::string out = format_text("  token budget         %.4g tokens: %.3g days on %d devices, %.4g device-hours",
                                b.tokens, b.days, devices, b.device_hours);
  out += b.price_per_device_hour > 0
             ? format_text(", %.4g USD at %.4g USD per device-hour\n", b.cost_usd, b.price_per_device_hour)
             : std::string(" (no price: --price USD or cluster.device.price_per_hour)\n");
  return out;
}

}  // namespace

int cmd_evaluate(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "evaluate");
  const Loaded l = load(args, "evaluate");
  const double train_tokens = number_option(args, "train-tokens", Dimension::kCount, 0);
  if (!args.option("train-tokens").empty() && train_tokens <= 0) {
    throw InputError("command line", "--train-tokens", args.option("train-tokens"), "must be a positive number of tokens");
  }
  const double price = number_option(args, "price", Dimension::kCount, l.scenario.hardware.device.price_per_hour);
  Expected<Plan> plan = lower(l.scenario.model, l.strategy, l.scenario.hardware);
  if (!plan) return report_infeasible(l, plan.error());
  EngineOptions options;
  options.timeline = args.has("timeline");
  constexpr double kMaxTimelineOps = 2e6;
  const double ops = 2.0 * plan->micro_batches * plan->chunks * plan->pp;
  if (options.timeline && ops > kMaxTimelineOps) {
    throw InputError("command line", "--timeline", std::to_string(static_cast<long long>(ops)) + " ops",
                     "is too large a timeline to write (at most 2000000 pipeline ops); lower "
                     "global_batch or raise micro_batch");
  }
  const Prediction p = predict_analytical(*plan, options);
  std::fputs(evaluation_report(l.scenario, *plan, p, l.variant).c_str(), stdout);
  // How sure: the errors of the development cases on this device generation and strategy family.
  const PredictionInterval interval = plan_interval(*plan, p.iteration_s);
  if (interval.cases > 0) {
    std::printf("  %.0f%% interval     %.4g - %.4g s (errors of %s, validate --published)\n",
                100 * interval.coverage, interval.low_s, interval.high_s, interval.basis.c_str());
  } else {
    std::printf("  %.0f%% interval     %s\n", 100 * interval.coverage, interval_text(interval).c_str());
  }
  const TokenBudget budget = token_budget(train_tokens, price, p, plan->hardware.num_devices);
  if (train_tokens > 0) std::fputs(token_budget_report(budget, plan->hardware.num_devices).c_str(), stdout);
  if (args.has("kernels")) std::fputs(("\n" + kernel_time_table(*plan)).c_str(), stdout);
  if (!args.option("json").empty()) {
    Json out{{"scenario", l.scenario.name}, {"file", l.scenario.file},
             {"strategy", to_json(l.strategy)}, {"prediction", to_json(p)},
             {"interval", {{"coverage", interval.coverage},
                           {"iteration_low_s", interval.low_s},
                           {"iteration_high_s", interval.high_s},
                           {"cases", interval.cases},
                           {"basis", interval.basis}}}};
    if (train_tokens > 0) {
      out["token_budget"] = {{"tokens", budget.tokens}, {"days", budget.days},
                             {"device_hours", budget.device_hours},
                             {"price_per_device_hour", budget.price_per_device_hour},
                             {"cost_usd", budget.cost_usd}};
    }
    write_file_atomically(args.option("json"), json_text(out, 1) + "\n");
  }
  return 0;
}

int cmd_explain(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "explain");
  const Loaded l = load(args, "explain");
  Expected<Plan> plan = lower(l.scenario.model, l.strategy, l.scenario.hardware);
  if (!plan) return report_infeasible(l, plan.error());
  std::fputs(explain(*plan).c_str(), stdout);
  if (!args.option("graph").empty()) {
    // The iteration graph (docs/iteration_graph.md), written whole or not at all.
    // Built for the durations the engines time (ZB-V's order depends on them).
    const StageCosts costs = stage_costs(*plan);
    write_file_atomically(args.option("graph"), iteration_graph_json(*plan, &costs.durations));
  }
  return 0;
}

}  // namespace stratasim
