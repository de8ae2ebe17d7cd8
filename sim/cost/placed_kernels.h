// An operator graph's kernels on the devices of one replica, run by their dependencies:
// task parallelism on one device's streams (Strategy::streams) and model parallelism by
// placement (Strategy::placement, issue 13), timed the same way for both engines.
//
// Each device runs its kernels on `streams` streams and shares its compute max-min among them
// (concurrent_kernels.h). A tensor that an op on device a hands to ops on device b is sent
// once to b after its producer's kernel; b's consumers wait for it. The backward sends the
// summed gradient the other way once every consumer on b has run its backward. A send takes
// p2p_time (alpha + bytes / bandwidth: the device link inside a node, the network across
// nodes) and leaves through its device's port, which concurrent sends share max-min. The
// recomputation needs no sends: a device keeps what it received (placement.h). The model's
// input is data every device of the replica loads itself.
#pragma once

#include <cstddef>
#include <vector>

#include "strategies/lowering/plan.h"

namespace stratasim {

struct PlacedRun {
  double makespan_s = 0;
  double transfer_s = 0;        // the sends' times alone, summed
  double transfer_exposed_s = 0;  // makespan minus the makespan with free sends
  double transfer_bytes = 0;
};

// The kernels ks[begin, end) of block b (a forward, a recomputation or a backward list).
// `backward`: gradients flow from consumers to producers. `sends`: cross-device edges send
// (forward and backward); false for the recomputation.
PlacedRun run_placed(const Block& b, const std::vector<Kernel>& ks, size_t begin, size_t end,
                     bool backward, bool sends, const Plan& plan);

}  // namespace stratasim
