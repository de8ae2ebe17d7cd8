// Small plans for the SimGrid engine tests, built from scenario text (no file: test cases run
// in parallel): an 8-layer GPT (hidden 1024, 16 heads) on DGX A100 nodes by default, with
// `strategy` and `network` spliced in.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "sim/core/json_reader.h"
#include "sim/scenario/scenario.h"
#include "strategies/lowering/lower.h"

namespace stratasim::testing {

inline Plan plan_for(const std::string& strategy, int devices, const std::string& network = "{}",
                     int layers = 8, int hidden = 1024, int seq = 1024) {
  std::ostringstream text;
  text << R"({"name": "t", "model": {"family": "decoder", "name": "gpt", "layers": )" << layers
       << R"(, "hidden": )" << hidden << R"(, "heads": 16, "seq_len": )" << seq
       << R"(, "vocab": 32000}, "cluster": {"preset": "dgx_a100", "devices": )" << devices
       << R"(, "network": )" << network << R"(}, "strategy": )" << strategy << "}";
  const Scenario sc = read_scenario(parse_json_text(text.str(), "test.json"), "test.json");
  Expected<Plan> plan = lower(sc.model, sc.strategy, sc.hardware);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().detail));
  return *plan;
}

inline std::string pipeline(const char* schedule, int tp, int pp, int m, int v = 1) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                R"({"tp": %d, "pp": %d, "micro_batch": 1, "global_batch": %d, "schedule": "%s",)"
                R"( "interleave": %d, "fusion": "megatron"})",
                tp, pp, m, schedule, v);
  return buf;
}

inline double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

}  // namespace stratasim::testing
