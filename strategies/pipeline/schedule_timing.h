// Executes a schedule's op order against per-virtual-stage durations (a dependency-driven
// list scheduler: an op starts when its rank is free and its input has arrived). The bubble
// therefore emerges from the schedule, not from a closed form.
#pragma once

#include <vector>

#include "strategies/pipeline/pipeline_schedule.h"

namespace stratasim {

struct StageDurations {
  std::vector<double> forward_s;   // per virtual stage, one micro-batch
  std::vector<double> backward_s;  // per virtual stage, one micro-batch (recompute included);
                                   // in a split schedule only B (input gradients)
  std::vector<double> weight_s;    // per virtual stage: W (weight gradients) of a split
                                   // schedule; empty otherwise
  std::vector<double> p2p_s;       // per boundary i -> i+1 (size vstages - 1): transfer time
  // Per virtual stage: the backward of the iteration's last micro-batch when it differs from
  // the others' (torchgpipe's checkpoint='except_last' keeps that micro-batch's activations, so
  // it recomputes nothing); empty = backward_s.
  std::vector<double> last_backward_s;
};

struct TimedOp {
  PipeOp op;
  double start_s;
  double end_s;
  double arrive_s;  // when its output reaches the next op that needs it (its transfer queued)
};

struct Timeline {
  std::vector<std::vector<TimedOp>> per_rank;
  double makespan_s = 0;
};

struct ScheduleTiming {
  double makespan_s = 0;  // one iteration (async: steady-state period * m; post-validated:
                          // the longest rank span)
  std::vector<double> rank_finish_s;     // when each rank ends its last op
  // When each rank starts its first op, for post-validated schedules (ZB-H2), whose iteration
  // on rank r is rank_finish_s[r] - rank_start_s[r] (no flush between iterations); empty
  // (every rank from 0) for the others.
  std::vector<double> rank_start_s;
  double rank_span_s(int r) const {
    return rank_finish_s[r] - (rank_start_s.empty() ? 0.0 : rank_start_s[r]);
  }
  // How long after each rank's last op its output arrives at the neighbour: that op's transfer,
  // queued behind the rank's earlier sends (0 when the last op sends nothing).
  std::vector<double> rank_send_tail_s;
  std::vector<double> rank_busy_s;       // compute time of each rank in the iteration
  std::vector<double> rank_last_backward_s;  // duration of each rank's last op (a backward, or W)
  double bubble_fraction = 0;            // idle / makespan, averaged over ranks
};

// Full timeline of one iteration (every op with start and end), from a cold start: for
// PipeDream async this is the first iteration, not the steady state time_schedule() reports.
Timeline execute_schedule(const PipelineSchedule& schedule, const StageDurations& d);

// Iteration timing only. Exact; for large m it may simulate a shorter run and extend it by
// the periodic steady state (max-plus periodicity), which tests check against the full run.
// For kPipeDreamAsync: makespan_s = m * (steady-state period per micro-batch of the endless
// 1F1B stream), every rank_finish_s equals it, and the bubble is the steady-state idle share.
// Thread-safe (per-thread caches); p2p_s may be empty, meaning free transfers.
ScheduleTiming time_schedule(ScheduleKind kind, int p, int m, int v, const StageDurations& d);

// How the last time_schedule() call on this thread got its answer; tests and benchmarks use
// it to check that the fast paths are taken.
enum class TimingMethod {
  kFullSimulation,     // every op of the iteration simulated
  kAffineExtension,    // GPipe: runs of 1 and 2 micro-batches, extended linearly (exact)
  kPeriodicExtension,  // 1F1B-like: run of m_c micro-batches extended by the periodic state
  kSteadyState,        // PipeDream async: period of the no-flush 1F1B stream, detected exactly
  kSteadyEstimate,     // PipeDream async: no exact period found; average over a long stream
};
TimingMethod last_timing_method();

// Bubble fraction of the makespan with equal stages and free transfers (closed forms the
// schedule tests derive): (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v m + p - 1) interleaved,
// 0 for PipeDream's asynchronous steady state, (p-1)/(3m + p - 1) for ZB-H1 with F = B = W.
double uniform_bubble_fraction(ScheduleKind kind, int p, int m, int v);

// Activation memory driver: the most chunk-micro-batches a rank holds at once (forwards run,
// backwards not yet run), per rank. Depends only on the op order; for a schedule without a
// flush (PipeDream async) the next iteration's warm-up overlaps this one, so rank r holds
// at least p - r (its steady-state 1F1B depth) even when m < p - r.
std::vector<int> peak_in_flight(const PipelineSchedule& schedule);
// The same from closed forms (in_flight.cpp), without building the schedule: any m.
std::vector<int> peak_in_flight(ScheduleKind kind, int p, int m, int v);

// The most activation rank r holds at once when each of its chunks' micro-batches holds
// `chunk_bytes[c]` (v entries): the largest, over the moments after each of its forwards, of
// sum_c held_c x chunk_bytes[c], held_c the micro-batches of chunk c forwarded and not yet
// backward (or W) run. With one chunk, peak_in_flight x chunk_bytes[0]. Chunks differ where a
// rank's stages do (the embedding's or the head's chunk, uneven stage layers, dense-first MoE
// layers), and an interleaved rank holds more micro-batches of its early chunks than of its
// late ones at its peak (the warm-up runs chunk after chunk, the backward starts at the last):
// a mean over the chunks weights each equally. Interleaved 1F1B in closed form (its op order
// repeats every p v steps); DualPipe and ZB-V from their op orders, memoized per shape.
double peak_held_activation(ScheduleKind kind, int p, int m, int v, int r,
                            const std::vector<double>& chunk_bytes);
// The same over `v` chunk sizes at chunk_bytes[0 .. v - 1].
double peak_held_activation(ScheduleKind kind, int p, int m, int v, int r, const double* chunk_bytes);

}  // namespace stratasim
