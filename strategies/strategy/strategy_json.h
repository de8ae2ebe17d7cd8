#pragma once

#include "sim/core/json_reader.h"
#include "strategies/strategy/strategy.h"

namespace stratasim {

Strategy read_strategy(const JsonNode& node);
Json to_json(const Strategy& s);

// For "--set strategy.tp=4" style overrides: the JSON value of one text ("4" -> 4,
// "true" -> true, "interleaved" -> "interleaved").
Json json_value_from_text(const std::string& text);

}  // namespace stratasim
