#include <doctest/doctest.h>

#include "sim/core/json_reader.h"
#include "sim/core/units.h"

using namespace stratasim;

TEST_CASE("units: quantities with units parse to SI") {
  std::string rule;
  CHECK(*parse_quantity("312TFlops", Dimension::kFlopRate, &rule) == doctest::Approx(312e12));
  CHECK(*parse_quantity("2039GBps", Dimension::kBandwidth, &rule) == doctest::Approx(2.039e12));
  // 200 Gb/s is 25 GB/s: bits are divided by 8.
  CHECK(*parse_quantity("200Gbps", Dimension::kBandwidth, &rule) == doctest::Approx(25e9));
  CHECK(*parse_quantity("80GiB", Dimension::kBytes, &rule) == 80.0 * 1024 * 1024 * 1024);
  CHECK(*parse_quantity("1.5us", Dimension::kTime, &rule) == doctest::Approx(1.5e-6));
  CHECK(*parse_quantity(" 3 ms ", Dimension::kTime, &rule) == doctest::Approx(3e-3));
}

TEST_CASE("units: a wrong unit names the unit and what is accepted") {
  std::string rule;
  CHECK_FALSE(parse_quantity("300GBs", Dimension::kBandwidth, &rule));
  CHECK(rule ==
        "has unknown unit 'GBs' for a bandwidth (accepted: Bps, MBps, GBps, TBps, GB/s, bps, "
        "Mbps, Gbps, Tbps, Gb/s)");
  CHECK_FALSE(parse_quantity("fast", Dimension::kTime, &rule));
  CHECK(rule == "must be a time: a number followed by one of s, ms, us, ns");
}

TEST_CASE("json reader: malformed JSON reports file:line:column") {
  CHECK_THROWS_WITH_AS(parse_json_text("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json"),
                       doctest::Contains("x.json:3:8: malformed JSON: syntax error"), InputError);
}

TEST_CASE("json reader: unknown keys, missing fields and bad values name file, path, value, rule") {
  const Json j = parse_json_text(R"({"strategy": {"tpp": 4, "bw": "9XBps"}})", "s.json");
  JsonNode root(j, "s.json", "");
  JsonNode s = root.at("strategy");
  CHECK_THROWS_WITH_AS(s.allow_keys({"tp", "pp", "bw"}),
                       "s.json: strategy.tpp: \"tpp\" is an unknown key (did you mean 'tp'?); "
                       "allowed keys: tp, pp, bw",
                       InputError);
  CHECK_THROWS_WITH_AS(s.at("dp"), "s.json: strategy.dp: (missing) is a required field",
                       InputError);
  CHECK_THROWS_WITH_AS(s.quantity("bw", Dimension::kBandwidth),
                       doctest::Contains("s.json: strategy.bw: \"9XBps\" has unknown unit 'XBps'"),
                       InputError);
  CHECK_THROWS_WITH_AS(s.integer("tpp", 1, 2), "s.json: strategy.tpp: 4 must be between 1 and 2",
                       InputError);
}

TEST_CASE("json reader: duplicate keys, nulls, overflowing and negative quantities are errors") {
  CHECK_THROWS_WITH_AS(parse_json_text(R"({"tp": 8, "tp": 4})", "d.json"),
                       "d.json: key \"tp\" appears twice in one object (JSON keys must be unique)",
                       InputError);
  const Json j = parse_json_text(
      R"({"a": null, "big": "1e308PFLOP", "neg": -5, "tiny": "1e-9us"})", "n.json");
  JsonNode root(j, "n.json", "");
  CHECK_THROWS_WITH_AS(root.number_or("a", 1),
                       "n.json: a: null must not be null (leave the key out for the default)",
                       InputError);
  CHECK_THROWS_WITH_AS(root.quantity("big", Dimension::kFlops),
                       "n.json: big: \"1e308PFLOP\" must be a finite, non-negative quantity",
                       InputError);
  CHECK_THROWS_WITH_AS(root.quantity("neg", Dimension::kCount), "n.json: neg: -5 must not be negative",
                       InputError);
  CHECK(root.quantity("tiny", Dimension::kTime) == doctest::Approx(1e-15));
}
