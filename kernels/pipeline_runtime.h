// A real pipeline runtime on CPU threads (issue 4, first slice): p ranks as p threads, each
// running the op order of the PipelineSchedule that strategies/pipeline's make_schedule()
// produces (GPipe, 1F1B, interleaved 1F1B with v chunks per rank, PipeDream async as one cold
// iteration) — the same schedule code the simulator times, so a measured timeline can be put
// next to execute_schedule()'s predicted one.
//
// Data flow: one bounded FIFO queue per virtual-stage boundary and direction. The forward of
// (micro-batch mb, virtual stage i) pops mb's activation from boundary i-1 (virtual stage 0
// makes its own input), does its work, stashes its output for the backward and pushes it to
// boundary i; the backward pops mb's gradient from boundary i (the last virtual stage starts
// from its stashed output), does its work, frees the stash and pushes the gradient back to
// boundary i-1. Every op's work is a serial floating-point busy loop of a configurable FLOP
// count (burn_flops), seeded by the op's input so the results flow through the pipeline; the
// kernels' OpenMP GEMM is not used because p OpenMP teams would oversubscribe the cores.
//
// Each op records its start (after its input arrived) and end (before its output is sent) on
// one steady clock shared by all threads, relative to a barrier all ranks pass before their
// first op, so a recorded timeline respects every dependency exactly. Wall-clock idle time
// includes time other processes took from a rank (preempted between ops; preempted mid-op
// inflates busy time instead), so the result also reports each rank's CPU time inside its ops
// and its involuntary context switches: a run with none measures the schedule's own bubble.
//
// Data parallelism: dp replicas of the pipeline (dp * p threads; worker w = replica * p + rank),
// each with its own data. Every backward of (micro-batch mb, virtual stage i) on replica d adds
// its gradient to virtual stage i's buffer (grad_elems floats), element k gaining
// ((d + 1) * (mb + 1) + i + k) mod 8 — whole numbers, so sums are exact in any order and tests
// can derive them by hand. Each buffer is cut into dp_buckets buckets and each backward's work
// into as many slices, slice b producing bucket b (as backprop produces the last layers'
// gradients first); a bucket is final after its slice of the chunk's last backward. The replicas of
// a rank then all-reduce each bucket with a ring over shared memory (RingAllReduce below), either
// after the rank's last op or, with overlap_dp, on one communication thread per worker while the
// rank runs its remaining backwards. Every all-reduce is a CommEvent in the result.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/pipeline/schedule_timing.h"

namespace stratasim::kernels {

struct PipelineRuntimeConfig {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int stages = 2;          // p (threads)
  int micro_batches = 4;   // m
  int chunks = 1;          // v (interleaved only)
  // Work per op in FLOP, per virtual stage (size p * v), or one value for every virtual stage.
  std::vector<double> forward_flop = {1e6};
  std::vector<double> backward_flop = {2e6};
  int activation_elems = 64;  // floats per activation / gradient message
  // Messages a boundary queue holds before its producer blocks; 0 means m (a whole iteration,
  // so a producer never waits: asynchronous sends). Smaller values model tighter buffers; the
  // schedules here send and receive each boundary's micro-batches in the same order, so any
  // capacity >= 1 is deadlock-free for them (ranks and FIFOs form a Kahn process network, so
  // this does not depend on timing; capacity 1 was run for every schedule with p <= 6,
  // m <= 12, v <= 3).
  int queue_capacity = 0;
  // Data parallelism (see the top of this file).
  int dp = 1;            // replicas of the pipeline
  int grad_elems = 256;  // gradient floats per virtual stage (0: no gradients, no all-reduce)
  int dp_buckets = 1;    // buckets per virtual stage's gradient, all-reduced one by one
  bool overlap_dp = false;  // all-reduce buckets on a communication thread as they become final
};

// One all-reduce of one gradient bucket on one worker, seconds from the start barrier (start:
// when the worker entered the ring, so waiting for slower replicas is included).
struct CommEvent {
  int chunk = 0;   // model chunk (virtual stage chunk * p + rank)
  int bucket = 0;
  double start_s = 0;
  double end_s = 0;
  int steps = 0;   // ring steps this worker took: 2 (dp - 1)
  int64_t elems = 0;
};

struct PipelineRunResult {
  PipelineSchedule schedule;       // the schedule that was run (make_schedule's)
  int dp = 1;
  // Per worker (w = replica * p + rank; the per-worker vectors below likewise), in execution
  // order, seconds from the start barrier; makespan_s: the end of the last forward/backward.
  Timeline timeline;
  std::vector<double> rank_busy_s;     // sum of op durations per rank
  std::vector<double> rank_idle_fraction;  // (makespan - busy) / makespan per rank
  double bubble_fraction = 0;      // mean of rank_idle_fraction
  std::vector<int> rank_peak_stash;  // most activations a rank held at once (measured)
  // Interference from other processes, which wall-clock timing cannot tell from a bubble
  // (Linux only; -1 elsewhere): each rank thread's CPU time inside its ops (below
  // rank_busy_s when it was preempted mid-op) and its involuntary context switches in the run.
  std::vector<double> rank_busy_cpu_s;
  std::vector<long> rank_preemptions;
  double checksum = 0;             // sum of the gradients leaving virtual stage 0 (data flow)
  // Data parallelism: each worker's all-reduces in the order it ran them, its gradient buffers
  // after them (chunk c at [c * grad_elems, (c + 1) * grad_elems)), and the iteration time
  // (last op or all-reduce end); allreduce_exposed_s = iteration_s - timeline.makespan_s.
  std::vector<std::vector<CommEvent>> comm;
  std::vector<std::vector<float>> gradients;
  double iteration_s = 0;
  double allreduce_s = 0;          // the longest per-worker sum of all-reduce durations
  double allreduce_exposed_s = 0;
};

// Ring all-reduce (sum) among n threads over shared memory (Patarasuk & Yuan 2009): each buffer
// is cut into n segments; in n - 1 reduce-scatter steps participant d adds its left neighbour's
// segment (d - 1 - s) mod n into its own, leaving it the full sum of segment (d + 1) mod n; in
// n - 1 all-gather steps it copies segment (d - s) mod n from its left neighbour. Participants
// synchronise only with their neighbours: before its step t (counted over all calls, plus one
// step per call that publishes the buffer), a participant waits until both neighbours finished
// t steps, which orders every read of a neighbour's segment after the write it needs and before
// the next write to it. Every participant calls allreduce() the same number of times with
// buffers of equal size (checked), concurrently from its own thread.
class RingAllReduce {
 public:
  explicit RingAllReduce(int participants);
  int participants() const { return n_; }
  // Sums the n buffers element-wise into every buffer; returns the ring steps taken (2(n-1)).
  int allreduce(int participant, std::span<float> buffer);

 private:
  void wait_neighbours(int participant, int64_t step);
  void finish_step(int participant);
  int n_;
  std::unique_ptr<std::atomic<int64_t>[]> progress_;  // steps each participant finished
  std::vector<float*> buffers_;
  std::vector<std::size_t> sizes_;
};

// Runs one iteration. Throws InputError for an illegal (kind, p, m, v) (the schedule's rule)
// or an out-of-range setting (naming it).
PipelineRunResult run_pipeline(const PipelineRuntimeConfig& config);

// Mean measured forward and backward duration per virtual stage over every replica (p2p_s
// empty: a transfer is a queue hand-off, inside the receiving op's wait), to feed
// schedule_timing's execute_schedule or time_schedule and compare the simulated iteration with
// the measured one.
StageDurations measured_stage_durations(const PipelineRunResult& result);

// Performs about `flop` floating-point operations (multiply + add pairs on independent
// accumulators; not a cloned function, so the baseline target has no FMA to contract them
// into) starting from `seed`; returns a value that depends on all of them so the loop cannot be
// removed.
float burn_flops(double flop, float seed);

}  // namespace stratasim::kernels
