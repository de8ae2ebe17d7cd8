// Every subcommand's options, declared once: parse_cli() reads argv against these and
// `stratasim COMMAND --help` prints them.
#include <algorithm>

#include "apps/cli_args.h"

namespace stratasim {
namespace {

const CliOption kJson{"json", "FILE", "write the result as JSON (atomically: whole or not at all)"};
const CliOption kCsv{"csv", "FILE", "write the result as CSV"};
const CliOption kVariant{"variant", "NAME", "use the scenario's variant NAME instead of its strategy"};
const CliOption kDevice{"device", "cpu|cuda:N", "where the kernels run (default cpu)"};
const CliOption kQuick{"quick", "", "fewer and smaller measurements (seconds instead of minutes)"};
const CliOption kTop{"top", "N", "keep the N best results (default 10)"};
const CliOption kThreads{"threads", "N", "worker threads (default: every core, or per MPI rank)"};

std::vector<CliCommand> declare_commands() {
  return {
      {"evaluate", "SCENARIO.json", "Predict one strategy with the analytical engine and print a report.",
       true,
       {kVariant, kJson,
        {"timeline", "", "print the pipeline timeline of one iteration"},
        {"kernels", "", "print the time of every kernel of one layer"},
        {"train-tokens", "N", "a token budget: report days to train, device-hours and cost"},
        {"price", "USD", "price per device-hour for the cost (default: the device's price_per_hour)"}}},
      {"simulate", "SCENARIO.json",
       "Simulate one strategy with the SimGrid engine: link contention and a timeline trace.", true,
       {kVariant, kJson,
        {"trace", "FILE", "write the timeline as a Perfetto/Chrome trace"},
        {"granularity", "stage|layer", "one activity per stage step (default) or per layer"}}},
      {"explain", "SCENARIO.json", "Print the lowered plan of one strategy, stage by stage.", true,
       {kVariant, {"graph", "FILE", "write the iteration graph as JSON (docs/iteration_graph.md)"}}},
      {"compare", "SCENARIO.json|DIR ...",
       "Compare every strategy variant of each scenario in one table.", true, {kJson, kCsv}},
      {"validate", "",
       "Compare predictions with published measurements (--published) or a calibrated hardware "
       "model with fresh measurements (--hardware FILE).",
       false,
       {{"published", "", "predict the published validation cases"},
        {"data", "FILE", "a validation case file (repeatable)"},
        {"data-only", "", "only the --data files, not the bundled cases"},
        {"cross", "", "leave-one-source-out coverage of the 80% intervals"},
        {"scenarios", "DIR", "write each case as a scenario file into DIR"},
        {"hardware", "FILE", "a hardware model written by stratasim calibrate"},
        {"kernels", "", "validate the kernel predictions"},
        {"runtime", "", "validate the pipeline runtime predictions"},
        kDevice, kQuick, kJson, kCsv}},
      {"calibrate", "", "Fit a hardware model of this machine to microbenchmarks.", false,
       {{"out", "FILE", "where the model goes (default hardware_models/local.json)", 'o'},
        kDevice, kQuick}},
      {"kernels", "", "Time the kernel families fused and unfused.", false,
       {kDevice, kQuick, kJson}},
      {"search", "SCENARIO.json", "Evaluate every point of the scenario's search space.", true,
       {{"objective", "NAME",
         "throughput (default), time_to_train, cost_per_token, memory_headroom or throughput_per_device"},
        kTop, kThreads,
        {"train-tokens", "N", "tokens to train on (needed by time_to_train)"},
        {"price", "USD", "price per device-hour (for cost_per_token)"},
        {"refine", "simgrid", "re-rank the best points with the SimGrid engine"}, kJson, kCsv}},
      {"batch", "DIR|LIST.txt",
       "Evaluate (or search) many scenarios, one JSON line each; resumable; spreads over MPI "
       "ranks under mpirun (docs/mpi.md).",
       false,
       {{"out", "FILE", "the results file (default results.jsonl)"},
        {"search", "", "search each scenario's space instead of evaluating it"},
        {"resume", "", "skip scenarios the results file already holds"}, kTop, kThreads}},
      {"plot", "SCENARIO.json|RESULT.json", "Draw a chart of a scenario or a result as a PNG.",
       true,
       {{"kind", "timeline|memory|breakdown|pareto", "the chart"},
        {"out", "FILE.png", "where the PNG goes", 'o'}, kVariant,
        {"size", "WxH", "image size in pixels (default 1200x700)"}}},
      {"runtime", "",
       "Run a pipeline (dp replicas, ring all-reduce) or an operator graph on CPU threads and "
       "write the measured timeline.",
       false,
       {{"schedule", "gpipe|1f1b|interleaved|pipedream", "pipeline schedule (default 1f1b)"},
        {"pp", "P", "pipeline stages", 'p'},
        {"micro-batches", "M", "micro-batches per iteration", 'm'},
        {"interleave", "V", "virtual stages per rank (interleaved)", 'v'},
        {"dp", "D", "data-parallel replicas"},
        {"flop", "F", "FLOP per stage and micro-batch"},
        {"grad-elems", "N", "gradient elements per stage"},
        {"buckets", "B", "gradient buckets"},
        {"overlap", "", "overlap the gradient all-reduce with the backward pass"},
        {"dag", "resnet|lstm|lstm_sequence|attention", "run an operator graph instead of a pipeline"},
        {"calibration", "FILE", "with --dag: predict its makespan from a calibrate hardware file "
                                "(per-thread FLOP rate and per-op cost) and compare"},
        {"repeats", "R", "with --dag: run it R times and keep the fastest (default 1)"},
        kThreads,
        {"trace", "FILE", "write the measured timeline as a Chrome trace"}, kJson}},
      {"presets", "", "List the built-in models, devices, links and clusters.", false, {}},
  };
}

}  // namespace

const std::vector<CliCommand>& cli_commands() {
  static const std::vector<CliCommand> commands = declare_commands();
  return commands;
}

const CliCommand* find_cli_command(const std::string& name) {
  const auto& all = cli_commands();
  auto it = std::find_if(all.begin(), all.end(), [&](const CliCommand& c) { return c.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace stratasim
