// How the executor replays each pipeline op (internal to sim/simgrid; no SimGrid here, so it
// can be tested on its own). An op is a list of pieces (one timeline event each); a piece is
// a list of segments: compute, then optionally a tensor-parallel collective replayed as
// messages through the device's own NVLink port.
//
// Uncontended, a segment takes compute_s + comm.total_s: the collective's hidden part
// (overlap_tp: it runs under its neighbour GEMM, block_cost.cpp) is taken off compute_s and
// executes concurrently with the messages, so each piece takes exactly the analytical
// duration; when the messages are slowed by traffic sharing the port, the op lengthens.
//
// Stage granularity: one piece per op (forward; recompute + backward); with
// tp_messages_at_stage its collectives are aggregated into one exchange of their summed bytes
// and latencies at the end of the piece, otherwise they stay inside its duration.
// Layer granularity: embedding, every layer, head (+ the rest of the stage's time, e.g.
// exposed ZeRO traffic) as pieces, each collective at its kernel position.
#pragma once

#include <vector>

#include "sim/prediction/prediction.h"
#include "sim/simgrid/simgrid_engine.h"
#include "strategies/lowering/plan.h"

namespace stratasim::simgrid_detail {

// A tensor-parallel collective as exchanged with the device's ring neighbour: `wire_B` leaves
// and enters the device's port (one message each way), the remaining latencies as a delay.
// An expert-parallel all-to-all (ep_as_messages) instead: `wire_B` to each other host of the
// host's ep group (its tp devices' share for them) and `local_B` to its own tp peers.
struct TpExchange {
  double wire_B = 0;
  double total_s = 0;          // uncontended: wire_B / B + latency (= collective_cost.h)
  double extra_latency_s = 0;  // total_s - wire_B / B - one message latency
  double hidden_s = 0;         // overlapped with compute
  bool all_to_all = false;
  double local_B = 0;
  double intra_factor = 1, inter_factor = 1;  // link efficiency at the buffer size (messages scaled by 1/f)
  // An expert exchange's bytes over those of an NCCL all-to-all, inside the node and across
  // it (Strategy::ep_dispatch; collective_cost.h expert_exchange_bytes); 1 for NCCL's.
  double intra_share = 1, inter_share = 1;
  bool empty() const { return total_s <= 0; }
};

struct Segment {
  double compute_s = 0;
  TpExchange comm;
};

struct Piece {
  EventKind kind = EventKind::kForward;
  int layer = -1;  // layer index at layer granularity, -1 for a whole op or embedding/head
  std::vector<Segment> segments;
};

struct OpPieces {
  std::vector<Piece> forward, backward;  // per virtual stage
  std::vector<Piece> weight;             // W of a split backward: one compute piece
};

// Whether tensor-parallel collectives run as messages: tp > 1, the group inside one NVLink
// domain (a group spanning nodes keeps its collectives inside the op durations), and layer
// granularity or SimgridOptions::tp_messages_at_stage.
bool tp_as_messages(const Plan& plan, const SimgridOptions& options);

// Whether expert-parallel all-to-alls run as messages between the simulated hosts: layer
// granularity, an ep group of several hosts (ep a multiple of tp, ep > tp) and no overlap_ep
// (whose hiding block_cost.cpp costs per pass). Each host sends its share to every other host
// of its group through its port and, across nodes, the NICs and leaf uplinks, so an
// oversubscribed leaf slows the dispatch and the combine.
bool ep_as_messages(const Plan& plan, const SimgridOptions& options);

// Uncontended duration of a piece.
double nominal_s(const Piece& piece);

// Per virtual stage: its forward and backward ops as pieces, summing to `forward_s[vs]` and
// `backward_s[vs]` (the durations the analytical schedule uses, without transfers).
// `weight_s` (W per virtual stage, empty when the backward is not split) becomes one compute
// piece each.
std::vector<OpPieces> op_pieces(const Plan& plan, const std::vector<double>& forward_s,
                                const std::vector<double>& backward_s,
                                const std::vector<double>& recompute_s,
                                const std::vector<double>& weight_s,
                                const SimgridOptions& options);

}  // namespace stratasim::simgrid_detail
