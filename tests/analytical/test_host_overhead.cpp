// Strategy::host_overhead (sim/cost/block_cost.cpp add_host_waits): the host issues each kernel
// in h; the device waits sum(h) - sum(device) per kernel list when the host is the slower of the
// two, and nothing otherwise. Worked from the lowered kernels of a small plan.
#include <doctest/doctest.h>

#include <string>

#include "sim/core/error.h"
#include "sim/core/json_reader.h"
#include "sim/cost/block_cost.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

double launches_issued(const std::vector<Kernel>& ks) {
  double n = 0;
  for (const Kernel& k : ks) {
    n += k.cls == OpClass::kCollective ? 1 : (k.reads_input_fused ? 0 : k.launches);
  }
  return n;
}

double sum_exposed(const std::vector<KernelTiming>& t) {
  double s = 0;
  for (const KernelTiming& k : t) s += k.exposed_s;
  return s;
}

Plan small_plan(double host_overhead_s, int tp) {
  Strategy s;
  s.tp = tp;
  s.global_batch = 8, s.micro_batch = 1;
  s.host_overhead_s = host_overhead_s;
  return testing::lower_on_dgx_a100(testing::small_gpt(2), s, tp);
}

TEST_CASE("host overhead: a host slower than the device sets the pace of a kernel list") {
  // 1 ms per kernel is far above any kernel of this small layer (micro-batch 1, seq 512, hidden
  // 1024, tp 2): the forward list takes launches x 1 ms, the device idle for the rest.
  const Plan none = small_plan(0, 2), slow = small_plan(1e-3, 2);
  for (const std::vector<Kernel>* ks : {&none.layer->forward, &none.layer->backward}) {
    const double device = sum_exposed(kernel_timings(*ks, none));
    const double launches = launches_issued(*ks);
    const std::vector<KernelTiming> t = kernel_timings(*ks, slow);
    CHECK(device < 1e-3 * launches);
    CHECK(sum_exposed(t) == doctest::Approx(1e-3 * launches));
    // The wait sits on compute kernels only, in proportion to the kernels each issues; the
    // collectives (the TP all-reduces) keep their times.
    double waits = 0;
    for (size_t i = 0; i < ks->size(); ++i) {
      const Kernel& k = (*ks)[i];
      if (k.cls == OpClass::kCollective) {
        CHECK(t[i].host_wait_s == 0.0);
        continue;
      }
      waits += t[i].host_wait_s;
    }
    CHECK(waits == doctest::Approx(1e-3 * launches - device));
  }
}

TEST_CASE("host overhead: a host faster than the device changes nothing") {
  const Plan none = small_plan(0, 1), quick = small_plan(1e-9, 1);
  const std::vector<KernelTiming> a = kernel_timings(none.layer->backward, none);
  const std::vector<KernelTiming> b = kernel_timings(none.layer->backward, quick);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].exposed_s == a[i].exposed_s);
    CHECK(b[i].host_wait_s == 0.0);
  }
}

TEST_CASE("host overhead: read as a time per kernel, at most 1 ms, and written back") {
  auto read = [](const std::string& text) {
    return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
  };
  CHECK(read(R"({"global_batch": 8, "host_overhead": "12us"})").host_overhead_s ==
        doctest::Approx(12e-6));
  CHECK(read(R"({"global_batch": 8})").host_overhead_s == 0.0);
  const Strategy back = read(to_json(read(R"({"global_batch": 8, "host_overhead": "7.5us"})")).dump());
  CHECK(back.host_overhead_s == doctest::Approx(7.5e-6));
  const std::string what =
      testing::input_error_message([&] { read(R"({"global_batch": 8, "host_overhead": "2ms"})"); });
  CAPTURE(what);
  CHECK(what.find("strategy.host_overhead") != std::string::npos);
  CHECK(what.find("at most 1ms") != std::string::npos);
  CHECK_THROWS_AS(read(R"({"global_batch": 8, "host_overhead": 5})"), InputError);
}

}  // namespace
}  // namespace stratasim
