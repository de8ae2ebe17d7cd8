// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, the V-shape
// zero-bubble schedule; sail-sg/zero-bubble-pipeline-parallelism): the model in 2p chunks,
// rank r holding chunk r and chunk 2p - 1 - r, so a micro-batch runs down the ranks and back
// up (StageMap::v_shape): the first and the last stage share rank 0, and the turn at rank
// p - 1 needs no message. The backward is split into B and W as in ZB-H1/H2.
//
// The order is built the way the reference builds it, by simulating the ranks with the
// stages' F, B and W durations and the transfers between them (unit costs and free transfers
// when none are given) and choosing greedily, here with three rules:
//   - B first when its gradient has arrived (it is on the critical path);
//   - else F, within a memory cap of 2p chunk activations per
//     rank (a forward's activations live until its W): 1F1B's peak, which ZB-V keeps; a
//     chunk-0 forward only while rank r has fewer than 2(p - r) - 1 more chunk-0 than chunk-1
//     forwards (the warm-up that fills the time until its first chunk-1 input arrives);
//   - else the oldest pending W, which fills what would be a bubble; at the cap, W before F.
// Ranks are simulated in time order, so every input that has arrived is known when a rank
// chooses. Like the reference, which tries its fill options and keeps the best, the order is
// built four ways (which chunk's B and which chunk's F come first) and the one with the
// shortest simulated makespan is kept (ties: the first tried); beyond 200k ops only the first.
// An order built for unit costs stalls on real ones (W = F / 2 alone leaves a 17% bubble at
// p = 4, m = 64), which is why the engines build it for the plan's durations.
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/error.h"
#include "strategies/pipeline/schedule_timing.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Preference {
  int b_first = 1, f_first = 1;  // the chunk tried first for B and for F
};

class ZbvBuilder {
 public:
  ZbvBuilder(int p, int m, Preference pref, const StageDurations* d)
      : p_(p), m_(m), pref_(pref), ranks_(p) {
    for (auto* t : {&f_done_, &b_done_}) t->assign(2 * p * m, kNever);
    const size_t n = 2 * static_cast<size_t>(p);
    const bool given = d != nullptr && d->forward_s.size() == n && d->backward_s.size() == n &&
                       d->weight_s.size() == n;
    dur_[0] = given ? d->forward_s : std::vector<double>(n, 1.0);
    dur_[1] = given ? d->backward_s : std::vector<double>(n, 1.0);
    dur_[2] = given ? d->weight_s : std::vector<double>(n, 1.0);
    lat_.assign(n, 0.0);
    if (given) {
      for (size_t i = 0; i < d->p2p_s.size() && i < n; ++i) lat_[i] = d->p2p_s[i];
    }
    // The shortest op: no op another rank has yet to choose ends sooner than its clock + this.
    for (const auto& v : dur_) {
      for (double x : v) {
        if (x > 0) shortest_ = std::min(shortest_, x);
      }
    }
    if (!(shortest_ < kNever)) shortest_ = 1.0;
  }

  PipelineSchedule build() {
    PipelineSchedule s;
    s.kind = ScheduleKind::kZeroBubbleV;
    s.stages = p_;
    s.micro_batches = m_;
    s.chunks = 2;
    s.split_backward = true;
    s.v_shape = true;
    s.per_rank.resize(p_);
    for (int r = 0; r < p_; ++r) {
      s.per_rank[r].reserve(6 * static_cast<size_t>(m_));
      clock_.insert({0.0, r});
    }
    while (!clock_.empty()) {
      const int r = clock_.begin()->second;  // the earliest clock (ties: the lowest rank)
      clock_.erase(clock_.begin());
      step(r, s.per_rank[r]);
      if (!ranks_[r].finished) clock_.insert({ranks_[r].t, r});
    }
    return s;
  }

  // Unit-cost makespan of the order built (after build()).
  double makespan() const {
    double t = 0;
    for (const Rank& k : ranks_) t = std::max(t, k.t);
    return t;
  }

 private:
  struct Rank {
    double t = 0;
    int f[2] = {0, 0}, b[2] = {0, 0};
    int live = 0;  // forwards whose W has not run
    std::deque<PipeOp> pending_w;
    bool finished = false;
  };

  int vs(int r, int chunk) const { return chunk == 0 ? r : 2 * p_ - 1 - r; }
  double& f_done(int v, int mb) { return f_done_[v * m_ + mb]; }
  double& b_done(int v, int mb) { return b_done_[v * m_ + mb]; }

  // When the input of the rank's next F / B of `chunk` is there (kNever: not yet known).
  double forward_ready(int r, int chunk) {
    const int mb = ranks_[r].f[chunk], v = vs(r, chunk);
    return v == 0 ? 0.0 : f_done(v - 1, mb) + lat_[v - 1];  // boundary v-1 -> v
  }
  double backward_ready(int r, int chunk) {
    const Rank& k = ranks_[r];
    const int mb = k.b[chunk], v = vs(r, chunk);
    if (mb >= k.f[chunk]) return kNever;  // its own forward first
    return v == 2 * p_ - 1 ? f_done(v, mb) : b_done(v + 1, mb) + lat_[v];  // boundary v -> v+1
  }
  bool forward_allowed(int r, int chunk) const {
    const Rank& k = ranks_[r];
    if (k.f[chunk] >= m_ || k.live >= 2 * p_) return false;
    return chunk == 1 || k.f[0] - k.f[1] < 2 * (p_ - r) - 1;
  }


  void place(int r, PipeOp op, std::vector<PipeOp>& out) {
    Rank& k = ranks_[r];
    const int v = vs(r, op.chunk);
    k.t += dur_[static_cast<int>(op.kind)][v];
    out.push_back(op);
    if (op.kind == PipeOpKind::kForward) {
      f_done(v, op.micro_batch) = k.t;
      ++k.f[op.chunk];
      ++k.live;
    } else if (op.kind == PipeOpKind::kBackward) {
      b_done(v, op.micro_batch) = k.t;
      ++k.b[op.chunk];
      k.pending_w.push_back({PipeOpKind::kWeight, op.micro_batch, op.chunk});
    } else {
      --k.live;
    }
    if (out.size() == 6 * static_cast<size_t>(m_)) k.finished = true;
  }

  // Runs one op on rank r at its clock, or moves the clock to the next arrival. Returns
  // whether an op was placed.
  bool step(int r, std::vector<PipeOp>& out) {
    Rank& k = ranks_[r];
    const int b_order[2] = {pref_.b_first, 1 - pref_.b_first};
    const int f_order[2] = {pref_.f_first, 1 - pref_.f_first};
    for (int chunk : b_order) {
      if (k.b[chunk] < m_ && backward_ready(r, chunk) <= k.t) {
        place(r, {PipeOpKind::kBackward, k.b[chunk], chunk}, out);
        return true;
      }
    }
    for (int chunk : f_order) {
      if (forward_allowed(r, chunk) && forward_ready(r, chunk) <= k.t) {
        place(r, {PipeOpKind::kForward, k.f[chunk], chunk}, out);
        return true;
      }
    }
    if (!k.pending_w.empty()) {
      const PipeOp w = k.pending_w.front();
      k.pending_w.pop_front();
      place(r, w, out);
      return true;
    }
    // Nothing runs now: wait for the next input already produced or, sooner, the earliest an
    // op another rank has yet to choose could end (its clock + the shortest op).
    double next = kNever;
    for (int chunk : {0, 1}) {
      if (k.b[chunk] < m_) next = std::min(next, backward_ready(r, chunk));
      if (forward_allowed(r, chunk)) next = std::min(next, forward_ready(r, chunk));
    }
    // The other unfinished ranks are in clock_ (this one is out while it steps).
    if (!clock_.empty()) next = std::min(next, std::max(clock_.begin()->first, k.t) + shortest_);
    SS_ASSERT(next > k.t && next < kNever, "ZB-V construction deadlocked");
    k.t = next;
    return false;
  }

  int p_, m_;
  Preference pref_;
  std::array<std::vector<double>, 3> dur_;  // F, B, W per virtual stage
  std::vector<double> lat_;                 // per boundary i -> i + 1
  double shortest_ = kNever;
  std::vector<Rank> ranks_;
  std::set<std::pair<double, int>> clock_;  // unfinished ranks by (clock, rank)
  std::vector<double> f_done_, b_done_;  // per virtual stage and micro-batch: end time
};

}  // namespace

PipelineSchedule schedule_zb_v(int p, int m, const StageDurations* d) {
  SS_ASSERT(p >= 1 && m >= 1, "ZB-V needs at least one stage and one micro-batch");
  PipelineSchedule best;
  double best_makespan = 0;
  // Large pipelines (over 200k ops) keep the first order: building is O(ops log p) each.
  const bool all = 6.0 * p * m <= 2e5;
  const Preference prefs[] = {{1, 1}, {0, 1}, {1, 0}, {0, 0}};
  for (const Preference& pref : std::span(prefs, all ? 4 : 1)) {
    ZbvBuilder builder(p, m, pref, d);
    PipelineSchedule s = builder.build();
    if (best.per_rank.empty() || builder.makespan() < best_makespan) {
      best = std::move(s);
      best_makespan = builder.makespan();
    }
  }
  return best;
}

}  // namespace stratasim
