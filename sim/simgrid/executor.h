// Runs one simulation in this process (internal to sim/simgrid). Creates the process's one
// SimGrid Engine: call at most once per process (child_process.h forks for that).
#pragma once

#include "sim/simgrid/sim_run.h"
#include "sim/simgrid/simgrid_engine.h"

namespace stratasim::simgrid_detail {

// Throws std::runtime_error when the simulation deadlocks.
SimRun run_simulation(const Plan& plan, const SimgridOptions& options);

}  // namespace stratasim::simgrid_detail
