// The SimGrid engine: a flow-level discrete-event simulation of one training iteration of a
// lowered Plan on a platform built from its HardwareModel. Returns the same Prediction as the
// analytical engine, with the iteration time, bubble and exposed communication measured from
// the simulated timeline. Public API: no SimGrid type appears here.
//
// SimGrid's Engine is a per-process singleton that cannot be safely re-created; every call of
// predict_simgrid() therefore runs its simulation in a forked child process that sends the
// measurements back over a pipe (see ARCHITECTURE.md). Do not call it from a process that
// runs other threads (fork copies only the calling thread).
#pragma once

#include "sim/prediction/prediction.h"

namespace stratasim {

// Stage: one execution per forward/backward op of a virtual stage (fast). Layer: each op runs
// layer by layer, one execution per transformer layer (embedding and head stay attached to
// their stages as executions of their own); the same durations in total, finer timelines.
enum class SimGranularity { kStage, kLayer };

struct SimgridOptions {
  bool timeline = true;  // fill Prediction::timeline (events of data-parallel replica 0)
  // Ring collectives are simulated step by step (one point-to-point message per member and
  // step) up to this many steps; longer rings are aggregated into this many steps carrying
  // the same bytes, with the skipped steps' latency added (PLATFORM-NOTES: speed).
  int max_ring_steps = 64;
  // ... and to at most this many messages per collective (members x channels x steps, at
  // least one step): a ring over 128 ranks in 4 channels then runs in 2 steps, not 64. Each
  // step's messages are concurrent flows the fluid model shares out, so fewer, larger steps
  // keep the bytes on every link and the bandwidth each gets; what they lose is how the
  // ring's steps interleave with other traffic (PLATFORM-NOTES: speed).
  int max_ring_messages = 1024;
  // Gradient buckets simulated (at most): the plan's buckets (iteration.h) up to this many,
  // each carrying its share of the bytes; the analytical engine costs every plan bucket.
  int max_dp_buckets = 64;
  SimGranularity granularity = SimGranularity::kStage;
  // Tensor-parallel collectives run as messages at layer granularity. At stage granularity
  // they stay inside the op durations (not contended) unless this is set: then each op's
  // collectives run as one aggregated exchange at its end (Megatron 1T on 3072 A100: 3.5x the
  // activities and wall time).
  bool tp_messages_at_stage = false;
  // Compute operations the simulation may hold (micro-batches x virtual stages x passes, times
  // the layers of a stage at layer granularity). ~3-5 us of wall time each (PLATFORM-NOTES),
  // so the default bounds a run to well under a minute; beyond it predict_simgrid refuses the
  // plan with an InputError instead of running for hours and writing an unbounded trace.
  double max_operations = 4e6;
};

// Throws InputError for options or strategies the engine cannot simulate (naming them) and
// std::runtime_error when the simulation itself fails (deadlock, crashed child process).
Prediction predict_simgrid(const Plan& plan, const SimgridOptions& options = {});

}  // namespace stratasim
