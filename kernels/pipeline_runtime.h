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
#pragma once

#include <cstdint>
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
};

struct PipelineRunResult {
  PipelineSchedule schedule;       // the schedule that was run (make_schedule's)
  Timeline timeline;               // per rank, in execution order; seconds from the start barrier
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
};

// Runs one iteration. Throws InputError for an illegal (kind, p, m, v) (the schedule's rule).
PipelineRunResult run_pipeline(const PipelineRuntimeConfig& config);

// Mean measured forward and backward duration per virtual stage (p2p_s empty: a transfer is a
// queue hand-off, inside the receiving op's wait), to feed schedule_timing's execute_schedule
// or time_schedule and compare the simulated iteration with the measured one.
StageDurations measured_stage_durations(const PipelineRunResult& result);

// Performs about `flop` floating-point operations (multiply + add pairs on independent
// accumulators, no FMA contraction in this library) starting from `seed`; returns a value that
// depends on all of them so the loop cannot be removed.
float burn_flops(double flop, float seed);

}  // namespace stratasim::kernels
