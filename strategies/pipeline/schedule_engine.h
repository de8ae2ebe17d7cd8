// Internal to the pipeline library: a schedule compiled to flat arrays and the list scheduler
// that runs it. Used by schedule_timing.cpp; not part of the public API.
//
// Every op of a schedule completes one "slot": the forward of (micro-batch mb, virtual stage
// i) is slot i * m + mb, its backward (B in a split schedule) is V * m + i * m + mb and its W
// is 2 V m + i * m + mb (V = p * v virtual stages). One extra slot, 3 V m, always holds 0 and
// stands for "no dependency".
//
// Compiling finds a dependency-respecting order of all ops once (the list scheduler proper:
// ranks run their lists in order, an op waits for its inputs); every later run with new
// durations is then one linear max-plus pass over that order, without readiness checks.
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/pipeline/schedule_timing.h"

namespace stratasim::pipeline_detail {

struct CompiledOp {
  int32_t self;  // slot this op completes
  int32_t dep;   // slot on the neighbouring virtual stage it waits for (or the zero slot)
  int32_t fwd;   // backward: slot of its own forward; forward: the zero slot
  int32_t dur;   // index in the duration table: forward i -> i, backward i -> V + i
  int32_t send;  // index in the latency table: the transfer of this op's output to its consumer
  bool queued;   // that transfer leaves through the rank's port (its consumer is on another rank)
  int32_t rank;
};

// A rank's transfers to other ranks leave through its port one at a time, in the order the
// rank makes them: activations to the next stage and gradients to the previous one share it
// (the device's PCIe or NVLink port and its node's NICs carry both directions' sends of a
// rank), so a send waits for the rank's previous send to arrive. Receiving is not a resource:
// the two neighbours' sends to a rank do not wait for each other.

// Periodic structure of a 1F1B-like schedule for a period of T micro-batches (see
// schedule_periodic.cpp): on every rank, op j + 2Tv is op j shifted by T micro-batches for
// warmup[r] <= j < cut[r] - 2Tv, ops before the cuts depend only on ops before the cuts, and
// ops after the cut (the cool-down, or the next period of a longer run) reach back at most
// window[r] ops before the cut of rank r (an op's inputs, and the rank's previous send).
struct PeriodicStructure {
  int period = 0;   // T
  bool ok = false;  // the structure holds and fits in this run
  std::vector<int32_t> warmup, cut, window;
};

struct CompiledSchedule {
  int p = 1, m = 1, v = 1;
  StageMap map;  // the schedule's virtual stages (PipelineSchedule::stage_map)
  std::vector<CompiledOp> ops;    // rank 0's ops in order, then rank 1's, ...
  std::vector<int32_t> begin;     // rank r's ops are [begin[r], begin[r + 1])
  std::vector<CompiledOp> order;  // the same ops in an order that respects every dependency
  std::vector<PeriodicStructure> periodic;  // for increasing periods; empty for GPipe

  int slots() const { return 3 * p * v * m; }  // F, B, W slots; the zero slot is slots()
  int rank_ops(int r) const { return begin[r + 1] - begin[r]; }
};

// Checks that every (micro-batch, chunk) appears exactly once as forward and once as backward
// on each rank and that the schedule cannot deadlock (SS_ASSERT otherwise), and compiles it.
CompiledSchedule compile_schedule(const PipelineSchedule& s);

// The periodic structure of cs for a period of T micro-batches (ok == false when absent).
PeriodicStructure analyze_periodicity(const CompiledSchedule& cs, int period);

// Per-call duration tables in the layout CompiledOp indexes.
struct DurationTables {
  std::vector<double> dur;  // 4V: forward, backward (B), W, the last micro-batch's backward
  std::vector<double> lat;  // V (the last entry is 0, for ops without a transfer)
};
void fill_duration_tables(int p, int v, const StageDurations& d, DurationTables& t);

// Per-run times, each indexed by slot (size cs.slots() + 1; the zero slot holds 0).
struct RunTimes {
  double* done;    // end of the op
  double* arrive;  // its output at the consumer: done, or the end of its queued transfer
  double* finish;  // size p: each rank's finish time
  double* starts;  // each op's start time, or null
};

// Times one run: each rank runs its ops in order, one at a time; an op starts when the rank is
// free and its inputs have arrived. An op's output leaves when the op ends and the rank's port
// is free (its previous transfer has arrived). O(number of ops).
void run_schedule(const CompiledSchedule& cs, const DurationTables& t, const RunTimes& out);

// After run_schedule: whether the last window[r] ops before every cut end (and deliver) exactly
// one common time later than the same ops one period earlier; if so, *shift_s receives that time.
bool steady_shift(const CompiledSchedule& cs, const PeriodicStructure& ps, const double* done,
                  const double* arrive, double scale, double* shift_s);

}  // namespace stratasim::pipeline_detail
