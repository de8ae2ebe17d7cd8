#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "sim/core/json_reader.h"
#include "apps/cli_args.h"
#include "apps/commands.h"
#include "apps/report.h"
#include "sim/compare/compare.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/core/atomic_file.h"
#include "sim/compare/why.h"
#include "sim/prediction/prediction_json.h"
#include "strategies/lowering/lower.h"
#include "strategies/strategy/strategy_json.h"
#include "validate/intervals.h"

namespace stratasim {
namespace {

std::vector<std::string> scenario_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(in)) {
        if (entry.path().extension() == ".json") found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

struct ScenarioResult {
  Scenario scenario;
  std::vector<VariantResult> variants;
  std::vector<CompareRow> rows;  // views of `variants` for the table and the CSV
};

ScenarioResult evaluate_scenario(const std::string& file, const std::vector<std::string>& sets) {
  ScenarioResult r{load_scenario(file, sets), {}, {}};
  r.variants = evaluate_variants(r.scenario);
  for (const VariantResult& v : r.variants) {
    r.rows.push_back(CompareRow{r.scenario.name, v.name, v.plan.get(), v.prediction, v.infeasible});
  }
  return r;
}

// The variants with their 80% intervals (validate/intervals.h) beside each prediction.
Json rows_json(const ScenarioResult& r) {
  Json variants = variants_json(r.variants);
  for (size_t i = 0; i < r.variants.size() && i < variants.size(); ++i) {
    const VariantResult& v = r.variants[i];
    if (!v.feasible()) continue;
    const PredictionInterval in = plan_interval(*v.plan, v.prediction.iteration_s);
    variants[i]["interval"] = {{"coverage", in.coverage},
                               {"iteration_low_s", in.low_s},
                               {"iteration_high_s", in.high_s},
                               {"cases", in.cases},
                               {"basis", in.basis}};
  }
  return Json{{"scenario", r.scenario.name}, {"file", r.scenario.file}, {"variants", variants}};
}

// "why: ..." lines: why the fastest variant that fits beats each of the others, the runner-up
// first (sim/compare/why.h); each paragraph starts with a headline naming both.
std::string why_lines(const std::vector<VariantResult>& variants) {
  std::vector<EvaluatedStrategy> feasible;
  for (const VariantResult& v : variants) {
    if (v.feasible()) {
      feasible.push_back({v.name, v.strategy, v.plan->data_parallel(), v.plan->micro_batches, v.prediction});
    }
  }
  if (feasible.size() < 2) return {};
  std::string out;
  for (const WhyVersus& versus : why_versus_each(feasible)) {
    for (const std::string& s : versus.sentences) out += "   why: " + s + "\n";
  }
  return out;
}

}  // namespace

int cmd_compare(int argc, char** argv) {
  const CliArgs args = parse_cli(argc, argv, 2, "compare");
  const std::vector<std::string> files = scenario_files(args.positionals);
  if (files.empty()) {
    throw InputError("command line", "compare", "(no files)", "needs scenario files or directories");
  }
  int failures = 0;
  Json all = Json::array();
  std::vector<CompareRow> csv_rows;
  std::vector<ScenarioResult> results;
  for (const std::string& file : files) {
    try {
      results.push_back(evaluate_scenario(file, args.sets));
    } catch (const InputError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      ++failures;
      continue;
    }
    const ScenarioResult& r = results.back();
    std::string title = r.scenario.name + "  [" + r.scenario.file + "]";
    if (!r.scenario.description.empty()) title += "\n   " + r.scenario.description;
    std::fputs((compare_table(title, r.rows) + why_lines(r.variants) + "\n").c_str(), stdout);
    all.push_back(rows_json(r));
    csv_rows.insert(csv_rows.end(), r.rows.begin(), r.rows.end());
  }
  std::printf("%zu scenario(s) compared, %d failed to load; '*' marks the fastest variant that "
              "fits in memory\n", results.size(), failures);
  if (!args.option("json").empty()) write_file_atomically(args.option("json"), json_text(all, 1) + "\n");
  if (!args.option("csv").empty()) write_file_atomically(args.option("csv"), compare_csv(csv_rows));
  return failures > 0 ? 2 : 0;
}

}  // namespace stratasim
