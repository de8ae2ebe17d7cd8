#include "sim/cost/concurrent_kernels.h"

#include <algorithm>
#include <deque>

#include "sim/core/error.h"

namespace stratasim {
namespace {

// Progressive filling: every running kernel gets an equal share of the capacity left, capped
// at its demand; capped kernels return what they do not use to the others.
std::vector<double> max_min_rates(const std::vector<double>& demands) {
  std::vector<size_t> order(demands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return demands[a] < demands[b] || (demands[a] == demands[b] && a < b);
  });
  std::vector<double> rates(demands.size());
  double left = 1.0;
  for (size_t k = 0; k < order.size(); ++k) {
    const double share = left / static_cast<double>(order.size() - k);
    rates[order[k]] = std::min(demands[order[k]], share);
    left -= rates[order[k]];
  }
  return rates;
}

struct Running {
  int kernel;
  double left_s;  // time still needed at the kernel's alone speed
};

}  // namespace

double device_demand(const KernelTime& t) {
  if (t.total_s <= 0) return 0;
  return std::clamp(t.plateau_s / t.total_s, 0.0, 1.0);
}

ConcurrentRun run_concurrent(const std::vector<ConcurrentKernel>& kernels, int streams) {
  return run_concurrent(kernels, std::vector<int>{streams});
}

ConcurrentRun run_concurrent(const std::vector<ConcurrentKernel>& kernels,
                             const std::vector<int>& streams_per_resource) {
  const int resources = static_cast<int>(streams_per_resource.size());
  for (int s : streams_per_resource) SS_ASSERT(s >= 1, "run_concurrent needs at least one stream");
  const int n = static_cast<int>(kernels.size());
  ConcurrentRun run;
  run.start_s.assign(n, 0);
  run.end_s.assign(n, 0);
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> dependents(n);
  for (int i = 0; i < n; ++i) {
    SS_ASSERT(kernels[i].resource >= 0 && kernels[i].resource < resources,
              "run_concurrent: resource out of range");
    for (int d : kernels[i].deps) {
      SS_ASSERT(d >= 0 && d < n && d != i, "run_concurrent: dependency out of range");
      ++waiting[i];
      dependents[d].push_back(i);
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<Running> running;
  std::vector<int> busy(resources, 0);  // running kernels per resource
  double now = 0;
  int done = 0;
  while (done < n) {
    for (auto it = ready.begin(); it != ready.end();) {
      const int k = *it, r = kernels[k].resource;
      if (busy[r] >= streams_per_resource[r]) {
        ++it;
        continue;
      }
      it = ready.erase(it);
      ++busy[r];
      run.start_s[k] = now;
      running.push_back({k, std::max(0.0, kernels[k].alone_s)});
    }
    SS_ASSERT(!running.empty(), "run_concurrent: dependency cycle");
    // Max-min shares within each resource.
    std::vector<double> rates(running.size(), 0);
    for (int r = 0; r < resources; ++r) {
      if (busy[r] == 0) continue;
      std::vector<size_t> on;
      std::vector<double> demands;
      for (size_t i = 0; i < running.size(); ++i) {
        if (kernels[running[i].kernel].resource == r) on.push_back(i), demands.push_back(kernels[running[i].kernel].demand);
      }
      const std::vector<double> share = max_min_rates(demands);
      for (size_t j = 0; j < on.size(); ++j) rates[on[j]] = share[j];
    }
    // A kernel given rate r of its demand d progresses at r / d of its alone speed (a kernel
    // demanding nothing, only latency, always runs at full speed).
    std::vector<double> speed(running.size());
    double step = -1;
    for (size_t i = 0; i < running.size(); ++i) {
      const double d = kernels[running[i].kernel].demand;
      speed[i] = d > 0 ? rates[i] / d : 1.0;
      const double t = running[i].left_s / speed[i];
      if (step < 0 || t < step) step = t;
    }
    now += step;
    std::vector<int> finished;
    std::vector<Running> still;
    for (size_t i = 0; i < running.size(); ++i) {
      const double left = running[i].left_s - step * speed[i];
      // Relative tolerance: the kernel that set the step ends exactly; others within rounding.
      if (left <= 1e-12 * std::max(1.0, kernels[running[i].kernel].alone_s) ||
          running[i].left_s / speed[i] == step) {
        finished.push_back(running[i].kernel);
      } else {
        still.push_back({running[i].kernel, left});
      }
    }
    running = std::move(still);
    std::sort(finished.begin(), finished.end());
    for (int k : finished) {
      run.end_s[k] = now;
      --busy[kernels[k].resource];
      ++done;
      for (int c : dependents[k]) {
        if (--waiting[c] == 0) ready.push_back(c);
      }
    }
  }
  run.makespan_s = now;
  return run;
}

}  // namespace stratasim

namespace stratasim {

std::vector<std::vector<int>> kernel_dependencies(const LayerGraph& g, const std::vector<Kernel>& ks,
                                                  size_t begin, size_t end, bool backward) {
  const int ops = static_cast<int>(g.ops.size());
  std::vector<int> producer(g.tensors.size(), -1), kernel_of(ops, -1);
  for (int i = 0; i < ops; ++i) {
    if (g.ops[i].output >= 0) producer[g.ops[i].output] = i;
  }
  for (size_t k = begin; k < end; ++k) {
    for (int i = ks[k].first_op; i <= ks[k].last_op && i < ops; ++i) kernel_of[i] = static_cast<int>(k - begin);
  }
  std::vector<std::vector<int>> deps(end - begin);
  auto add = [&](int kernel, int on) {
    if (on < 0 || on == kernel) return;
    std::vector<int>& d = deps[kernel];
    if (std::find(d.begin(), d.end(), on) == d.end()) d.push_back(on);
  };
  for (int i = 0; i < ops; ++i) {
    for (int16_t t : g.ops[i].inputs) {
      if (t < 0 || producer[t] < 0) continue;
      const int from = producer[t];  // op i consumes op `from`'s output
      if (backward) {
        if (kernel_of[from] >= 0) add(kernel_of[from], kernel_of[i]);
      } else if (kernel_of[i] >= 0) {
        add(kernel_of[i], kernel_of[from]);
      }
    }
  }
  return deps;
}

}  // namespace stratasim
