// Human-readable reports of predictions (the CLI's text output).
#pragma once

#include <string>
#include <vector>

#include "sim/prediction/prediction.h"
#include "sim/scenario/scenario.h"

namespace stratasim {

std::string describe_model(const ModelSpec& m);
std::string describe_cluster(const HardwareModel& hw);
std::string describe_strategy(const Strategy& s, int dp, int micro_batches);

// "error: FILE: strategy.pp: infeasible (pipeline-parallel): pp=7 does not divide layers=96"
// (variants.NAME.<field> for a variant other than the base).
std::string infeasible_message(const std::string& file, const std::string& variant,
                               const Infeasible& why);

// `variant`: the variant evaluated ("" = the base strategy), for the header's defaults line.
std::string evaluation_report(const Scenario& sc, const Plan& plan, const Prediction& p,
                              const std::string& variant = "");
// "defaults  fusion none, recompute none, ... (not set in the scenario)": the knobs that change
// answers and took their default because the scenario does not set them; empty when none did.
std::string defaults_line(const Scenario& sc, const std::string& variant, const Strategy& s, int devices);

// Per-kernel predicted time of the transformer layer (or op-graph block): bound, time, share.
std::string kernel_time_table(const Plan& plan);

struct CompareRow {
  std::string scenario;
  std::string variant;
  const Plan* plan = nullptr;  // null when infeasible
  Prediction prediction;
  std::string infeasible;  // reason when the variant cannot run
};

// One table per scenario; the fastest variant that fits is marked with '*'.
std::string compare_table(const std::string& title, const std::vector<CompareRow>& rows);
std::string compare_csv(const std::vector<CompareRow>& rows);

}  // namespace stratasim
