#include "kernels/dag_executor.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <queue>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "kernels/pipeline_runtime.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

// successors[i]: the nodes that list i as a dependency, in increasing index order.
std::vector<std::vector<int>> successors(const DagGraph& g) {
  std::vector<std::vector<int>> succ(g.nodes.size());
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    for (int d : g.nodes[i].deps) succ[d].push_back(i);
  }
  return succ;
}

void check_deps(const DagGraph& g) {
  const int n = static_cast<int>(g.nodes.size());
  for (int i = 0; i < n; ++i) {
    std::set<int> seen;
    for (int d : g.nodes[i].deps) {
      if (d < 0 || d >= n) {
        throw InputError("dag: node '" + g.nodes[i].name + "' depends on node " +
                         std::to_string(d) + ", but the graph has nodes 0.." +
                         std::to_string(n - 1));
      }
      if (!seen.insert(d).second) {
        throw InputError("dag: node '" + g.nodes[i].name + "' lists dependency '" +
                         g.nodes[d].name + "' twice");
      }
    }
  }
}

// Called when Kahn's algorithm left nodes unprocessed: every such node has an unprocessed
// predecessor, so walking first unprocessed predecessors from the lowest such node repeats a
// node; the walk from that node on is a cycle (against the edges).
[[noreturn]] void throw_cycle(const DagGraph& g, const std::vector<bool>& done) {
  int at = static_cast<int>(std::find(done.begin(), done.end(), false) - done.begin());
  std::vector<int> walk;
  std::vector<int> pos(g.nodes.size(), -1);
  while (pos[at] < 0) {
    pos[at] = static_cast<int>(walk.size());
    walk.push_back(at);
    for (int d : g.nodes[at].deps) {
      if (!done[d]) {
        at = d;
        break;
      }
    }
  }
  std::vector<int> cycle(walk.begin() + pos[at], walk.end());
  std::reverse(cycle.begin(), cycle.end());  // along the edges: dependency -> dependent
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string text;
  for (int i : cycle) text += g.nodes[i].name + " -> ";
  throw InputError("dag: cycle " + text + g.nodes[cycle.front()].name);
}

}  // namespace

int DagGraph::add(std::string name, std::vector<int> deps, double flop) {
  nodes.push_back({std::move(name), std::move(deps), {}, flop});
  return static_cast<int>(nodes.size()) - 1;
}

int DagGraph::add(std::string name, std::vector<int> deps, std::function<void()> work) {
  nodes.push_back({std::move(name), std::move(deps), std::move(work), 0});
  return static_cast<int>(nodes.size()) - 1;
}

std::vector<int> topological_order(const DagGraph& g) {
  check_deps(g);
  const int n = static_cast<int>(g.nodes.size());
  const auto succ = successors(g);
  std::vector<int> indegree(n), order;
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    indegree[i] = static_cast<int>(g.nodes[i].deps.size());
    if (indegree[i] == 0) ready.push_back(i);
  }
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    done[i] = true;
    for (int s : succ[i]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (static_cast<int>(order.size()) < n) throw_cycle(g, done);
  return order;
}

DagRunResult run_dag(const DagGraph& g, int threads) {
  if (threads < 1) throw InputError("dag: threads = " + std::to_string(threads) + " must be >= 1");
  topological_order(g);  // rejects cycles and bad dependencies before any thread starts
  const int n = static_cast<int>(g.nodes.size());
  const auto succ = successors(g);
  DagRunResult res;
  res.threads = threads;
  res.runs.resize(n);
  std::vector<int> indegree(n);
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    indegree[i] = static_cast<int>(g.nodes[i].deps.size());
    if (indegree[i] == 0) ready.push_back(i);
  }
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::exception_ptr error;
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0;
  std::barrier start_line(threads + 1);
  const auto since = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - t0).count();
  };

  auto pool_thread = [&](int t) {
    start_line.arrive_and_wait();
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return !ready.empty() || finished == n || error; });
      if (finished == n || error) return;
      const int i = ready.front();
      ready.pop_front();
      res.start_order.push_back(i);
      lock.unlock();
      DagNodeRun run{t, since(Clock::now()), 0};
      std::exception_ptr failed;
      try {
        if (g.nodes[i].work) {
          g.nodes[i].work();
        } else {
          volatile float sink = burn_flops(g.nodes[i].flop, static_cast<float>(i));
          (void)sink;
        }
      } catch (...) {
        failed = std::current_exception();
      }
      run.end_s = since(Clock::now());
      lock.lock();
      res.runs[i] = run;
      if (failed) {
        if (!error) error = failed;
        cv.notify_all();
        return;
      }
      ++finished;
      for (int s : succ[i]) {
        if (--indegree[s] == 0) ready.push_back(s);
      }
      cv.notify_all();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) pool.emplace_back(pool_thread, t);
    t0 = Clock::now();
    start_line.arrive_and_wait();
  }  // joins the pool
  if (error) std::rethrow_exception(error);
  for (const DagNodeRun& r : res.runs) {
    res.makespan_s = std::max(res.makespan_s, r.end_s);
    res.busy_s += r.end_s - r.start_s;
  }
  return res;
}

double critical_path_s(const DagGraph& g, const std::vector<double>& duration_s) {
  SS_ASSERT(duration_s.size() == g.nodes.size(), "one duration per node");
  std::vector<double> finish(g.nodes.size(), 0.0);
  double longest = 0;
  for (int i : topological_order(g)) {
    double start = 0;
    for (int d : g.nodes[i].deps) start = std::max(start, finish[d]);
    finish[i] = start + duration_s[i];
    longest = std::max(longest, finish[i]);
  }
  return longest;
}

double predict_dag_makespan(const DagGraph& g, const std::vector<double>& duration_s,
                            int threads) {
  SS_ASSERT(duration_s.size() == g.nodes.size(), "one duration per node");
  if (threads < 1) throw InputError("dag: threads = " + std::to_string(threads) + " must be >= 1");
  topological_order(g);
  const int n = static_cast<int>(g.nodes.size());
  const auto succ = successors(g);
  std::vector<int> indegree(n);
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    indegree[i] = static_cast<int>(g.nodes[i].deps.size());
    if (indegree[i] == 0) ready.push_back(i);
  }
  // Running nodes as (end time, thread, node), earliest first; free threads lowest first.
  using Running = std::tuple<double, int, int>;
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  std::set<int> free_threads;
  for (int t = 0; t < threads; ++t) free_threads.insert(t);
  double now = 0, makespan = 0;
  for (int finished = 0; finished < n;) {
    while (!ready.empty() && !free_threads.empty()) {
      const int t = *free_threads.begin();
      free_threads.erase(free_threads.begin());
      running.emplace(now + duration_s[ready.front()], t, ready.front());
      ready.pop_front();
    }
    const auto [end, t, i] = running.top();
    running.pop();
    now = end;
    makespan = std::max(makespan, end);
    free_threads.insert(t);
    ++finished;
    for (int s : succ[i]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  return makespan;
}

std::vector<double> measured_durations(const DagRunResult& run) {
  std::vector<double> d;
  d.reserve(run.runs.size());
  for (const DagNodeRun& r : run.runs) d.push_back(r.end_s - r.start_s);
  return d;
}

}  // namespace stratasim::kernels
