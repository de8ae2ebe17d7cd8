// Cost of one block (layer, embedding, head) for one micro-batch on one device: the sum of
// its kernels, with tensor-parallel communication exposed or hidden behind the adjacent
// GEMMs when the strategy overlaps it.
#pragma once

#include "strategies/lowering/plan.h"

namespace stratasim {

struct BlockCost {
  double forward_s = 0;
  double backward_s = 0;    // incl. recomputation and the weight gradients
  double weight_s = 0;      // the weight-gradient part of backward_s (W)
  double recompute_s = 0;
  double comm_total_s = 0;  // tp collectives, forward + recompute + backward
  double comm_exposed_s = 0;
  double comm_bytes = 0;
  double cp_total_s = 0, cp_exposed_s = 0, cp_bytes = 0;  // context parallel's ring exchange
  double ep_total_s = 0, ep_exposed_s = 0, ep_bytes = 0;  // MoE token dispatch/combine all-to-alls
  // Placement's sends between the devices of a replica (Strategy::placement): their times
  // alone, the part that lengthens the block, and their bytes (per replica).
  double mp_total_s = 0, mp_exposed_s = 0, mp_bytes = 0;
  double model_flops = 0;     // forward + backward
  double hardware_flops = 0;  // forward + recompute + backward
};

// Strategy::overlap_ep as Megatron-Core's combined 1F1B runs it (pipeline_parallel/
// combined_1f1b.py, schedules.py): a forward is paired with another micro-batch's backward only
// in the schedule's steady state. Per rank, interleaved over v chunks with micro-batch groups of
// pp, (pp - rank - 1) x 2 + (v - 1) pp + 1 chunk forwards warm up alone (the + 1: one extra
// forward so that each pair is independent), pp - 1 + (v - 1) pp + 1 on average over the ranks;
// one-chunk pipelines (pp - 1)/2 + 1; without pipelining 1 (the first forward, and the last
// backward); schedules of two chunks a rank (DualPipe, ZB-V) counted as interleaved ones; GPipe
// none. The share of a rank's passes that have a partner, of M v in all.
double ep_paired_share(const Plan& plan);

BlockCost block_cost(const Block& b, const Plan& plan);

// Per kernel of one phase list: its time, the part that stays exposed (a collective with
// overlap_tp runs under its neighbour GEMM) and, for collectives, the algorithm used. Sums to
// block_cost's numbers; the SimGrid engine replays collectives from it. A compute kernel's
// times include the device's wait for the host to issue it (Strategy::host_overhead_s).
struct KernelTiming {
  double total_s = 0, exposed_s = 0;
  double host_wait_s = 0;  // part of both: the device idle, waiting for the host to issue it
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
};
std::vector<KernelTiming> kernel_timings(const std::vector<Kernel>& ks, const Plan& plan);

}  // namespace stratasim
