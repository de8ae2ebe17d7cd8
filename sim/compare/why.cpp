#include "sim/compare/why.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sim/core/error.h"
#include "sim/core/text.h"
#include "sim/core/units.h"
#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/strategy/strategy_json.h"

namespace stratasim {
namespace {

constexpr double kMsPerS = 1.0 / kMilli;
constexpr double kPercent = 100.0;
constexpr double kBubbleStep = 0.01;         // bubble changes below 1 point are not reasons
constexpr double kCommShareOfIteration = 0.02;  // exposed comm changes below 2% neither
constexpr double kMemoryStep_B = 0.5 * kGiB;    // nor memory changes below half a GiB

bool ranks_before(const EvaluatedStrategy& a, const EvaluatedStrategy& b) {
  if (a.prediction.fits != b.prediction.fits) return a.prediction.fits;
  return a.prediction.tokens_per_s > b.prediction.tokens_per_s;
}

std::string change(const char* name, int from, int to) {
  return format_text("%s %d -> %d", name, from, to);
}

// What differs between the two pipelines: "PP 8 -> 4, m 32 -> 64, schedule 1f1b -> interleaved".
std::string bubble_causes(const EvaluatedStrategy& o, const EvaluatedStrategy& b) {
  std::vector<std::string> parts;
  if (o.strategy.pp != b.strategy.pp) parts.push_back(change("PP", o.strategy.pp, b.strategy.pp));
  if (o.micro_batches != b.micro_batches) parts.push_back(change("m", o.micro_batches, b.micro_batches));
  if (o.strategy.schedule != b.strategy.schedule) {
    parts.push_back("schedule " + std::string(schedule_name(o.strategy.schedule)) + " -> " +
                    std::string(schedule_name(b.strategy.schedule)));
  }
  if (o.strategy.interleave != b.strategy.interleave) {
    parts.push_back(change("v", o.strategy.interleave, b.strategy.interleave));
  }
  if (o.strategy.stage_split != b.strategy.stage_split || o.strategy.stage_layers != b.strategy.stage_layers) {
    parts.push_back("stage layers " + stage_layers_text(o.strategy) + " -> " + stage_layers_text(b.strategy));
  }
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : ", ") + parts[i];
  return text;
}

std::string headline(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const Prediction &pb = b.prediction, &po = o.prediction;
  if (pb.fits && !po.fits) {
    return format_text("%s wins: %s does not fit (%.1f GiB > %.1f GiB per device).",
                       b.label.c_str(), o.label.c_str(), po.peak_memory_B / kGiB,
                       po.capacity_B / kGiB);
  }
  const char* prefix = pb.fits ? "" : "Nothing fits; ";
  return format_text("%s%s wins: %.2fx the throughput of %s (%.0f vs %.0f tokens/s, MFU %.1f%% "
                     "vs %.1f%%).",
                     prefix, b.label.c_str(), pb.tokens_per_s / po.tokens_per_s, o.label.c_str(),
                     pb.tokens_per_s, po.tokens_per_s, pb.mfu * kPercent, po.mfu * kPercent);
}

std::string bubble_sentence(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const double fb = b.prediction.bubble_fraction, fo = o.prediction.bubble_fraction;
  if (std::abs(fb - fo) < kBubbleStep) return {};
  const double ratio = fo > 0 ? fb / fo : 1;
  const char* verb = ratio > 1 ? "raises" : std::abs(ratio - 0.5) < 0.05 ? "halves" : "cuts";
  const std::string causes = bubble_causes(o, b);
  const std::string subject = causes.empty() ? "Stage balance" : causes;
  return format_text("%s %s the pipeline bubble (%.1f%% -> %.1f%% of the pipeline time, "
                     "%.1f -> %.1f ms).",
                     subject.c_str(), verb, fo * kPercent, fb * kPercent,
                     o.prediction.bubble_s * kMsPerS, b.prediction.bubble_s * kMsPerS);
}

double exposed(const Prediction& p, CommCategory c) {
  double s = 0;
  for (const CommStat& stat : p.comms) {
    if (stat.category == c) s += stat.exposed_s;
  }
  return s;
}

// The communication kind whose exposed time changed most, when it matters.
std::string comm_sentence(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  constexpr CommCategory kAll[] = {CommCategory::kTensorParallel, CommCategory::kDataParallel,
                                   CommCategory::kZero, CommCategory::kPipelineP2P,
                                   CommCategory::kEmbeddingSync, CommCategory::kContextParallel,
                                   CommCategory::kExpertParallel, CommCategory::kPlacement,
                                   CommCategory::kFp8Amax};
  CommCategory most = kAll[0];
  double largest = 0;
  for (CommCategory c : kAll) {
    const double d = std::abs(exposed(o.prediction, c) - exposed(b.prediction, c));
    if (d > largest) largest = d, most = c;
  }
  if (largest < kCommShareOfIteration * b.prediction.iteration_s) return {};
  // Every knob that moves this category, joined (sequence parallelism only changes the TP
  // collectives when both sides have TP > 1).
  const Strategy &sb = b.strategy, &so = o.strategy;
  std::vector<std::string> causes;
  if (most == CommCategory::kTensorParallel) {
    if (so.tp != sb.tp) causes.push_back(change("TP", so.tp, sb.tp));
    if (so.overlap_tp != sb.overlap_tp) causes.push_back(sb.overlap_tp ? "TP overlap on" : "TP overlap off");
    if (so.sequence_parallel != sb.sequence_parallel && so.tp > 1 && sb.tp > 1)
      causes.push_back(sb.sequence_parallel ? "sequence parallelism on" : "sequence parallelism off");
  }
  if (most == CommCategory::kDataParallel) {
    if (o.dp != b.dp) causes.push_back(change("DP", o.dp, b.dp));
    if (so.overlap_dp != sb.overlap_dp) causes.push_back(sb.overlap_dp ? "DP overlap on" : "DP overlap off");
  }
  if (most == CommCategory::kZero && so.zero_stage != sb.zero_stage)
    causes.push_back(change("ZeRO stage", so.zero_stage, sb.zero_stage));
  if ((most == CommCategory::kZero || most == CommCategory::kDataParallel) && so.shard_group != sb.shard_group)
    causes.push_back(change("shard group", so.shard_group, sb.shard_group));
  // ZeRO-2/3 reduce-scatter gradients per bucket where ZeRO-0/1 all-reduce them.
  if (most == CommCategory::kDataParallel && so.zero_stage != sb.zero_stage &&
      std::max(so.zero_stage, sb.zero_stage) >= 2)
    causes.push_back(change("ZeRO stage", so.zero_stage, sb.zero_stage));
  if (most == CommCategory::kPipelineP2P && so.pp != sb.pp) causes.push_back(change("PP", so.pp, sb.pp));
  if (most == CommCategory::kPipelineP2P && pipeline_sends_overlap(so) != pipeline_sends_overlap(sb))
    causes.push_back(pipeline_sends_overlap(sb) ? "P2P overlap on" : "P2P overlap off");
  if (most == CommCategory::kContextParallel && so.cp != sb.cp) causes.push_back(change("CP", so.cp, sb.cp));
  if (most == CommCategory::kContextParallel && so.cp_comm != sb.cp_comm) {
    causes.push_back(sb.cp_comm == CpComm::kRing        ? "ring attention (K/V hidden behind the attention)"
                     : sb.cp_comm == CpComm::kAllGather ? "all-gather attention (K/V gathered on the critical path)"
                                                        : "Ulysses all-to-alls (on the critical path)");
  } else if (most == CommCategory::kContextParallel && so.cp_comm == CpComm::kRing && so.cp_rotate != sb.cp_rotate) {
    causes.push_back(sb.cp_rotate == CpRotate::kPass ? "ring passes K/V beside every step"
                                                     : "K/V all-gathered beside the first step only");
  } else if (most == CommCategory::kContextParallel && so.cp_comm == CpComm::kRing && so.cp_overlap != sb.cp_overlap) {
    causes.push_back(sb.cp_overlap ? "ring exchanges beside the attention"
                                   : "ring exchanges waited where issued (traced by torch.compile)");
  }
  if (most == CommCategory::kExpertParallel && so.ep != sb.ep) causes.push_back(change("EP", so.ep, sb.ep));
  if (most == CommCategory::kExpertParallel && so.tp != sb.tp) causes.push_back(change("TP", so.tp, sb.tp));
  if (most == CommCategory::kExpertParallel && so.overlap_ep != sb.overlap_ep)
    causes.push_back(sb.overlap_ep ? "EP overlap on" : "EP overlap off");
  if (most == CommCategory::kExpertParallel && so.ep_dispatch != sb.ep_dispatch)
    causes.push_back(sb.ep_dispatch == EpDispatch::kDeepEP
                         ? "DeepEP dispatch (each token once per node)"
                         : sb.ep_dispatch == EpDispatch::kHybridEP
                               ? "HybridEP dispatch (each token once per node, routing maps all-gathered first)"
                               : "NCCL all-to-all dispatch (every routed copy)");
  // Delayed scaling's amax reductions: one per chunk pass and direction, so more chunks or
  // micro-batches, or a group spanning the stage rather than its TP ranks, add more.
  if (most == CommCategory::kFp8Amax && so.fp8_amax_reduction != sb.fp8_amax_reduction)
    causes.push_back(sb.fp8_amax_reduction == Fp8AmaxReduction::kStage    ? "amaxes reduced over the whole stage"
                     : sb.fp8_amax_reduction == Fp8AmaxReduction::kTensor ? "amaxes reduced over the TP ranks only"
                                                                          : "no amax reduction");
  if (most == CommCategory::kFp8Amax && so.interleave != sb.interleave)
    causes.push_back(change("interleave", so.interleave, sb.interleave));
  if (most == CommCategory::kPlacement && so.placement != sb.placement) {
    causes.push_back(so.placement_devices() != sb.placement_devices()
                         ? change("placement devices", so.placement_devices(), sb.placement_devices())
                         : "a different placement");
  }
  std::string cause;
  for (const std::string& c : causes) cause += (cause.empty() ? "" : ", ") + c;
  return format_text("Exposed %s communication %.1f -> %.1f ms per iteration%s%s%s.",
                     std::string(comm_category_name(most)).c_str(),
                     exposed(o.prediction, most) * kMsPerS, exposed(b.prediction, most) * kMsPerS,
                     cause.empty() ? "" : " (", cause.c_str(), cause.empty() ? "" : ")");
}

// Recomputation time on the busiest device, when it changed by a noticeable share.
std::string recompute_sentence(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const double rb = b.prediction.recompute_s, ro = o.prediction.recompute_s;
  if (std::abs(rb - ro) < kCommShareOfIteration * b.prediction.iteration_s) return {};
  const Strategy &sb = b.strategy, &so = o.strategy;
  std::string cause;
  if (recompute_label(so) != recompute_label(sb))
    cause = " (recompute " + recompute_label(so) + " -> " + recompute_label(sb) + ")";
  return format_text("Recomputation %.1f -> %.1f ms per iteration%s.", ro * kMsPerS, rb * kMsPerS,
                     cause.c_str());
}

// The optimizer step (on the device, or offloaded to the host), when it changed by a noticeable
// share of the iteration.
std::string optimizer_sentence(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const double tb = b.prediction.optimizer_s, to = o.prediction.optimizer_s;
  if (std::abs(tb - to) < kCommShareOfIteration * b.prediction.iteration_s) return {};
  const Strategy &sb = b.strategy, &so = o.strategy;
  std::string cause;
  if (so.offload != sb.offload) {
    cause = sb.offload == Offload::kOptimizer ? " (offloaded to the host: PCIe copies and the CPU's step)"
                                               : " (on the device, not offloaded)";
  } else if (so.zero_stage != sb.zero_stage) {
    cause = " (" + change("ZeRO stage", so.zero_stage, sb.zero_stage) + ")";
  }
  return format_text("Optimizer step %.1f -> %.1f ms per iteration%s.", to * kMsPerS, tb * kMsPerS,
                     cause.c_str());
}

const MemoryBreakdown& peak(const Prediction& p) {
  SS_ASSERT(p.peak_rank >= 0 && size_t(p.peak_rank) < p.rank_memory.size(),
            "a prediction's peak rank indexes its memory per rank");
  return p.rank_memory[p.peak_rank];
}

// The memory savers that differ and the GiB they account for at the peak ranks.
std::string memory_saver(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const MemoryBreakdown &mb = peak(b.prediction), &mo = peak(o.prediction);
  const double activations = (mo.activations_B + mo.transient_B) - (mb.activations_B + mb.transient_B);
  const double state = (mo.weights_B + mo.gradients_B + mo.optimizer_B) -
                       (mb.weights_B + mb.gradients_B + mb.optimizer_B);
  const Strategy &sb = b.strategy, &so = o.strategy;
  std::vector<std::string> savers;
  double saved = 0;
  if (std::abs(activations) >= std::abs(state)) {
    saved = activations;
    if (recompute_label(so) != recompute_label(sb)) {
      savers.push_back(sb.recompute == Recompute::kNone ? "no recomputation"
                                                         : recompute_label(sb) + " recomputation");
    }
    if (so.sequence_parallel != sb.sequence_parallel && so.tp > 1 && sb.tp > 1)
      savers.push_back(sb.sequence_parallel ? "sequence parallelism" : "no sequence parallelism");
    if (so.micro_batch != sb.micro_batch)
      savers.push_back(change("micro-batch", so.micro_batch, sb.micro_batch));
  } else {
    saved = state;
    if (so.zero_stage != sb.zero_stage) savers.push_back(format_text("ZeRO-%d", sb.zero_stage));
    if (so.offload != sb.offload) {
      savers.push_back(sb.offload == Offload::kOptimizer ? "optimizer offload to the host"
                                                         : "optimizer states kept on the device");
    }
  }
  // A different sharding changes every term, so it is named first when it differs.
  std::string degrees;
  if (so.tp != sb.tp) degrees = change("TP", so.tp, sb.tp);
  if (so.pp != sb.pp) degrees += (degrees.empty() ? "" : ", ") + change("PP", so.pp, sb.pp);
  if (!degrees.empty()) savers.insert(savers.begin(), degrees);
  const bool plural = savers.size() != 1;
  if (savers.empty()) savers.push_back("the other differences");
  std::string who = savers[0];
  if (savers.size() > 1) who += " and " + savers[1];
  const char* verb = saved >= 0 ? (plural ? "save" : "saves") : (plural ? "cost" : "costs");
  return format_text("%s %s %.1f GiB per device", who.c_str(), verb, std::abs(saved) / kGiB);
}

std::string memory_sentence(const EvaluatedStrategy& b, const EvaluatedStrategy& o) {
  const Prediction &pb = b.prediction, &po = o.prediction;
  if (std::abs(po.peak_memory_B - pb.peak_memory_B) < kMemoryStep_B ||
      pb.rank_memory.empty() || po.rank_memory.empty()) {
    return {};
  }
  const std::string saver = memory_saver(b, o);
  const std::string peaks = format_text("peak %.1f vs %.1f GiB of %.1f GiB", pb.peak_memory_B / kGiB,
                                        po.peak_memory_B / kGiB, pb.capacity_B / kGiB);
  if (pb.fits && !po.fits) return "It fits because " + saver + " (" + peaks + ").";
  std::string s = saver + " (" + peaks + ").";
  s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

size_t best_strategy(const std::vector<EvaluatedStrategy>& s) {
  SS_ASSERT(!s.empty(), "best_strategy needs at least one strategy");
  size_t best = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    if (ranks_before(s[i], s[best])) best = i;
  }
  return best;
}

namespace {

// Strategies in ranking order (the winner first; ties keep their order).
std::vector<size_t> ranking(const std::vector<EvaluatedStrategy>& s) {
  std::vector<size_t> order(s.size());
  for (size_t i = 0; i < s.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranks_before(s[a], s[b]); });
  return order;
}

// The headline and up to `most - 1` reasons why b beats o.
std::vector<std::string> pair_sentences(const EvaluatedStrategy& b, const EvaluatedStrategy& o,
                                        size_t most) {
  std::vector<std::string> out{headline(b, o)};
  const bool fit_decides = b.prediction.fits && !o.prediction.fits;
  std::vector<std::string> reasons;
  if (fit_decides) reasons.push_back(memory_sentence(b, o));
  reasons.push_back(bubble_sentence(b, o));
  reasons.push_back(recompute_sentence(b, o));
  reasons.push_back(comm_sentence(b, o));
  reasons.push_back(optimizer_sentence(b, o));
  if (!fit_decides) reasons.push_back(memory_sentence(b, o));
  for (std::string& r : reasons) {
    if (!r.empty() && out.size() < most) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<std::string> why_best(const std::vector<EvaluatedStrategy>& s) {
  const size_t bi = best_strategy(s);
  if (s.size() < 2) return {s[bi].label + " is the only strategy: nothing to compare."};
  return pair_sentences(s[bi], s[ranking(s)[1]], 4);
}

std::vector<WhyVersus> why_versus_each(const std::vector<EvaluatedStrategy>& s) {
  const size_t bi = best_strategy(s);
  if (s.size() < 2) return {{s[bi].label, why_best(s)}};
  const std::vector<size_t> order = ranking(s);
  std::vector<WhyVersus> out;
  for (size_t k = 1; k < order.size(); ++k) {
    out.push_back({s[order[k]].label, pair_sentences(s[bi], s[order[k]], k == 1 ? 4 : 3)});
  }
  return out;
}

}  // namespace stratasim
