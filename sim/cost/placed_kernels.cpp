#include "sim/cost/placed_kernels.h"

#include <algorithm>
#include <map>
#include <utility>

#include "sim/cost/collective_cost.h"
#include "sim/cost/concurrent_kernels.h"
#include "sim/cost/device_variability.h"
#include "sim/cost/kernel_cost.h"

namespace stratasim {
namespace {

// Sends share their port without a stream limit.
constexpr int kPortStreams = 1 << 16;

struct Edges {
  std::vector<ConcurrentKernel> tasks;  // kernels first, then sends
  std::vector<double> send_bytes;       // per send
};

void add_dep(std::vector<int>& deps, int on) {
  if (std::find(deps.begin(), deps.end(), on) == deps.end()) deps.push_back(on);
}

Edges build(const Block& b, const std::vector<Kernel>& ks, size_t begin, size_t end, bool backward,
            bool sends, const Plan& plan) {
  const LayerGraph& g = b.graph;
  const int ops = static_cast<int>(g.ops.size()), n = static_cast<int>(end - begin);
  const int devices = std::max(1, plan.mp);
  Edges e;
  e.tasks.resize(n);
  const double slowest = slowest_device_factor(plan.hardware);
  for (int k = 0; k < n; ++k) {
    const Kernel& kernel = ks[begin + k];
    const KernelTime t = kernel_time(kernel, plan.hardware.device, plan.strategy.dtype,
                                     plan.strategy.fusion.attention_kernel, slowest,
                                     plan.strategy.fp8_scaling);
    e.tasks[k].alone_s = t.total_s;
    e.tasks[k].demand = device_demand(t);
    e.tasks[k].resource = std::clamp<int>(kernel.device, 0, devices - 1);
  }
  std::vector<int> producer(g.tensors.size(), -1), kernel_of(ops, -1);
  for (int i = 0; i < ops; ++i) {
    if (g.ops[i].output >= 0) producer[g.ops[i].output] = i;
  }
  for (int k = 0; k < n; ++k) {
    for (int i = ks[begin + k].first_op; i <= ks[begin + k].last_op && i < ops; ++i) kernel_of[i] = k;
  }
  std::map<std::pair<int, int>, int> send_of;  // (tensor, consuming device) -> send task
  const int per_node = plan.hardware.node.devices;
  for (int i = 0; i < ops; ++i) {
    for (int16_t t : g.ops[i].inputs) {
      if (t < 0 || producer[t] < 0) continue;
      const int from = producer[t];  // op i consumes op `from`'s output
      const int src = backward ? kernel_of[i] : kernel_of[from];
      const int dst = backward ? kernel_of[from] : kernel_of[i];
      if (src < 0 || dst < 0 || src == dst) continue;
      const int a = e.tasks[src].resource, d = e.tasks[dst].resource;
      if (a == d) {
        add_dep(e.tasks[dst].deps, src);
        continue;
      }
      if (!sends) continue;  // the recomputation reads what its device received
      // One send per tensor and receiving device (forward) or per tensor and sending device
      // (backward: the consumers' gradients are summed on their device first): either way the
      // consuming op's device, the producer's being the tensor's.
      auto [it, added] = send_of.try_emplace({t, backward ? a : d}, 0);
      if (added) {
        it->second = static_cast<int>(e.tasks.size());
        ConcurrentKernel send;
        send.alone_s = p2p_time(g.tensors[t].bytes, a / per_node == d / per_node, plan.hardware);
        send.demand = 1;
        send.resource = devices + a;
        e.tasks.push_back(send);
        e.send_bytes.push_back(g.tensors[t].bytes);
      }
      add_dep(e.tasks[it->second].deps, src);
      add_dep(e.tasks[dst].deps, it->second);
    }
  }
  return e;
}

}  // namespace

PlacedRun run_placed(const Block& b, const std::vector<Kernel>& ks, size_t begin, size_t end,
                     bool backward, bool sends, const Plan& plan) {
  Edges e = build(b, ks, begin, end, backward, sends, plan);
  const int devices = std::max(1, plan.mp);
  std::vector<int> streams(2 * devices, kPortStreams);
  std::fill(streams.begin(), streams.begin() + devices, std::max(1, plan.strategy.streams));
  PlacedRun out;
  out.makespan_s = run_concurrent(e.tasks, streams).makespan_s;
  const size_t kernels = end - begin;
  if (e.tasks.size() == kernels) return out;
  for (size_t i = kernels; i < e.tasks.size(); ++i) {
    out.transfer_s += e.tasks[i].alone_s;
    out.transfer_bytes += e.send_bytes[i - kernels];
    e.tasks[i].alone_s = 0;
  }
  out.transfer_exposed_s = std::max(0.0, out.makespan_s - run_concurrent(e.tasks, streams).makespan_s);
  return out;
}

}  // namespace stratasim
