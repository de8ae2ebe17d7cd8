// Strategy::fsdp_root_gather: when ZeRO-3/FSDP gathers its root unit, the parameters outside
// the wrapped layers (embedding, final norm, output head). FSDP2 gathers it with the first
// layer before every micro-batch's forward (micro_batch, the default); Megatron-FSDP releases
// only its FSDP units' parameters, so the root stays gathered from the first forward to the
// optimizer step and is gathered once an iteration (iteration). Worked on a small GPT (hidden
// 1024, 2 layers, vocab 32000) on one DGX H100 node, dp 8.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/analytical/analytical_engine.h"
#include "sim/core/json_reader.h"
#include "sim/cost/step_timing.h"
#include "strategies/strategy/strategy_json.h"
#include "tests/support/input_error.h"
#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

// ZeRO-3 over 8 ranks, 4 micro-batches of one sample each.
Strategy fsdp(FsdpRootGather root, int zero = 3) {
  Strategy s;
  s.global_batch = 32, s.micro_batch = 1;
  s.zero_stage = zero;
  s.overlap_dp = true;
  s.fsdp_root_gather = root;
  return s;
}

Plan lowered(const Strategy& s) { return testing::lower_on("dgx_h100", testing::small_gpt(2), s, 8); }

std::vector<IterOp> ops_of(const std::vector<IterOp>& ops, IterOpKind kind) {
  std::vector<IterOp> out;
  for (const IterOp& op : ops) {
    if (op.kind == kind) out.push_back(op);
  }
  return out;
}

Strategy read(const std::string& text) {
  return read_strategy(JsonNode(parse_json_text(text, "s.json"), "s.json", "strategy"));
}

}  // namespace

TEST_CASE("fsdp root gather: read, written back only when not per micro-batch, unknown values refused") {
  const Strategy s = read(R"({"global_batch": 8, "zero_stage": 3, "fsdp_root_gather": "iteration"})");
  CHECK(s.fsdp_root_gather == FsdpRootGather::kIteration);
  CHECK(read_strategy(JsonNode(to_json(s), "rt", "strategy")) == s);
  CHECK(to_json(s)["fsdp_root_gather"] == "iteration");
  CHECK(read(R"({"global_batch": 8, "zero_stage": 3})").fsdp_root_gather == FsdpRootGather::kMicroBatch);
  CHECK_FALSE(to_json(fsdp(FsdpRootGather::kMicroBatch)).contains("fsdp_root_gather"));
  const std::string what = testing::input_error_message(
      [] { read(R"({"global_batch": 8, "zero_stage": 3, "fsdp_root_gather": "step"})"); });
  CAPTURE(what);
  CHECK(what.find("s.json: strategy.fsdp_root_gather") != std::string::npos);
  CHECK(what.find("\"step\"") != std::string::npos);
}

TEST_CASE("fsdp root gather: once an iteration, the root leaves each forward's first gather for the tail") {
  const Plan each = lowered(fsdp(FsdpRootGather::kMicroBatch));
  const Plan once = lowered(fsdp(FsdpRootGather::kIteration));
  REQUIRE(each.micro_batches == 4);
  // bf16 weights, 2 B a parameter. The root: the embedding and the head.
  const double layer = each.layer->params;
  const double root = each.embedding->params + each.head->params;
  REQUIRE(root > 0);
  const std::vector<IterOp> first_each = ops_of(each.iteration.stages[0].forward.ops, IterOpKind::kZeroGather);
  const std::vector<IterOp> first_once = ops_of(once.iteration.stages[0].forward.ops, IterOpKind::kZeroGather);
  REQUIRE(first_each.size() == 2);  // the first layer (with the root) before the compute, the other beside it
  REQUIRE(first_once.size() == 2);
  CHECK(first_each[0].bytes == doctest::Approx(2 * (root + layer)));
  CHECK(first_once[0].bytes == doctest::Approx(2 * layer));
  CHECK(first_once[1].bytes == doctest::Approx(first_each[1].bytes));
  // The backward's gathers and the reduce-scatters do not change: the root's gradients are
  // still reduced every micro-batch (Megatron-FSDP's _root_post_backward).
  for (IterOpKind kind : {IterOpKind::kZeroGather, IterOpKind::kZeroReduceScatter}) {
    const auto a = ops_of(each.iteration.stages[0].backward.ops, kind);
    const auto b = ops_of(once.iteration.stages[0].backward.ops, kind);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bytes == doctest::Approx(b[i].bytes));
  }
  // The tail gathers the updated root shards once, over the 8 ranks.
  CHECK(ops_of(each.iteration.tail[0], IterOpKind::kParameterGather).empty());
  const auto tail = ops_of(once.iteration.tail[0], IterOpKind::kParameterGather);
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].bytes == doctest::Approx(2 * root));
  CHECK(tail[0].group == GroupKind::kData);

  // Without pipelining the forward's first gather is on the critical path of every
  // micro-batch (the compute waits for it; the rest of the gathers start with the compute
  // either way) and the tail's is exposed: the iteration is shorter by
  // m (t(root + layer) - t(layer)) - t(root), m = 4.
  const double t_both = comm_op_s(first_each[0], each), t_layer = comm_op_s(first_once[0], once);
  const double t_root = comm_op_s(tail[0], once);
  CHECK(t_both > t_layer);
  const double saved = 4 * (t_both - t_layer) - t_root;
  CHECK(saved > 0);
  CHECK(predict_analytical(each).iteration_s - predict_analytical(once).iteration_s ==
        doctest::Approx(saved).epsilon(1e-6));
}

TEST_CASE("fsdp root gather: nothing changes below ZeRO-3") {
  for (int zero : {0, 1, 2}) {
    CAPTURE(zero);
    const Plan each = lowered(fsdp(FsdpRootGather::kMicroBatch, zero));
    const Plan once = lowered(fsdp(FsdpRootGather::kIteration, zero));
    CHECK(predict_analytical(each).iteration_s == doctest::Approx(predict_analytical(once).iteration_s));
    CHECK(once.iteration.tail[0].size() == each.iteration.tail[0].size());
  }
}

}  // namespace stratasim
