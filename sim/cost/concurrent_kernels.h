// Kernels of one step on one device, run on several streams as their dependencies allow
// (task parallelism over an operator graph's independent branches, issue 13).
//
// The device is one shared resource. A kernel alone takes `alone_s` and keeps a fraction
// `demand` of the device busy meanwhile: the time its work would take at the device's plateau
// rate (the efficiency curves' max_fraction, no wave tail, no launch overhead) over its time
// alone. Small kernels, short of filling the device, leave room for another stream; a large
// GEMM leaves none. Kernels running together share the device max-min fairly (each gets an
// equal share of what is left, never more than its demand: progressive filling, the rule
// SimGrid's solver applies to bounded executions on one host), so two branches take the
// longer one's time when their demands fit the device together and the sum of their times
// when each fills it alone. Streams take ready kernels in index order from one FIFO queue, the
// policy of kernels::run_dag (a kernel becomes ready when its last dependency finished).
#pragma once

#include <vector>

#include "sim/cost/kernel_cost.h"

namespace stratasim {

struct ConcurrentKernel {
  double alone_s = 0;     // duration with the device to itself
  double demand = 1;      // fraction of the device it keeps busy alone, in [0, 1]
  std::vector<int> deps;  // kernels (lower or higher index) that must finish first
  int resource = 0;       // what it runs on (a device, a link): kernels share only their own
};

struct ConcurrentRun {
  double makespan_s = 0;
  std::vector<double> start_s, end_s;  // per kernel
};

// Requires streams >= 1 and an acyclic dependency list (SS_ASSERT). Every kernel on resource 0.
ConcurrentRun run_concurrent(const std::vector<ConcurrentKernel>& kernels, int streams);
// Several resources (the devices of a placement and the links between them), each with its
// own streams and shared max-min fairly by the kernels running on it alone; one FIFO of ready
// kernels, each taken when its resource has a free stream.
ConcurrentRun run_concurrent(const std::vector<ConcurrentKernel>& kernels,
                             const std::vector<int>& streams_per_resource);

// The fraction of the device a kernel keeps busy when it runs alone (see above).
double device_demand(const KernelTime& t);

}  // namespace stratasim

namespace stratasim {

// Dependencies among the kernels ks[begin, end) of one block, read from its graph's tensors.
// `backward` false (forward, recomputation): a kernel waits for the kernels in the range that
// produce its ops' inputs. `backward` true: a kernel waits for the backward kernels of the
// ops that consumed its ops' outputs (the gradient flows the other way). Indices are relative
// to `begin`; ops without a kernel in the range (saved, not recomputed) impose nothing.
std::vector<std::vector<int>> kernel_dependencies(const LayerGraph& g, const std::vector<Kernel>& ks,
                                                  size_t begin, size_t end, bool backward);

}  // namespace stratasim
