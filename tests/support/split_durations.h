// Test helpers for schedules that split the backward (zero-bubble): the op kinds by their
// letters and uniform stage durations F, B, W.
#pragma once

#include "strategies/pipeline/schedule_timing.h"

namespace stratasim::testing {

constexpr PipeOpKind F = PipeOpKind::kForward;
constexpr PipeOpKind B = PipeOpKind::kBackward;
constexpr PipeOpKind W = PipeOpKind::kWeight;

// p stages, each taking tf for a forward, tb for B and tw for W; free transfers.
inline StageDurations uniform_split(int p, double tf, double tb, double tw) {
  StageDurations d;
  d.forward_s.assign(p, tf);
  d.backward_s.assign(p, tb);
  d.weight_s.assign(p, tw);
  return d;
}

}  // namespace stratasim::testing
