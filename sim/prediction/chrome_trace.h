// A Prediction's timeline as a Chrome / Perfetto trace (the JSON "traceEvents" format that
// ui.perfetto.dev and chrome://tracing open):
//  - one process per pipeline rank, named with the devices it stands for (TraceLayout): all
//    tp/cp/ep peers and data-parallel replicas of a pipeline rank run the same operations, so
//    each rank class appears once;
//  - two tracks per process, "compute" (forward, recompute, backward, idle, optimizer) and
//    "communication" (sends, collectives), with the bytes of each communication in its args;
//  - flow arrows from each pipeline send to the operation that consumes it on the next rank
//    (activations to the forward, gradients to the recomputation or backward);
//  - counters per rank: "memory (GiB)" (states, and the stored activations of the micro-batches
//    in flight, scaled so that their peak is the prediction's activations at that rank) and
//    "comm in flight (MB)" (bytes of the communications under way).
#pragma once

#include <string>
#include <vector>

#include "sim/prediction/prediction.h"

namespace stratasim {

struct TraceLayout {
  // Devices of one pipeline rank over all replicas (tp * mp * dp); pipeline rank r is devices
  // [r w, (r + 1) w). 0: not known, the processes are named by rank alone.
  long long devices_per_rank = 0;
  std::string peers;                     // how those devices split, e.g. "tp 8 x dp 16"
  std::vector<std::string> rank_device;  // the device of each pipeline rank (mixed clusters)
};

std::string chrome_trace(const Prediction& p, const std::string& title,
                         const TraceLayout& layout = {});

}  // namespace stratasim
