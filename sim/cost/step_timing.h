// Closed-form costs of the iteration program's ops (iteration.h) and the list schedule of one
// step: each op starts when its stream is free and its dependencies are over. The analytical
// engine's per-stage durations and its end-of-iteration phase are built from these.
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

// A communication op's time, alone on its links: `repeats` collectives of bytes / repeats
// (collective_cost.h, the op's algorithm), or one point-to-point message; an FP8 amax
// reduction with its two bracketing kernels (DeviceSpec::kernel_overhead_s each).
double comm_op_s(const IterOp& op, const Plan& plan);

// Durations of a stage's compute ops for one micro-batch (the blocks' kernels).
struct ComputeDurations {
  double forward_s = 0, recompute_s = 0;
  double backward_s = 0;  // without recomputation (and without W when the backward is split)
  double weight_s = 0;    // W of a split backward
};

struct StepTiming {
  double span_s = 0;          // until every op but a send is over
  double send_end_s = 0;      // when the send's message has arrived (0: no send)
  bool send_blocking = true;
  double compute_s = 0;       // compute ops, back to back
  double zero_total_s = 0;    // ZeRO collectives, alone
  double zero_bytes = 0;      // their buffers per device (IterOp::bytes)
  double amax_s = 0;          // FP8 amax reductions (kFp8AmaxReduce), waited for: exposed
  double amax_bytes = 0;
};

StepTiming time_step(const StepProgram& step, const ComputeDurations& compute, const Plan& plan);

// The data-parallel gradient reduction in op.repeats buckets: total time and the part after
// the last backward's scheduled end. Bucket k is ready after (k + 1)/B of the last backward's
// compute (when the op overlaps it) and the buckets run one after another, each once ready;
// while one runs it slows the backward (DeviceSpec::overlap_slowdown s: compute at 1/s of
// its speed), which delays the readiness of the next ones -- the SimGrid engine's picture,
// computed event by event (O(B)). In the limits: buckets that keep the comm stream busy from
// the first one on end at L/B + B t, and sparse ones stretch the backward by (1 - 1/s)(B-1) t
// and leave t + that stretch exposed, for a last backward of length L and a bucket time t.
// `delay_s`: how much later than scheduled the last backward ends (its own stretch, or more
// when the previous rank's stretched backward delayed its start; default: its own stretch).
struct BucketedReduce {
  double total_s = 0, exposed_s = 0;
  double stretch_s = 0;  // how much the overlapping buckets lengthen the last backward
};
BucketedReduce bucketed_reduce(const IterOp& op, const Plan& plan, double last_backward_s,
                               double delay_s = -1);

}  // namespace stratasim
