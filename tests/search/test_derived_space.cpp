// The derived search space (strategies/search/derived_space.h) and the normalization of knobs
// that do not apply at a point (normalize_knobs, issue 17).
#include <doctest/doctest.h>

#include "hardware_models/src/hardware_json.h"
#include "sim/search/search.h"
#include "strategies/lowering/lower.h"
#include "strategies/model/model_json.h"
#include "strategies/search/derived_space.h"

using namespace stratasim;

namespace {

SearchSpace space_from(const char* text) {
  const Json j = parse_json_text(text, "space.json");
  return read_search_space(JsonNode(j, "space.json", "search"));
}

HardwareModel h100s(int devices) {
  HardwareModel hw = catalog_cluster("dgx_h100");
  hw.num_devices = devices;
  return hw;
}

const AxisValues* find_axis(const SearchSpace& s, Axis a) {
  for (const AxisValues& x : s.axes) {
    if (x.axis == a) return &x;
  }
  return nullptr;
}

std::vector<int> values(const SearchSpace& s, Axis a) {
  const AxisValues* x = find_axis(s, a);
  REQUIRE(x != nullptr);
  return x->values;
}

}  // namespace

TEST_CASE("derived space: Llama-2 70B on 512 H100 gets the splits and knobs users search") {
  const SearchSpace s = derive_search_space(model_preset("llama2-70b"), h100s(512), Strategy{});
  // tp: powers of two up to a node (8) dividing 64 heads and 8 K/V heads; pp: up to 64.
  CHECK(values(s, Axis::kTp) == std::vector<int>{1, 2, 4, 8});
  CHECK(values(s, Axis::kPp) == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  CHECK(values(s, Axis::kZeroStage) == std::vector<int>{0, 1, 2, 3});
  CHECK(values(s, Axis::kDtype) ==
        std::vector<int>{static_cast<int>(DType::kBf16), static_cast<int>(DType::kFp8)});
  CHECK(find_axis(s, Axis::kCp) == nullptr);  // 4k tokens: no context parallelism
  CHECK(find_axis(s, Axis::kEp) == nullptr);  // dense
  // With full recomputation, the first 1, 2 or 4 layers of a stage only (0: all).
  CHECK(values(s, Axis::kRecomputeLayers) == std::vector<int>{0, 1, 2, 4});
  // 4 x 7 x 3 micro-batches x 2 schedules x 2 interleave x 3 recompute x 4 recomputed layers x
  // 4 ZeRO x 2 SP x 2 DP overlap x 2 TP overlap x 2 fusions x 2 dtypes.
  CHECK(s.size() == 4ull * 7 * 3 * 2 * 2 * 3 * 4 * 4 * 2 * 2 * 2 * 2 * 2);
}

TEST_CASE("derived space: long sequences add cp, mixtures of experts add ep and its overlap") {
  ModelSpec long_ctx = model_preset("llama3-8b");
  long_ctx.transformer.seq_len = 131072;
  const SearchSpace s = derive_search_space(long_ctx, h100s(64), Strategy{});
  CHECK(values(s, Axis::kCp) == std::vector<int>{1, 2, 4, 8, 16, 32});
  // Ring or all-gather attention over the cp ranks; at cp 1 the two points are one.
  CHECK(values(s, Axis::kCpComm) == std::vector<int>{int(CpComm::kRing), int(CpComm::kAllGather)});
  Strategy whole;
  whole.cp = 1, whole.cp_comm = CpComm::kAllGather;
  normalize_knobs(whole);
  CHECK(whole.cp_comm == CpComm::kRing);
  const SearchSpace moe = derive_search_space(model_preset("mixtral-8x7b"), h100s(64), Strategy{});
  CHECK(values(moe, Axis::kEp) == std::vector<int>{1, 4, 8});  // 8 experts; ep 2 left out
  CHECK(find_axis(moe, Axis::kOverlapEp) != nullptr);
  // NCCL's all-to-all or DeepEP's node-deduplicated dispatch; at ep 1 the two points are one.
  CHECK(values(moe, Axis::kEpDispatch) ==
        std::vector<int>{int(EpDispatch::kAllToAll), int(EpDispatch::kDeepEP)});
  CHECK(find_axis(moe, Axis::kFusion) == nullptr);  // kept as the scenario sets it
  Strategy one;
  one.ep = 1, one.ep_dispatch = EpDispatch::kDeepEP;
  normalize_knobs(one);
  CHECK(one.ep_dispatch == EpDispatch::kAllToAll);
}

TEST_CASE("derived space: an operator graph searches data, pipeline, spatial and channel parallelism") {
  Strategy base;
  base.global_batch = 2048;  // 256 samples per device on 8
  base.micro_batch = 96;
  const SearchSpace s = derive_search_space(model_preset("resnet50"), h100s(8), base);
  // Its filters over 1, 2 or 4 of a node's devices (channel parallelism).
  CHECK(values(s, Axis::kTp) == std::vector<int>{1, 2, 4});
  // Pipeline stages over the op list (issue 16), GPipe's or 1F1B's order, stage inputs
  // checkpointed or not.
  CHECK(values(s, Axis::kPp) == std::vector<int>{1, 2, 4, 8});
  CHECK(values(s, Axis::kSchedule) ==
        std::vector<int>{static_cast<int>(ScheduleKind::kGPipe), static_cast<int>(ScheduleKind::k1F1B),
                         static_cast<int>(ScheduleKind::kInterleaved1F1B), static_cast<int>(ScheduleKind::kZeroBubbleH1)});
  CHECK(values(s, Axis::kInterleave) == std::vector<int>{1, 2});
  CHECK(values(s, Axis::kRecompute) ==
        std::vector<int>{static_cast<int>(Recompute::kNone), static_cast<int>(Recompute::kFull)});
  // Powers of two up to the 256 samples a replica sees, and the scenario's own 96.
  CHECK(values(s, Axis::kMicroBatch) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 96, 128, 256});
  // ResNet's downsampling shortcuts are branches beside the main path: streams are searched.
  CHECK(values(s, Axis::kStreams) == std::vector<int>{1, 2, 4});
  // Fusion: none, all, whole chains. ResNet-50's convolutions have rows: its spatial split, cp 1..8.
  CHECK(values(s, Axis::kFusion) == std::vector<int>{0, 3, 4});
  CHECK(values(s, Axis::kCp) == std::vector<int>{1, 2, 4, 8});
  CHECK(s.size() == 3 * 10 * 4 * 4 * 2 * 2 * 4 * 3 * 4 * 2 * 3);
  // The image pipeline's stencils have rows: cp 1..8 on 8 devices. Streamed forward (inference),
  // it has no schedule, recomputation, ZeRO or gradient overlap to search.
  Strategy stream = base;
  stream.workload = Workload::kInference;
  const SearchSpace image = derive_search_space(make_image_pipeline(2160, 3840), h100s(8), stream);
  CHECK(values(image, Axis::kCp) == std::vector<int>{1, 2, 4, 8});
  for (Axis a : {Axis::kSchedule, Axis::kRecompute, Axis::kZeroStage, Axis::kOverlapDp}) {
    CHECK(find_axis(image, a) == nullptr);
  }
  // A chain of ops has no branches to overlap: no streams axis.
  ModelSpec chain;
  chain.family = ModelFamily::kOpGraph;
  chain.graph.ops = {GraphOp{.name = "a", .kind = GraphOpKind::kMatmul, .flops = 1, .output_elements = 1},
                     GraphOp{.name = "b", .kind = GraphOpKind::kElementwise, .flops = 1, .output_elements = 1,
                             .inputs = {0}}};
  CHECK(find_axis(derive_search_space(chain, h100s(8), base), Axis::kStreams) == nullptr);
  // A graph placed over a replica's devices is not split into stages as well.
  base.placement = {{"*", 0}};
  CHECK(find_axis(derive_search_space(chain, h100s(8), base), Axis::kPp) == nullptr);
}

TEST_CASE("normalized knobs: a tp = 1 point is not pruned for sequence parallelism") {
  Strategy base;
  base.tp = 2;
  base.sequence_parallel = true;
  base.overlap_tp = true;
  base.global_batch = 8;
  base.micro_batch = 4;
  const SearchSpace s = space_from(R"({"tp": [1, 2]})");
  SearchPoint p;
  point_at(s, 0, base, 2, p);
  CHECK(p.strategy.tp == 1);
  CHECK_FALSE(p.strategy.sequence_parallel);  // SP needs tp > 1: normalized away
  CHECK_FALSE(p.strategy.overlap_tp);
  CHECK_FALSE(p.duplicate);  // no SP axis: nothing else stands for it
  const ModelSpec m = model_preset("llama3-8b");
  CHECK(lower(m, p.strategy, h100s(2)).has_value());
  point_at(s, 1, base, 2, p);
  CHECK(p.strategy.sequence_parallel);  // tp 2 keeps the base's SP
}

TEST_CASE("normalized knobs: points equal after normalization are searched once") {
  // tp x SP: (1, off) stands for (1, on); interleave at 1F1B: (1f1b, 1) stands for (1f1b, 2);
  // interleaved at pp 1 is 1F1B. 2 tp x 2 SP x 2 schedules x 2 interleave = 16 indices.
  const SearchSpace s = space_from(R"({"tp": [1, 2], "sequence_parallel": [false, true],
      "schedule": ["1f1b", "interleaved"], "interleave": [1, 2]})");
  Strategy base;
  SearchPoint p;
  int duplicates = 0;
  for (uint64_t i = 0; i < s.size(); ++i) {
    point_at(s, i, base, 8, p);  // pp 1 throughout
    duplicates += p.duplicate;
    CHECK(p.strategy.schedule == ScheduleKind::k1F1B);
    CHECK(p.strategy.interleave == 1);
  }
  // Distinct normalized strategies: tp 1 (SP off), tp 2 with SP off or on = 3 of 16.
  CHECK(duplicates == 16 - 3);
  point_at(s, 0, base, 8, p);
  CHECK_FALSE(p.duplicate);  // the first index of each class is the one searched

  const SearchResult r = run_search(model_preset("llama3-8b"), base, h100s(8), s, SearchOptions{});
  CHECK(r.points == 16);
  CHECK(r.duplicates == 13);
}

TEST_CASE("search points: a space over pp without dp fills the devices with dp") {
  // The scenario's dp 4 fits only its own pp 4 on 16 devices; searching pp 1..16 keeps
  // tp x pp x dp = 16 by leaving dp to lower() (dp 0: devices / (tp pp cp)).
  const SearchSpace s = space_from(R"({"pp": [1, 2, 4, 16]})");
  Strategy base;
  base.pp = 4, base.dp = 4;
  SearchPoint p;
  for (uint64_t i = 0; i < s.size(); ++i) {
    point_at(s, i, base, 16, p);
    CHECK(p.strategy.dp == 0);
  }
  // A space that names dp keeps it (and pp without dp: nothing else changes).
  const SearchSpace with_dp = space_from(R"({"pp": [2], "dp": [8]})");
  point_at(with_dp, 0, base, 16, p);
  CHECK(p.strategy.dp == 8);
  const SearchSpace knobs = space_from(R"({"micro_batch": [1, 2]})");
  point_at(knobs, 0, base, 16, p);
  CHECK(p.strategy.dp == 4);
}
