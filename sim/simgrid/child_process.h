// Runs a function in a forked child process and returns the text it produced (internal to
// sim/simgrid). SimGrid's Engine is a per-process singleton: each simulation gets a fresh
// process, so any number of simulations can run one after another from one parent.
#pragma once

#include <functional>
#include <string>

namespace stratasim::simgrid_detail {

// `work` runs in the child; its return value travels back over a pipe. An exception in the
// child is rethrown in the parent as std::runtime_error with the child's message; a child
// killed by a signal is reported the same way. The child leaves with _exit (no atexit
// handlers, no destructors of the parent's objects).
std::string run_in_child(const std::function<std::string()>& work);

}  // namespace stratasim::simgrid_detail
