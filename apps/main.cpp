// stratasim: predict the iteration time, throughput, communication and memory of a training
// strategy, compare strategies, and validate the predictions against published results.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "sim/core/error.h"

namespace {

const char* kUsage =
    "usage: stratasim <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  evaluate SCENARIO.json [--set key=value ...] [--variant NAME] [--json OUT]\n"
    "                         predict one strategy and print a report\n"
    "  simulate SCENARIO.json [--set key=value ...] [--variant NAME] [--trace OUT] [--json OUT]\n"
    "                         [--granularity stage|layer]\n"
    "                         simulate one strategy with SimGrid (contention, timeline trace)\n"
    "  explain  SCENARIO.json [--set key=value ...] [--variant NAME] [--graph OUT.json]\n"
    "                         print the lowered plan per stage\n"
    "  compare  SCENARIO.json|DIR ... [--json OUT] [--csv OUT]\n"
    "                         compare every strategy variant of each scenario in a table\n"
    "  validate --published [--data FILE|DIR ...] [--data-only] [--cross] [--json OUT] [--csv OUT]\n"
    "                         compare predictions with published measurements\n"
    "  validate --hardware FILE [--kernels] [--runtime] [--device cpu|cuda:N] [--quick]\n"
    "                         [--json OUT]\n"
    "                         predict the kernels and the pipeline runtime with a calibrated\n"
    "                         model and compare with fresh measurements (both by default)\n"
    "  calibrate [--device cpu|cuda:N] [-o hardware_models/local.json] [--quick]\n"
    "                         fit a hardware model of this machine to microbenchmarks\n"
    "  kernels  [--device cpu|cuda:N] [--quick] [--json OUT]\n"
    "                         time the kernel families fused vs unfused\n"
    "  search   SCENARIO.json [--objective throughput|time_to_train|cost_per_token|\n"
    "                         memory_headroom] [--top N] [--threads N] [--train-tokens N]\n"
    "                         [--price USD] [--json OUT] [--csv OUT]\n"
    "                         evaluate every point of the scenario's search space\n"
    "  batch    DIR|LIST.txt [--search] [--out results.jsonl] [--resume] [--top N]\n"
    "                         [--threads N]\n"
    "                         evaluate (or search) many scenarios, one JSON line each;\n"
    "                         search and batch spread over ranks under mpirun (docs/mpi.md)\n"
    "  plot     SCENARIO.json --kind timeline|memory|breakdown|pareto -o OUT.png\n"
    "                         [--set key=value ...] [--variant NAME] [--size 1200x700]\n"
    "                         draw a chart of the scenario as a PNG (needs the Qt build)\n"
    "  runtime  [--schedule gpipe|1f1b|interleaved|pipedream] [-p P] [-m M] [-v V] [--dp D]\n"
    "           [--flop F] [--grad-elems N] [--buckets B] [--overlap] [--trace OUT] [--json OUT]\n"
    "           | --dag resnet|lstm|lstm_sequence|attention [--threads T] [--flop F] [--trace OUT]\n"
    "                         run a pipeline (dp replicas, ring all-reduce) or an operator\n"
    "                         graph on CPU threads; measured timeline as a trace\n"
    "  presets                list the built-in models, devices, links and clusters\n"
    "\n"
    "--set takes a dotted JSON path into the scenario, e.g. --set strategy.tp=4\n"
    "stratasim COMMAND --help lists the options of one command\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (const stratasim::CliCommand* spec = stratasim::find_cli_command(command)) {
    for (int i = 2; i < argc; ++i) {  // `stratasim COMMAND ... --help`: that command's options
      if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
        std::fputs(stratasim::cli_help(*spec).c_str(), stdout);
        return 0;
      }
    }
  }
  // Output that could not be written is an error, not a silent exit 0 (`> /dev/full`).
  auto flushed = [](int code) {
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "error: cannot write to standard output: %s\n", std::strerror(errno));
      return 2;
    }
    return code;
  };
  try {
    if (command == "evaluate") return flushed(stratasim::cmd_evaluate(argc, argv));
    if (command == "simulate") return flushed(stratasim::cmd_simulate(argc, argv));
    if (command == "explain") return flushed(stratasim::cmd_explain(argc, argv));
    if (command == "compare") return flushed(stratasim::cmd_compare(argc, argv));
    if (command == "validate") return flushed(stratasim::cmd_validate(argc, argv));
    if (command == "presets") return flushed(stratasim::cmd_presets(argc, argv));
    if (command == "search") return flushed(stratasim::cmd_search(argc, argv));
    if (command == "batch") return flushed(stratasim::cmd_batch(argc, argv));
    if (command == "plot") return flushed(stratasim::cmd_plot(argc, argv));
    if (command == "kernels") return flushed(stratasim::cmd_kernels(argc, argv));
    if (command == "calibrate") return flushed(stratasim::cmd_calibrate(argc, argv));
    if (command == "runtime") return flushed(stratasim::cmd_runtime(argc, argv));
    std::fprintf(stderr, "stratasim: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const stratasim::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stratasim: internal error: %s\n", e.what());
    return 1;
  }
}
