// The stratasim subcommands. Each returns the process exit code: 0 success, 2 bad input or
// infeasible strategy (message on stderr), 1 internal failure.
#pragma once

namespace stratasim {

int cmd_evaluate(int argc, char** argv);
int cmd_explain(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_validate(int argc, char** argv);
int cmd_presets(int argc, char** argv);
int cmd_simulate(int argc, char** argv);  // the SimGrid engine (needs STRATASIM_WITH_SIMGRID)
int cmd_search(int argc, char** argv);
int cmd_batch(int argc, char** argv);  // many scenarios, results appended as JSON lines
int cmd_plot(int argc, char** argv);   // charts as PNG (needs STRATASIM_WITH_GUI)

}  // namespace stratasim
