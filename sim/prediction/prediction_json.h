#pragma once

#include "sim/core/json_reader.h"
#include "sim/prediction/prediction.h"

namespace stratasim {

Json to_json(const MemoryBreakdown& m);
Json to_json(const Prediction& p);

}  // namespace stratasim
