// DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, Sec. 3.2.1): micro-batches enter
// the pipeline from both ends. Rank r holds model stage r (chunk 0, the forward direction, fed
// at rank 0) and stage p - 1 - r (chunk 1, the reverse direction, fed at rank p - 1); each
// direction carries m micro-batches. The op order per rank follows the eight steps of the
// reference implementation (deepseek-ai/DualPipe, dualpipe/dualpipe.py, DualPipe.step):
//   1. nF0      2 (p/2 - h - 1) forwards of the rank's own direction
//   2. nF0F1    h + 1 pairs: a forward of each direction
//   3. nB1W1F1  p/2 - h - 1 times: B of the other direction (W deferred), one deferred W, F
//   4. main     m - p + h + 1 times: F and full backward of the other direction, then the reverse
//   5. nB1F1B0  p/2 - h - 1 times: a full backward, then F and full backward
//   6. nB1B0    h + 1 pairs of full backwards, W deferred from the middle pair on
//   7. nWB0     p/2 - h - 1 times: one deferred W, then B (W deferred)
//   8. nW       h + 1 deferred Ws
// where h = min(r, p - 1 - r) and the rank's "own" direction is the one entering on its side of
// the pipeline (phase 0 of the reference is chunk 0 on the first p/2 ranks, chunk 1 on the
// others). Deferred weight gradients (zero bubble) run in the order their B ran. The reference
// overlaps a forward with the backward beside it (F&B, computation hiding the communication);
// here they run one after the other on the rank, so F&B takes F + B, and each starts when its
// own input is there (the reference starts a pair when both are). The reference also sends
// some warm-up activations one op late (off the middle ranks). Modelling either changed no
// makespan on p = 2, 4 and 8 with uniform stages, B = 2F, or one stage's forward 5x slower, so
// neither is modelled.
#include <deque>

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim {
namespace {

class DualPipeRank {
 public:
  DualPipeRank(int rank, int p, std::vector<PipeOp>& out)
      : second_half_(rank >= p / 2), out_(out) {}

  // phase 0: the direction entering on this rank's side; 1: the other.
  void forward(int phase) {
    const int c = chunk(phase);
    out_.push_back({PipeOpKind::kForward, next_f_[c]++, c});
  }
  // A backward; its W runs at once (full backward) or later, in FIFO order (zero bubble).
  void backward(int phase, bool defer_weight) {
    const int c = chunk(phase);
    const PipeOp b{PipeOpKind::kBackward, next_b_[c]++, c};
    out_.push_back(b);
    const PipeOp w{PipeOpKind::kWeight, b.micro_batch, c};
    if (defer_weight) {
      deferred_.push_back(w);
    } else {
      out_.push_back(w);
    }
  }
  // The reference's overlapped F&B: a forward of `phase_f`, the full backward of `phase_b`.
  void forward_backward(int phase_f, int phase_b) {
    forward(phase_f);
    backward(phase_b, false);
  }
  void weight() {
    SS_ASSERT(!deferred_.empty(), "DualPipe runs a W with none deferred");
    out_.push_back(deferred_.front());
    deferred_.pop_front();
  }
  bool done() const { return deferred_.empty(); }

 private:
  int chunk(int phase) const { return phase ^ (second_half_ ? 1 : 0); }

  bool second_half_;
  std::vector<PipeOp>& out_;
  int next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
  std::deque<PipeOp> deferred_;
};

void dualpipe_rank(int r, int p, int m, std::vector<PipeOp>& out) {
  const int half = p / 2, h = std::min(r, p - 1 - r);
  DualPipeRank k(r, p, out);
  for (int i = 0; i < 2 * (half - h - 1); ++i) k.forward(0);        // 1
  for (int i = 0; i < h + 1; ++i) k.forward(0), k.forward(1);         // 2
  const bool middle = h == half - 1;
  for (int i = 0; i < half - h - 1; ++i) {                            // 3
    k.backward(1, true);
    k.weight();
    k.forward(1);
  }
  for (int i = 0; i < m - p + h + 1; ++i) {                           // 4
    // The middle ranks run their first pair unoverlapped, "to further reduce bubble size".
    if (i == 0 && middle) {
      k.forward(0), k.backward(1, false);
    } else {
      k.forward_backward(0, 1);
    }
    k.forward_backward(1, 0);
  }
  for (int i = 0; i < half - h - 1; ++i) {                            // 5
    k.backward(1, false);
    k.forward_backward(1, 0);
  }
  const int pairs = h + 1;                                            // 6
  bool defer = false;
  for (int i = 0; i < pairs; ++i) {
    if (i == pairs / 2 && h % 2 == 1) defer = true;
    k.backward(1, defer);
    if (i == pairs / 2 && h % 2 == 0) defer = true;
    k.backward(0, defer);
  }
  for (int i = 0; i < half - h - 1; ++i) k.weight(), k.backward(0, true);  // 7
  for (int i = 0; i < h + 1; ++i) k.weight();                              // 8
  SS_ASSERT(k.done(), "DualPipe leaves a W unrun");
}

}  // namespace

PipelineSchedule schedule_dualpipe(int p, int m) {
  SS_ASSERT(p >= 2 && p % 2 == 0, "DualPipe needs an even number of ranks");
  SS_ASSERT(m >= p, "DualPipe needs at least p micro-batches per direction");
  PipelineSchedule s{ScheduleKind::kDualPipe, p, m, 2};
  s.split_backward = true;
  s.bidirectional = true;
  s.per_rank.resize(p);
  for (int r = 0; r < p; ++r) dualpipe_rank(r, p, m, s.per_rank[r]);
  return s;
}

}  // namespace stratasim
