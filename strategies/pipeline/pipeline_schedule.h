// Pipeline schedules as data: for each pipeline rank, the order in which it runs the forward
// and backward passes of each micro-batch (and model chunk, for interleaving). One schedule
// per file (schedule_gpipe.cpp, schedule_1f1b.cpp, ...); none depends on SimGrid.
//
// Conventions: p ranks, m micro-batches, v chunks per rank. Chunk c of rank r is virtual
// stage c * p + r; activations flow from virtual stage i to i + 1 in the forward pass and
// gradients from i + 1 to i in the backward pass.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace stratasim {

enum class ScheduleKind {
  kGPipe,
  k1F1B,
  kInterleaved1F1B,
  kPipeDreamAsync,
  kZeroBubbleH1,
  kZeroBubbleH2,
  kDualPipe,
  kZeroBubbleV
};
std::string_view schedule_name(ScheduleKind k);
// Whether the schedule runs the weight gradients (W) as ops of their own (zero-bubble).
inline bool splits_backward(ScheduleKind k) {
  return k == ScheduleKind::kZeroBubbleH1 || k == ScheduleKind::kZeroBubbleH2 ||
         k == ScheduleKind::kDualPipe || k == ScheduleKind::kZeroBubbleV;
}
// Whether the optimizer step is validated after the update (Qi et al. 2024, Sec. 4): no
// synchronization of all pipeline ranks between iterations, so each rank starts its next
// iteration as soon as its own step is done and an iteration costs each rank's span (first
// op to optimizer step), not the flushed makespan.
inline bool post_validated(ScheduleKind k) { return k == ScheduleKind::kZeroBubbleH2; }

// kBackward is the whole backward pass, or only its input-gradient part (B) in a schedule that
// splits the backward (PipelineSchedule::split_backward), which then runs kWeight (W, the
// weight gradients) as an op of its own.
enum class PipeOpKind : uint8_t { kForward, kBackward, kWeight };

struct PipeOp {
  PipeOpKind kind;
  int32_t micro_batch;
  int32_t chunk;
  bool operator==(const PipeOp&) const = default;
};

// Which rank runs each virtual stage and where a micro-batch goes next. Plain schedules: chunk
// c of rank r is virtual stage c * p + r, one chain through all p * v of them. Bidirectional
// (DualPipe): two pipelines of p stages over the same ranks in opposite directions; chunk 0 of
// rank r is stage r of the one fed at rank 0, chunk 1 stage p - 1 - r of the one fed at rank
// p - 1; virtual stage c * p + s is position s of direction c, and no micro-batch crosses from
// one direction to the other. V-shape (ZB-V): one chain of 2p stages, chunk 1 of rank r is
// stage 2p - 1 - r, so the chain turns at rank p - 1 (stages p - 1 and p on one rank) and ends
// on rank 0.
struct StageMap {
  int p = 1, v = 1;
  bool bidirectional = false;
  bool v_shape = false;

  int virtual_stage(int rank, int chunk) const {
    return chunk * p + ((bidirectional || v_shape) && chunk == 1 ? p - 1 - rank : rank);
  }
  int virtual_stages() const { return p * v; }
  // Micro-batches of an iteration split over the directions (DualPipe: half in each).
  int directions() const { return bidirectional ? 2 : 1; }
  // The stage's place along its direction's chain, and the chain's length: the model's layers
  // are split over the positions, so DualPipe's virtual stages s and p + s hold the same layers.
  int position(int vstage) const { return bidirectional ? vstage % p : vstage; }
  int chain_length() const { return bidirectional ? p : p * v; }
  int rank_of(int vstage) const {
    const int s = vstage % p;
    return (bidirectional || v_shape) && vstage / p == 1 ? p - 1 - s : s;
  }
  // Whether a micro-batch leaving `vstage` forward goes to another rank (a message); the
  // V-shape's turn stays on its rank.
  bool sends_forward(int vstage) const {
    const int n = next_stage(vstage);
    return n >= 0 && rank_of(n) != rank_of(vstage);
  }
  bool sends_backward(int vstage) const {
    const int q = prev_stage(vstage);
    return q >= 0 && rank_of(q) != rank_of(vstage);
  }
  // The virtual stage a micro-batch's activations go to after `vstage`, or -1 at its end.
  int next_stage(int vstage) const {
    if (bidirectional) return vstage % p + 1 < p ? vstage + 1 : -1;
    return vstage + 1 < p * v ? vstage + 1 : -1;
  }
  // The virtual stage it came from, or -1 at its start.
  int prev_stage(int vstage) const {
    if (bidirectional) return vstage % p > 0 ? vstage - 1 : -1;
    return vstage > 0 ? vstage - 1 : -1;
  }
};

struct PipelineSchedule {
  ScheduleKind kind;
  int stages = 1;          // p
  int micro_batches = 1;   // m
  int chunks = 1;          // v
  bool flush = true;       // false for PipeDream's asynchronous schedule (no flush)
  bool split_backward = false;  // B and W are separate ops (zero-bubble schedules)
  bool post_validation = false;  // post_validated(kind)
  // DualPipe's two directions (StageMap), `micro_batches` in each (make_schedule takes the
  // iteration's total, twice that).
  bool bidirectional = false;
  bool v_shape = false;  // ZB-V's placement (StageMap)
  std::vector<std::vector<PipeOp>> per_rank;  // size p

  StageMap stage_map() const { return {stages, chunks, bidirectional, v_shape}; }
  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int rank, int chunk) const { return stage_map().virtual_stage(rank, chunk); }
  int rank_of(int vstage) const { return stage_map().rank_of(vstage); }
  int next_stage(int vstage) const { return stage_map().next_stage(vstage); }
  int prev_stage(int vstage) const { return stage_map().prev_stage(vstage); }
};

}  // namespace stratasim
