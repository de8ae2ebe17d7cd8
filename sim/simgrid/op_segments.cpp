#include "sim/simgrid/op_segments.h"

#include <map>

#include <algorithm>
#include <cmath>

#include "sim/cost/block_cost.h"
#include "sim/cost/block_cost_memo.h"
#include "sim/cost/group_views.h"
#include "sim/cost/collective_cost.h"

namespace stratasim::simgrid_detail {
namespace {

using Segments = std::vector<Segment>;
enum class Phases { kAll, kRecompute, kBackward };

// Bytes through one device's port per direction for a collective over n ranks of S bytes:
// ring all-reduce 2(n-1)/n S, ring all-gather / reduce-scatter (n-1)/n S (Patarasuk & Yuan
// 2009), double binary tree all-reduce 2 S (collective_cost.h). Inside one node the
// hierarchical algorithm is the ring.
double wire_bytes(const Kernel& k, CollectiveAlgorithm a, int n) {
  if (k.comm != CommKind::kAllReduce) return double(n - 1) / n * k.comm_bytes;
  if (a == CollectiveAlgorithm::kTree) return 2.0 * k.comm_bytes;
  return 2.0 * (n - 1) / n * k.comm_bytes;
}

void finish(TpExchange& x, LinkLevel link) {
  x.extra_latency_s = std::max(0.0, x.total_s - x.wire_B / link.bandwidth_Bps - link.latency_s);
}

// Moves negative compute (hidden time larger than the compute before it) onto neighbours,
// keeping the sum.
void settle(Segments& s) {
  for (size_t j = 0; j + 1 < s.size(); ++j) {
    if (s[j].compute_s < 0) s[j + 1].compute_s += s[j].compute_s, s[j].compute_s = 0;
  }
  for (size_t j = s.size(); j-- > 1;) {
    if (s[j].compute_s < 0) s[j - 1].compute_s += s[j].compute_s, s[j].compute_s = 0;
  }
  if (!s.empty()) s[0].compute_s = std::max(0.0, s[0].compute_s);
}

// An all-to-all of S bytes per rank over n = ep ranks, k of them in a node (collective_cost.h
// all_to_all_s), as each host sends it: tp S / n to every other host of its group (one device's
// data for that host's tp devices) and (tp - 1) S / n to its own tp peers, each scaled by its
// link's efficiency at S. Every message leaves through the device's port; the remote ones also
// through the node's NIC, where the host's share is one device's (inter_node_level). Uncontended
// that takes the larger of the two; the rest of the closed form is a delay.
TpExchange all_to_all_exchange(const Kernel& k, double total_s, const Plan& plan) {
  const HardwareModel& hw = plan.hardware;
  const int n = plan.ep_group.size;
  const LinkLevel intra = intra_node_level(hw), inter = inter_node_level(hw);
  const double S = k.comm_bytes;
  const double f_intra = intra.bandwidth_at(S) / intra.bandwidth_Bps;
  const double f_inter = inter.bandwidth_at(S) / inter.bandwidth_Bps;
  TpExchange x;
  x.all_to_all = true;
  x.total_s = total_s;
  const bool spans_nodes = plan.ep_group.nodes() > 1;
  x.wire_B = plan.tp * S / n;
  x.local_B = (plan.tp - 1) * S / n;
  x.intra_factor = f_intra, x.inter_factor = f_inter;
  // DeepEP: the same messages, each carrying the deduplicated share of the NCCL bytes.
  const ExchangeBytes nccl = uniform_exchange_bytes(S, plan.ep_group);
  const ExchangeBytes sent = expert_exchange_bytes(S, plan);
  if (nccl.local > 0) x.intra_share = sent.local / nccl.local;
  if (nccl.remote > 0) x.inter_share = sent.remote / nccl.remote;
  const double local = sent.local / f_intra, remote = sent.remote / f_inter;
  const double nominal = std::max((local + remote) / intra.bandwidth_Bps,
                                  spans_nodes ? remote / inter.bandwidth_Bps : 0.0);
  x.extra_latency_s = total_s - nominal - (spans_nodes ? inter : intra).latency_s;
  if (x.extra_latency_s < 1e-9) x.extra_latency_s = 0;  // rounding (below SimGrid's clock)
  return x;
}

Segments kernel_segments(const std::vector<Kernel>& ks, const Plan& plan, Phases phases,
                         bool messages, bool ep_messages = false) {
  const std::vector<KernelTiming> t = kernel_timings(ks, plan);
  const LinkLevel link = intra_node_level(plan.hardware);
  Segments out(1);
  for (size_t i = 0; i < ks.size(); ++i) {
    const bool recompute = ks[i].phase == Phase::kRecompute;
    if ((phases == Phases::kRecompute && !recompute) || (phases == Phases::kBackward && recompute))
      continue;
    if (ep_messages && ks[i].cls == OpClass::kCollective && ks[i].group == GroupKind::kExpert &&
        ks[i].comm == CommKind::kAllToAll && t[i].total_s > 0) {
      out.back().comm = all_to_all_exchange(ks[i], t[i].total_s, plan);
      out.back().compute_s += t[i].exposed_s - t[i].total_s;  // none without overlap
      out.emplace_back();
      continue;
    }
    // Only tensor-parallel collectives become messages (inside one node's switch); the others
    // (ring attention's exchange) stay in the op's duration, as the analytical engine costs them.
    if (ks[i].cls != OpClass::kCollective || !messages || t[i].total_s <= 0 ||
        ks[i].group != GroupKind::kTensor) {
      out.back().compute_s += t[i].exposed_s;
      continue;
    }
    TpExchange& x = out.back().comm;
    x.wire_B = wire_bytes(ks[i], t[i].algorithm, plan.tp_group.size);
    x.total_s = t[i].total_s;
    x.hidden_s = t[i].total_s - t[i].exposed_s;
    finish(x, link);
    out.back().compute_s -= x.hidden_s;  // that compute runs during the messages
    out.emplace_back();
  }
  settle(out);
  return out;
}

// `times` copies of `s` in a row, adjacent compute merged.
Segments repeated(const Segments& s, int times) {
  Segments out;
  for (int r = 0; r < times; ++r) {
    for (const Segment& seg : s) {
      if (!out.empty() && out.back().comm.empty()) {
        out.back().compute_s += seg.compute_s;
        out.back().comm = seg.comm;
      } else {
        out.push_back(seg);
      }
    }
  }
  return out;
}

// Uncontended: compute, then the exchange, which takes total_s while its hidden part runs.
double nominal(const Segments& s) {
  double t = 0;
  for (const Segment& seg : s) t += seg.compute_s + seg.comm.total_s;
  return t;
}

void accumulate(TpExchange& into, const Segments& s, double times) {
  for (const Segment& seg : s) {
    into.wire_B += times * seg.comm.wire_B;
    into.total_s += times * seg.comm.total_s;
    into.hidden_s += times * seg.comm.hidden_s;
  }
}

struct BlockSegments {
  Segments layer_f, layer_r, layer_b, emb_f, emb_b, head_f, head_b;
  Segments dense_f, dense_r, dense_b;  // an MoE model's first (dense) layers
  Segments rec_f, rec_r, rec_b;        // the recomputed layers (Strategy::recompute_layers)
};

BlockSegments block_segments(const Plan& plan, bool messages, bool ep_messages) {
  BlockSegments b;
  const Block& layer = *plan.layer;
  b.layer_f = kernel_segments(layer.forward, plan, Phases::kAll, messages, ep_messages);
  b.layer_r = kernel_segments(layer.backward, plan, Phases::kRecompute, messages, ep_messages);
  b.layer_b = kernel_segments(layer.backward, plan, Phases::kBackward, messages, ep_messages);
  if (plan.dense_layer) {
    b.dense_f = kernel_segments(plan.dense_layer->forward, plan, Phases::kAll, messages);
    b.dense_r = kernel_segments(plan.dense_layer->backward, plan, Phases::kRecompute, messages);
    b.dense_b = kernel_segments(plan.dense_layer->backward, plan, Phases::kBackward, messages);
  }
  if (plan.recomputed_layer) {
    const Block& rec = *plan.recomputed_layer;
    b.rec_f = kernel_segments(rec.forward, plan, Phases::kAll, messages, ep_messages);
    b.rec_r = kernel_segments(rec.backward, plan, Phases::kRecompute, messages, ep_messages);
    b.rec_b = kernel_segments(rec.backward, plan, Phases::kBackward, messages, ep_messages);
  }
  if (plan.model.family != ModelFamily::kOpGraph) {
    b.emb_f = kernel_segments(plan.embedding->forward, plan, Phases::kAll, messages);
    b.emb_b = kernel_segments(plan.embedding->backward, plan, Phases::kAll, messages);
    b.head_f = kernel_segments(plan.head->forward, plan, Phases::kAll, messages);
    b.head_b = kernel_segments(plan.head->backward, plan, Phases::kAll, messages);
  }
  return b;
}

// One piece of `duration_s` (exposed collective time included), its collectives (`parts`, each
// `times` over) aggregated at the end.
Piece aggregated(EventKind kind, double duration_s,
                 const std::vector<std::pair<const Segments*, double>>& parts, LinkLevel link) {
  Segment seg;
  for (const auto& [s, times] : parts) accumulate(seg.comm, *s, times);
  finish(seg.comm, link);
  seg.compute_s = std::max(0.0, duration_s - seg.comm.total_s);
  return Piece{kind, -1, {seg}};
}

OpPieces stage_pieces(const Plan& plan, const VirtualStage& st, const BlockSegments& b, double fwd,
                      double bwd, double rec) {
  const LinkLevel link = intra_node_level(plan.hardware);
  const double layers = double(st.layers - st.dense_layers - st.recomputed_layers) * plan.block_repeat;
  const double dense = st.dense_layers, recomputed = st.recomputed_layers;
  const double emb = st.has_embedding ? 1 : 0, head = st.has_head ? 1 : 0;
  OpPieces op;
  op.forward.push_back(aggregated(EventKind::kForward, fwd,
                                  {{&b.layer_f, layers}, {&b.dense_f, dense}, {&b.rec_f, recomputed},
                                   {&b.emb_f, emb}, {&b.head_f, head}},
                                  link));
  if (rec > 0) {
    op.backward.push_back(aggregated(EventKind::kRecompute, rec,
                                     {{&b.layer_r, layers}, {&b.dense_r, dense}, {&b.rec_r, recomputed}},
                                     link));
  }
  op.backward.push_back(aggregated(EventKind::kBackward, bwd - rec,
                                   {{&b.layer_b, layers}, {&b.dense_b, dense}, {&b.rec_b, recomputed},
                                    {&b.emb_b, emb}, {&b.head_b, head}},
                                   link));
  return op;
}

// Takes `deficit_s` of compute off the pieces, last first (the op's duration left less than
// its layers: ZeRO's hidden compute runs beside its messages, outside the pieces).
void trim(std::vector<Piece>& pieces, double deficit_s) {
  for (auto p = pieces.rbegin(); p != pieces.rend() && deficit_s > 0; ++p) {
    for (auto seg = p->segments.rbegin(); seg != p->segments.rend() && deficit_s > 0; ++seg) {
      const double take = std::min(seg->compute_s, deficit_s);
      seg->compute_s -= take;
      deficit_s -= take;
    }
  }
}

OpPieces layer_pieces(const Plan& plan, const VirtualStage& st, const BlockSegments& b, double fwd,
                      double bwd) {
  const Segments lf = repeated(b.layer_f, plan.block_repeat);
  const Segments lr = repeated(b.layer_r, plan.block_repeat);
  const Segments lb = repeated(b.layer_b, plan.block_repeat);
  // The stage's first layers are the dense ones, then the recomputed ones, then the rest.
  auto dense = [&](int l) { return l < st.dense_layers; };
  auto recomputed = [&](int l) { return !dense(l) && l < st.dense_layers + st.recomputed_layers; };
  auto forward = [&](int l) -> const Segments& { return dense(l) ? b.dense_f : recomputed(l) ? b.rec_f : lf; };
  auto recompute = [&](int l) -> const Segments& { return dense(l) ? b.dense_r : recomputed(l) ? b.rec_r : lr; };
  auto backward = [&](int l) -> const Segments& { return dense(l) ? b.dense_b : recomputed(l) ? b.rec_b : lb; };
  OpPieces op;
  // Forward: embedding, layers, then head and whatever else the op holds (exposed ZeRO).
  if (st.has_embedding) op.forward.push_back({EventKind::kForward, -1, b.emb_f});
  for (int l = 0; l < st.layers; ++l) op.forward.push_back({EventKind::kForward, st.first_layer + l, forward(l)});
  Piece last{EventKind::kForward, -1, st.has_head ? b.head_f : Segments{}};
  double used = 0;
  for (const Piece& p : op.forward) used += nominal(p.segments);
  const double rest_f = fwd - used - nominal(last.segments);
  last.segments.push_back({std::max(0.0, rest_f), {}});
  op.forward.push_back(last);
  trim(op.forward, -rest_f);
  // Backward in reverse: head and the rest, layers (recomputation first), embedding.
  Piece first{EventKind::kBackward, -1, st.has_head ? b.head_b : Segments{}};
  const double rest = bwd - nominal(first.segments) -
                      (st.layers - st.dense_layers - st.recomputed_layers) * (nominal(lr) + nominal(lb)) -
                      st.dense_layers * (nominal(b.dense_r) + nominal(b.dense_b)) -
                      st.recomputed_layers * (nominal(b.rec_r) + nominal(b.rec_b)) -
                      (st.has_embedding ? nominal(b.emb_b) : 0);
  first.segments.insert(first.segments.begin(), Segment{std::max(0.0, rest), {}});
  op.backward.push_back(first);
  for (int l = st.layers - 1; l >= 0; --l) {
    op.backward.push_back({EventKind::kRecompute, st.first_layer + l, recompute(l)});
    op.backward.push_back({EventKind::kBackward, st.first_layer + l, backward(l)});
  }
  if (st.has_embedding) op.backward.push_back({EventKind::kBackward, -1, b.emb_b});
  trim(op.backward, -rest);
  return op;
}

}  // namespace

bool ep_as_messages(const Plan& plan, const SimgridOptions& options) {
  return options.granularity == SimGranularity::kLayer && plan.ep > plan.tp && plan.tp > 0 &&
         plan.ep % plan.tp == 0 && !plan.strategy.overlap_ep;
}

bool tp_as_messages(const Plan& plan, const SimgridOptions& options) {
  return plan.tp > 1 && plan.tp_group.nodes() <= 1 &&
         (options.granularity == SimGranularity::kLayer || options.tp_messages_at_stage);
}

double nominal_s(const Piece& piece) { return nominal(piece.segments); }

std::vector<OpPieces> op_pieces(const Plan& plan, const std::vector<double>& forward_s,
                                const std::vector<double>& backward_s,
                                const std::vector<double>& recompute_s,
                                const std::vector<double>& weight_s,
                                const SimgridOptions& options) {
  // A mixed cluster's stages are cut on their own group's devices (group_views.h).
  const GroupViews views(plan);
  const bool messages = tp_as_messages(plan, options), ep_messages = ep_as_messages(plan, options);
  std::map<const Plan*, BlockSegments> segments;
  const bool layer_granularity = options.granularity == SimGranularity::kLayer;
  std::vector<OpPieces> out;
  for (size_t vs = 0; vs < plan.stages.size(); ++vs) {
    const VirtualStage& st = plan.stages[vs];
    const Plan& on = views.for_rank(st.rank);
    auto it = segments.find(&on);
    if (it == segments.end()) it = segments.emplace(&on, block_segments(on, messages, ep_messages)).first;
    const BlockSegments& b = it->second;
    out.push_back(layer_granularity
                      ? layer_pieces(on, st, b, forward_s[vs], backward_s[vs])
                      : stage_pieces(on, st, b, forward_s[vs], backward_s[vs], recompute_s[vs]));
    if (vs < weight_s.size() && weight_s[vs] > 0) {
      out.back().weight.push_back({EventKind::kWeightGrad, -1, {Segment{weight_s[vs], {}}}});
    }
    for (auto* ops : {&out.back().forward, &out.back().backward}) {
      std::erase_if(*ops, [](const Piece& p) { return nominal_s(p) <= 0; });
    }
  }
  return out;
}

}  // namespace stratasim::simgrid_detail
