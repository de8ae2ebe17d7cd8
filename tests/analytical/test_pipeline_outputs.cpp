// PyTorch's pipelining runtime keeps the last stage's output of every micro-batch
// (Strategy::pp_keeps_outputs; torch.distributed.pipelining _PipelineStageBase.output_chunks),
// worked out by hand on the small GPT.
#include <doctest/doctest.h>

#include "sim/core/json_reader.h"
#include "sim/cost/memory_model.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/small_plans.h"

using namespace stratasim;

namespace {

// 4 layers, hidden 1024, seq 512, vocab 32000; tp 2 x pp 2 on 4 A100, micro-batch 2 of a
// global batch 16: 8 micro-batches.
Strategy pipelined(bool keeps) {
  Strategy s;
  s.tp = 2, s.pp = 2, s.global_batch = 16, s.micro_batch = 2;
  s.pp_keeps_outputs = keeps;
  return s;
}

}  // namespace

TEST_CASE("pipeline outputs: PyTorch's last stage keeps every micro-batch's logits until the step ends") {
  const Plan plain = testing::lower_on_dgx_a100(testing::small_gpt(4), pipelined(false), 4);
  const Plan kept = testing::lower_on_dgx_a100(testing::small_gpt(4), pipelined(true), 4);
  REQUIRE(kept.micro_batches == 8);
  const std::vector<int> in_flight{2, 1};
  const std::vector<MemoryBreakdown> a = rank_memory(plain, in_flight), b = rank_memory(kept, in_flight);
  // One micro-batch's logits on a rank: 2 x 512 tokens x 32000 / 2 vocabulary columns x 2 B =
  // 32,768,000 B; eight of them on the last stage, none on the first.
  CHECK(b[1].activations_B - a[1].activations_B == doctest::Approx(8 * 32768000.0));
  CHECK(b[0].activations_B == doctest::Approx(a[0].activations_B));
  // The eager loss frees its 16-bit logits, and none of its 4 B tensors fits the hole
  // (allocator_replay.h): one micro-batch's logits stay reserved. Kept logits fill it, so the
  // reserved memory grows by seven micro-batches' logits where the tensors grow by eight.
  CHECK(a[1].fragmentation_B == doctest::Approx(32768000.0));
  CHECK(b[1].fragmentation_B == doctest::Approx(0.0));
  CHECK(b[1].total() - a[1].total() == doctest::Approx(7 * 32768000.0));
  // Without a pipeline there is no output to keep.
  Strategy one = pipelined(true);
  one.pp = 1;
  const Plan flat = testing::lower_on_dgx_a100(testing::small_gpt(4), one, 2);
  one.pp_keeps_outputs = false;
  const Plan flat_plain = testing::lower_on_dgx_a100(testing::small_gpt(4), one, 2);
  CHECK(rank_memory(flat, {1})[0].total() == doctest::Approx(rank_memory(flat_plain, {1})[0].total()));
}

TEST_CASE("pipeline outputs: pp_keeps_outputs is read and written back") {
  const Strategy s = read_strategy(JsonNode(parse_json_text(
      R"({"global_batch": 8, "pp": 2, "pp_keeps_outputs": true})", "s.json"), "s.json", "strategy"));
  CHECK(s.pp_keeps_outputs);
  CHECK(to_json(s).at("pp_keeps_outputs") == true);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK_FALSE(to_json(Strategy{}).contains("pp_keeps_outputs"));
}
