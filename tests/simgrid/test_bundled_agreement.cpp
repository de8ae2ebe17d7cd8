// Issue 13: both engines replay the same iteration program, so on every bundled scenario and
// every variant the SimGrid iteration time agrees with the analytical one within 0.5% (these
// platforms leave the replayed ops uncontended or contend only where both engines agree), but
// for the few listed in kContended, where the simulation shows contention the analytical
// engine does not model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/scenario/scenario.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/lower.h"

namespace stratasim {
namespace {

// Under AddressSanitizer (scripts/test_sanitizers.sh) the simulations run ~6x slower: there
// every third variant (the base strategies included) is compared; the plain build compares all.
// Plans simulating more hosts (pp x dp) than kMaxHosts are left to the plain build there too
// (DeepSeek-V3's DualPipe layout: 2048 hosts; tests/simgrid/test_simgrid_engine.cpp checks
// DualPipe's agreement on small plans under ASan as well).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kStride = 3;
constexpr long long kMaxHosts = 1024;
#else
constexpr int kStride = 1;
constexpr long long kMaxHosts = 1LL << 40;
#endif
// Scenarios beyond this many devices (Llama 3 405B on 16,384 H100: 2048 hosts, ~17M
// activities, about a minute per strategy) are compared in a test case of their own, so that
// ctest runs it beside the others: the base strategy only, and not under ASan.
constexpr int kHugeDevices = 8192;

// Variants whose platform contends where only SimGrid sees it, each with the bound on how much
// slower the simulation may be and why. Anything else must agree within 0.5%; these must be
// slower in the simulation (contention only slows), by less than the bound (about 1.5x the
// measured gap, so that a regression in either engine fails it).
struct Contended {
  const char* file;
  const char* variant;
  double max_gap;
  const char* why;
};
constexpr Contended kContended[] = {
    {"pipedream_vgg16_16_v100.json", "4 stages, 1F1B with flushes", 0.09,
     "measured +5.8%: in the warm-up and cool-down a GPU's port and its node's 10 GbE NIC "
     "receive activations from the previous stage and gradients from the next one at once; the "
     "analytical engine queues sends on the sender's port only"},
    {"pipedream_vgg16_16_v100.json", "2 stages x 8 replicas", 0.026,
     "measured +1.7%: the classifier stage's gradient ring and the convolution stage's "
     "activations (inside the convolutions, 100 MB per micro-batch) arrive at the same NICs"},
};

const Contended* contended(const std::string& file, const std::string& variant) {
  for (const Contended& c : kContended) {
    if (std::filesystem::path(file).filename() == c.file && variant == c.variant) return &c;
  }
  return nullptr;
}

// Compares the engines on the bundled scenarios with more (huge) or at most kHugeDevices
// devices, those whose index in name order is `part` modulo `parts` (ctest runs the parts
// side by side, each within its timeout under ASan); returns the number of strategies compared.
int compare_bundled(bool huge, int part = 0, int parts = 1) {
  std::vector<std::string> files;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(STRATASIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 7);
  double worst = 0;
  int compared = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int>(i % parts) != part) continue;
    const std::string& f = files[i];
    const Scenario sc = load_scenario(f);
    if ((sc.hardware.num_devices > kHugeDevices) != huge) continue;
    int index = 0;
    for (const auto& [name, s] : sc.variants) {  // the base strategy first
      if (index++ % kStride != 0 || (huge && index > 1)) continue;
      Expected<Plan> plan = lower(sc.model, s, sc.hardware);
      if (!plan) continue;
      if (static_cast<long long>(plan->pp) * plan->dp > kMaxHosts) continue;
      const double a = predict_analytical(*plan).iteration_s;
      const double g = predict_simgrid(*plan, {.timeline = false}).iteration_s;
      const double rel = std::abs(g - a) / a;
      CAPTURE(f);
      CAPTURE(name);
      if (const Contended* c = contended(f, name)) {
        CAPTURE(c->why);
        CHECK(g > a);
        CHECK(rel < c->max_gap);
        ++compared;
        continue;
      }
      CHECK(rel < 0.005);
      worst = std::max(worst, rel);
      ++compared;
    }
  }
  MESSAGE(compared << " strategies, worst relative difference " << worst);
  return compared;
}

// Five parts of the bundled scenarios (together every one of them), each its own ctest entry.
// Under ASan, with three parts, the one holding DeepSeek-V3, GPT-OSS-120B, Megatron 1T and
// Qwen3-235B took 546 s, close to ctest's 600 s timeout; five parts keep those apart.
TEST_CASE("simgrid: every bundled scenario and variant agrees with the analytical engine (part 1 of 5)") {
  CHECK(compare_bundled(false, 0, 5) >= 10 / kStride);
}
TEST_CASE("simgrid: every bundled scenario and variant agrees with the analytical engine (part 2 of 5)") {
  CHECK(compare_bundled(false, 1, 5) >= 10 / kStride);
}
TEST_CASE("simgrid: every bundled scenario and variant agrees with the analytical engine (part 3 of 5)") {
  CHECK(compare_bundled(false, 2, 5) >= 10 / kStride);
}
TEST_CASE("simgrid: every bundled scenario and variant agrees with the analytical engine (part 4 of 5)") {
  CHECK(compare_bundled(false, 3, 5) >= 10 / kStride);
}
TEST_CASE("simgrid: every bundled scenario and variant agrees with the analytical engine (part 5 of 5)") {
  CHECK(compare_bundled(false, 4, 5) >= 10 / kStride);
}

TEST_CASE("simgrid: the bundled 16,384-GPU scenario's base strategy agrees with the analytical engine") {
  if (kStride > 1) return;  // ~6 minutes under AddressSanitizer
  CHECK(compare_bundled(true) == 1);
}

}  // namespace
}  // namespace stratasim
