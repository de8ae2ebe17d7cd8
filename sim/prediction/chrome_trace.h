// A Prediction's timeline as a Chrome / Perfetto trace (the JSON "traceEvents" format that
// ui.perfetto.dev and chrome://tracing open): one process per pipeline rank with two tracks,
// "compute" (forward, recompute, backward, idle) and "communication" (sends, collectives).
#pragma once

#include <string>

#include "sim/prediction/prediction.h"

namespace stratasim {

std::string chrome_trace(const Prediction& p, const std::string& title);

}  // namespace stratasim
