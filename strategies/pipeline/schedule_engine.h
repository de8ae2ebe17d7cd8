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
  int32_t lat;   // index in the latency table: transfer time added to `dep`
  int32_t rank;
};

// Periodic structure of a 1F1B-like schedule for a period of T micro-batches (see
// schedule_periodic.cpp): on every rank, op j + 2Tv is op j shifted by T micro-batches for
// warmup[r] <= j < cut[r] - 2Tv, ops before the cuts depend only on ops before the cuts, and
// ops after the cut (the cool-down, or the next period of a longer run) reach back at most
// window[r] ops before the cut of rank r.
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

// Times one run: each rank runs its ops in order, one at a time; an op starts when the rank is
// free and its inputs have arrived. O(number of ops). Writes the end time of every slot to
// done (size cs.slots() + 1), each rank's finish time to finish (size p) and, when starts is
// not null, each op's start time to starts[slot] (size cs.slots()).
void run_schedule(const CompiledSchedule& cs, const DurationTables& t, double* done, double* finish,
                  double* starts);

// After run_schedule: whether the last window[r] ops before every cut end exactly one common
// time later than the same ops one period earlier; if so, *shift_s receives that time.
bool steady_shift(const CompiledSchedule& cs, const PeriodicStructure& ps, const double* done,
                  double scale, double* shift_s);

}  // namespace stratasim::pipeline_detail
