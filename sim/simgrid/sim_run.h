// What one SimGrid simulation measures, in plain types: the child process that runs the
// simulation sends it to the parent as JSON, and simgrid_engine.cpp turns it into a Prediction.
#pragma once

#include <string>
#include <vector>

#include "sim/prediction/prediction.h"

namespace stratasim::simgrid_detail {

// One simulated host: a device of pipeline rank `rank` in data-parallel replica `replica`
// (its tensor-parallel peers behave identically and are not simulated separately).
struct HostResult {
  int rank = 0, replica = 0;
  double busy_s = 0;          // computing or blocked in a send, until its last pipeline op
  double pipeline_end_s = 0;  // end of its last forward/backward op
  double p2p_s = 0;           // transfer time of the messages it sent (simulated, contended)
  double dp_s = 0;            // time inside data-parallel collectives
  double dp_end_s = 0;        // when its gradient reduction / parameter gather ended
  double embedding_s = 0;     // tied-embedding all-reduce (first and last stage)
  double optimizer_s = 0;
  double finish_s = 0;        // end of its optimizer step
  double tp_s = 0;            // inside tensor-parallel collectives (simulated messages)
  double tp_exposed_s = 0;    // the part of it that lengthened its ops
  double zero_s = 0;          // inside ZeRO-2/3 per-micro-batch collectives (simulated)
  double zero_exposed_s = 0;  // the part of it that lengthened its ops
  double ep_s = 0;            // inside expert-parallel all-to-alls (simulated messages)
  double amax_s = 0;          // FP8 amax reductions (closed form), all of it exposed
};

struct SimRun {
  std::vector<HostResult> hosts;
  std::vector<TimelineEvent> events;  // replica 0 only, when asked for
  long long activities = 0;           // executions and communications simulated
  int nodes = 0;                      // node zones in the platform
  double simulated_s = 0;             // clock at the end of the simulation
};

std::string to_wire(const SimRun& run);
SimRun from_wire(const std::string& text);

}  // namespace stratasim::simgrid_detail
