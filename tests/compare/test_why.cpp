// why_best(): the sentences say what differs, with numbers taken from the predictions.
#include <doctest/doctest.h>

#include "sim/compare/why.h"
#include "sim/core/units.h"
#include "tests/support/run_cli.h"

using namespace stratasim;

namespace {

// A fitting strategy with one pipeline rank of `weights` + `activations` GiB (capacity 80 GiB).
EvaluatedStrategy make(const std::string& label, double tokens, double mfu, double act_GiB,
                       double weights_GiB = 50) {
  EvaluatedStrategy e;
  e.label = label;
  e.strategy.pp = 4;
  e.micro_batches = 64;
  e.dp = 8;
  Prediction& p = e.prediction;
  p.tokens_per_s = tokens;
  p.mfu = mfu;
  p.iteration_s = 1.0;
  p.bubble_fraction = 0.1;
  p.bubble_s = 0.1;
  MemoryBreakdown m;
  m.weights_B = weights_GiB * kGiB;
  m.activations_B = act_GiB * kGiB;
  p.rank_memory = {m};
  p.peak_memory_B = m.total();
  p.capacity_B = 80 * kGiB;
  p.fits = p.peak_memory_B <= p.capacity_B;
  return e;
}

}  // namespace

TEST_CASE("why: a smaller pipeline with more micro-batches halves the bubble") {
  EvaluatedStrategy a = make("A", 800, 0.32, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.pp = 8, a.micro_batches = 32;
  a.prediction.bubble_fraction = 0.20, a.prediction.bubble_s = 0.2;
  // 1000 / 800 = 1.25x; bubble 20% -> 10% is a ratio of 0.5: "halves".
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[0] == "B wins: 1.25x the throughput of A (1000 vs 800 tokens/s, MFU 40.0% vs 32.0%).");
  CHECK(why[1] == "PP 8 -> 4, m 32 -> 64 halves the pipeline bubble (20.0% -> 10.0% of the "
                  "pipeline time, 200.0 -> 100.0 ms).");
  CHECK(best_strategy({a, b}) == 1);
}

TEST_CASE("why: the one that fits wins, and the saver is named with the GiB it saves") {
  // A: 50 + 40 = 90 GiB > 80 GiB, faster but does not fit. B: selective recomputation keeps
  // 22 GiB of activations: 72 GiB. Saved: 40 - 22 = 18 GiB.
  EvaluatedStrategy a = make("A", 1200, 0.48, 40), b = make("B", 1000, 0.40, 22);
  b.strategy.recompute = Recompute::kSelective;
  REQUIRE_FALSE(a.prediction.fits);
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[0] == "B wins: A does not fit (90.0 GiB > 80.0 GiB per device).");
  CHECK(why[1] == "It fits because selective recomputation saves 18.0 GiB per device (peak 72.0 "
                  "vs 90.0 GiB of 80.0 GiB).");
}

TEST_CASE("why: exposed communication by kind, the runner-up is the next best of several") {
  // C is slowest; A second; B best. B overlaps DP: exposed dp 300 ms -> 50 ms (0.25 s is more
  // than 2% of B's 1 s iteration). ZeRO-1 in B moves 6 GiB of optimizer state off the device.
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10),
                    c = make("C", 500, 0.20, 10);
  a.prediction.comms = {{CommCategory::kDataParallel, "dp", 0, 0, 0, 0.3, 0.3}};
  b.prediction.comms = {{CommCategory::kDataParallel, "dp", 0, 0, 0, 0.3, 0.05}};
  b.strategy.overlap_dp = true;
  b.strategy.zero_stage = 1;
  b.prediction.rank_memory[0].weights_B -= 6 * kGiB;
  b.prediction.peak_memory_B -= 6 * kGiB;
  const std::vector<std::string> why = why_best({c, a, b});
  REQUIRE(why.size() == 3);
  CHECK(why[0] == "B wins: 1.11x the throughput of A (1000 vs 900 tokens/s, MFU 40.0% vs 36.0%).");
  CHECK(why[1] == "Exposed dp communication 300.0 -> 50.0 ms per iteration (DP overlap on).");
  CHECK(why[2] == "ZeRO-1 saves 6.0 GiB per device (peak 54.0 vs 60.0 GiB of 80.0 GiB).");
}

TEST_CASE("why: more memory for more speed is reported as a cost, nothing fits, one alone") {
  EvaluatedStrategy a = make("A", 800, 0.32, 10), b = make("B", 1000, 0.40, 20);
  b.strategy.recompute = Recompute::kNone;
  a.strategy.recompute = Recompute::kFull;
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[1] == "No recomputation costs 10.0 GiB per device (peak 70.0 vs 60.0 GiB of 80.0 GiB).");

  EvaluatedStrategy x = make("X", 800, 0.3, 40), y = make("Y", 900, 0.3, 45);
  REQUIRE_FALSE(x.prediction.fits);
  REQUIRE_FALSE(y.prediction.fits);
  CHECK(why_best({x, y})[0].rfind("Nothing fits; Y wins: 1.12x the throughput of X", 0) == 0);
  CHECK(why_best({x}) == std::vector<std::string>{"X is the only strategy: nothing to compare."});
}

TEST_CASE("why: without a memory saver the changed degrees are named") {
  // B halves TP and doubles PP: its weights per device grow from 25 to 43 GiB (+18 GiB).
  EvaluatedStrategy a = make("A", 800, 0.32, 10, 25), b = make("B", 1000, 0.40, 10, 43);
  a.strategy.tp = 8, a.strategy.pp = 4;
  b.strategy.tp = 4, b.strategy.pp = 8;
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[1] == "TP 8 -> 4, PP 4 -> 8 costs 18.0 GiB per device (peak 53.0 vs 35.0 GiB of 80.0 GiB).");
}

TEST_CASE("why: stratasim compare prints the explanation under each scenario's table") {
  // tiny_2gpu_1layer: three feasible variants; the first sentence names the winner.
  const auto r = stratasim::testing::run_command(std::string(STRATASIM_BINARY) + " compare " +
                                                 STRATASIM_SOURCE_DIR +
                                                 "/scenarios/tiny_2gpu_1layer.json");
  CHECK(r.code == 0);
  CHECK(r.output.find("   why: ") != std::string::npos);
  CHECK(r.output.find(" wins: ") != std::string::npos);
}

TEST_CASE("why: recomputation time saved by a lighter recomputation") {
  // Full recomputation repeats the forward (300 ms of A's iteration), selective only the
  // attention core (40 ms): 260 ms is 26% of B's 1 s iteration, well above the 2% threshold.
  EvaluatedStrategy a = make("A", 800, 0.32, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.recompute = Recompute::kFull, a.prediction.recompute_s = 0.3;
  b.strategy.recompute = Recompute::kSelective, b.prediction.recompute_s = 0.04;
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[1] == "Recomputation 300.0 -> 40.0 ms per iteration (recompute full -> selective).");
}

TEST_CASE("why: selective recomputation by module names the modules that changed") {
  // Both selective; A also recomputes the MLP (Megatron-Core's recompute_modules), 150 ms more of
  // recomputation than B's attention core alone (15% of B's 1 s iteration).
  EvaluatedStrategy a = make("A", 800, 0.32, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.recompute = b.strategy.recompute = Recompute::kSelective;
  a.strategy.recompute_modules = kModuleCoreAttn | kModuleMlp, a.prediction.recompute_s = 0.19;
  b.prediction.recompute_s = 0.04;
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 2);
  CHECK(why[1] == "Recomputation 190.0 -> 40.0 ms per iteration (recompute "
                  "selective(core_attn,mlp) -> selective).");
}

TEST_CASE("why: dropping TP is the cause, not the sequence parallelism that went with it") {
  // A: tp 2 with sequence parallelism, 0.5 ms exposed TP communication; B: tp 1 (so no SP and no
  // TP collectives), 1 GiB more weights per device. Sequence parallelism means nothing at tp 1,
  // so both sentences name the TP change alone.
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.tp = 2, a.strategy.sequence_parallel = true;
  b.strategy.tp = 1, b.strategy.sequence_parallel = false;
  a.prediction.iteration_s = b.prediction.iteration_s = 0.01;  // 0.5 ms is 5% of it
  a.prediction.comms = {{CommCategory::kTensorParallel, "tp", 0, 0, 0, 0.0005, 0.0005}};
  b.prediction.rank_memory[0].weights_B += 1 * kGiB;
  b.prediction.peak_memory_B += 1 * kGiB;
  const std::vector<std::string> why = why_best({a, b});
  REQUIRE(why.size() == 3);
  CHECK(why[1] == "Exposed tp communication 0.5 -> 0.0 ms per iteration (TP 2 -> 1).");
  CHECK(why[2] == "TP 2 -> 1 costs 1.0 GiB per device (peak 61.0 vs 60.0 GiB of 80.0 GiB).");
}

TEST_CASE("why: every compared strategy gets a paragraph, in ranking order") {
  // B (1000 tokens/s) beats A (900) and C (500). The runner-up A's paragraph is why_best();
  // C's names both and its own reason: C has no EP overlap, 400 ms more exposed expert
  // all-to-all (40% of B's 1 s iteration), and runs 1000 / 500 = 2.00x slower.
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10),
                    c = make("C", 500, 0.20, 10);
  for (EvaluatedStrategy* e : {&a, &b, &c}) e->strategy.ep = 8;
  b.strategy.overlap_ep = true;
  a.strategy.overlap_ep = true;
  c.prediction.comms = {{CommCategory::kExpertParallel, "ep", 0, 0, 0, 0.45, 0.45}};
  b.prediction.comms = {{CommCategory::kExpertParallel, "ep", 0, 0, 0, 0.45, 0.05}};
  a.prediction.comms = b.prediction.comms;
  const std::vector<WhyVersus> each = why_versus_each({c, a, b});
  REQUIRE(each.size() == 2);
  CHECK(each[0].other == "A");
  CHECK(each[0].sentences == why_best({c, a, b}));
  CHECK(each[1].other == "C");
  REQUIRE(each[1].sentences.size() == 2);
  CHECK(each[1].sentences[0] ==
        "B wins: 2.00x the throughput of C (1000 vs 500 tokens/s, MFU 40.0% vs 20.0%).");
  CHECK(each[1].sentences[1] == "Exposed ep communication 450.0 -> 50.0 ms per iteration (EP overlap on).");
  // One strategy alone: the single sentence of why_best().
  CHECK(why_versus_each({a}).size() == 1);
  CHECK(why_versus_each({a})[0].sentences == why_best({a}));
}

TEST_CASE("why: ZeRO stage and P2P overlap are named as causes of their communication") {
  // A: ZeRO-0 all-reduces gradients (exposed dp 200 ms); B: ZeRO-2 reduce-scatters them with
  // the same DP degree (exposed dp 100 ms). Then a pipeline whose sends overlap compute.
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10);
  b.strategy.zero_stage = 2;
  a.prediction.comms = {{CommCategory::kDataParallel, "dp", 0, 0, 0, 0.2, 0.2}};
  b.prediction.comms = {{CommCategory::kDataParallel, "dp", 0, 0, 0, 0.1, 0.1}};
  CHECK(why_best({a, b})[1] == "Exposed dp communication 200.0 -> 100.0 ms per iteration (ZeRO stage 0 -> 2).");
  EvaluatedStrategy p = make("P", 900, 0.36, 10), q = make("Q", 1000, 0.40, 10);
  q.strategy.overlap_p2p = true;
  p.prediction.comms = {{CommCategory::kPipelineP2P, "pp", 0, 0, 0, 0.08, 0.08}};
  q.prediction.comms = {{CommCategory::kPipelineP2P, "pp", 0, 0, 0, 0.08, 0.0}};
  CHECK(why_best({p, q})[1] == "Exposed pp communication 80.0 -> 0.0 ms per iteration (P2P overlap on).");
  // Megatron-Core's overlap_p2p_comm overlaps an interleaved schedule's sends only.
  q.strategy.overlap_p2p = false, q.strategy.overlap_p2p_interleaved = true;
  p.strategy.schedule = q.strategy.schedule = ScheduleKind::kInterleaved1F1B;
  p.strategy.interleave = q.strategy.interleave = 2;
  CHECK(why_best({p, q})[1] == "Exposed pp communication 80.0 -> 0.0 ms per iteration (P2P overlap on).");
}

TEST_CASE("why: DeepEP's dispatch is named as the cause of less exposed expert communication") {
  // Same ep degree; B sends each token once per node (DeepEP), A every routed copy (NCCL).
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.ep = b.strategy.ep = 64;
  b.strategy.ep_dispatch = EpDispatch::kDeepEP;
  a.prediction.comms = {{CommCategory::kExpertParallel, "ep", 0, 0, 0, 0.3, 0.3}};
  b.prediction.comms = {{CommCategory::kExpertParallel, "ep", 0, 0, 0, 0.2, 0.2}};
  CHECK(why_best({a, b})[1] == "Exposed ep communication 300.0 -> 200.0 ms per iteration "
                               "(DeepEP dispatch (each token once per node)).");
  // NCCL's all-to-all (A) against HybridEP (B): the cause names HybridEP's gathered maps.
  b.strategy.ep_dispatch = EpDispatch::kHybridEP;
  b.prediction.comms = {{CommCategory::kExpertParallel, "ep", 0, 0, 0, 0.25, 0.25}};
  CHECK(why_best({a, b})[1] == "Exposed ep communication 300.0 -> 250.0 ms per iteration "
                               "(HybridEP dispatch (each token once per node, routing maps all-gathered first)).");
}

TEST_CASE("why: the context-parallel exchange is named as the cause of its exposed time") {
  // Same cp degree; A gathers K and V before the attention (all-gather, exposed), B passes them
  // around the ring behind it.
  EvaluatedStrategy a = make("A", 900, 0.36, 10), b = make("B", 1000, 0.40, 10);
  a.strategy.cp = b.strategy.cp = 16;
  a.strategy.cp_comm = CpComm::kAllGather;
  a.prediction.comms = {{CommCategory::kContextParallel, "cp", 0, 0, 0, 0.3, 0.3}};
  b.prediction.comms = {{CommCategory::kContextParallel, "cp", 0, 0, 0, 0.3, 0.05}};
  CHECK(why_best({a, b})[1] == "Exposed cp communication 300.0 -> 50.0 ms per iteration "
                               "(ring attention (K/V hidden behind the attention)).");
  // Both rings; A gathers K and V once beside the first step (PyTorch's all-gather rotation).
  a.strategy.cp_comm = CpComm::kRing;
  a.strategy.cp_rotate = CpRotate::kAllGather;
  CHECK(why_best({a, b})[1] == "Exposed cp communication 300.0 -> 50.0 ms per iteration "
                               "(ring passes K/V beside every step).");
  // The same ring, A's exchanges waited where they are issued (its ring traced by torch.compile).
  a.strategy.cp_rotate = CpRotate::kPass;
  a.strategy.cp_overlap = false;
  CHECK(why_best({a, b})[1] == "Exposed cp communication 300.0 -> 50.0 ms per iteration "
                               "(ring exchanges beside the attention).");
}
