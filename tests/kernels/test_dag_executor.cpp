// The task-parallel DAG executor: dependency order on random graphs, each node exactly once,
// cycles named, the critical path as a lower bound, and the fork-join diamond worked by hand.
#include "kernels/dag_executor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

// A random DAG on n nodes: node ids are a random permutation of a random topological order, and
// each node depends on each earlier node (in that order) with probability `density`.
DagGraph random_dag(int n, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> id(n);
  for (int i = 0; i < n; ++i) id[i] = i;
  std::shuffle(id.begin(), id.end(), rng);  // id[k]: the node at topological position k
  std::bernoulli_distribution edge(density);
  DagGraph g;
  g.nodes.resize(n);
  for (int k = 0; k < n; ++k) {
    g.nodes[id[k]].name = std::string("n") + std::to_string(id[k]);
    for (int j = 0; j < k; ++j) {
      if (edge(rng)) g.nodes[id[k]].deps.push_back(id[j]);
    }
  }
  return g;
}

TEST_CASE("dag executor: random DAGs run each node once, after all its predecessors") {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    for (int threads : {1, 2, 4}) {
      CAPTURE(seed);
      CAPTURE(threads);
      DagGraph g = random_dag(40, 0.1, seed);
      const int n = int(g.nodes.size());
      // Each node counts its runs and checks, when it starts, that its predecessors are done
      // (flags set by the nodes themselves, independent of the recorded times).
      auto runs = std::make_unique<std::atomic<int>[]>(n);
      auto done = std::make_unique<std::atomic<bool>[]>(n);
      std::atomic<int> early{0};
      for (int i = 0; i < n; ++i) {
        g.nodes[i].work = [&, i, deps = g.nodes[i].deps] {
          for (int d : deps) early += done[d].load() ? 0 : 1;
          runs[i]++;
          done[i] = true;
        };
      }
      const DagRunResult res = run_dag(g, threads);
      CHECK(early.load() == 0);
      for (int i = 0; i < n; ++i) CHECK(runs[i].load() == 1);
      REQUIRE(res.runs.size() == std::size_t(n));
      std::vector<int> order = res.start_order;
      std::sort(order.begin(), order.end());
      for (int i = 0; i < n; ++i) CHECK(order[i] == i);  // every node taken once
      for (int i = 0; i < n; ++i) {
        CHECK(res.runs[i].thread >= 0);
        CHECK(res.runs[i].thread < threads);
        for (int d : g.nodes[i].deps) CHECK(res.runs[i].start_s >= res.runs[d].end_s);
      }
      // Any path's durations add up below the makespan, the longest one included.
      CHECK(res.makespan_s >= critical_path_s(g, measured_durations(res)));
    }
  }
}

TEST_CASE("dag executor: one thread runs the nodes one after another") {
  DagGraph g = random_dag(25, 0.2, 7);
  for (auto& node : g.nodes) node.flop = 2e5;
  const DagRunResult res = run_dag(g, 1);
  std::vector<DagNodeRun> runs = res.runs;
  std::sort(runs.begin(), runs.end(),
            [](const DagNodeRun& a, const DagNodeRun& b) { return a.start_s < b.start_s; });
  for (std::size_t j = 0; j < runs.size(); ++j) {
    CHECK(runs[j].thread == 0);
    if (j > 0) CHECK(runs[j - 1].end_s <= runs[j].start_s);
  }
  // The makespan is the sum of the work plus the pool's hand-offs.
  CHECK(res.makespan_s >= res.busy_s);
  MESSAGE("1 thread: makespan " << res.makespan_s << " s, sum of node times " << res.busy_s);
  // The simulator's view of the same policy: one thread runs everything back to back.
  const std::vector<double> d = measured_durations(res);
  CHECK(predict_dag_makespan(g, d, 1) == doctest::Approx(res.busy_s).epsilon(1e-12));
}

TEST_CASE("dag executor: the fork-join diamond, by hand") {
  // a -> {b, c} -> d with durations 1, 2, 3, 4: critical path a, c, d = 8; one thread runs all
  // four back to back (10); two threads run b and c side by side (1 + max(2, 3) + 4 = 8).
  DagGraph g;
  const int a = g.add("a", {}, 0.0);
  const int b = g.add("b", {a}, 0.0);
  const int c = g.add("c", {a}, 0.0);
  g.add("d", {b, c}, 0.0);
  const std::vector<double> dur = {1, 2, 3, 4};
  CHECK(critical_path_s(g, dur) == 8.0);
  CHECK(predict_dag_makespan(g, dur, 1) == 10.0);
  CHECK(predict_dag_makespan(g, dur, 2) == 8.0);
  CHECK(predict_dag_makespan(g, dur, 3) == 8.0);
  // Four heads of 1 after a fork of 1 on 3 threads: 1 + 2 rounds = 3 (closed form 1 + ceil(4/3)).
  DagGraph heads;
  const int qkv = heads.add("qkv", {}, 0.0);
  for (int h = 0; h < 4; ++h) heads.add("head" + std::to_string(h), {qkv}, 0.0);
  CHECK(predict_dag_makespan(heads, {1, 1, 1, 1, 1}, 3) == 3.0);
}

TEST_CASE("dag executor: with two threads the diamond's branches run at the same time") {
  // b and c each wait (up to 10 s) until the other has started: both get there only if the
  // executor runs them concurrently. d must then see both finished.
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool met_b = false, met_c = false;
  const auto branch = [&](bool& met) {
    return [&] {
      std::unique_lock lock(mu);
      ++inside;
      cv.notify_all();
      met = cv.wait_for(lock, std::chrono::seconds(10), [&] { return inside == 2; });
    };
  };
  DagGraph g;
  const int a = g.add("a", {}, 1e4);
  const int b = g.add("b", {a}, branch(met_b));
  const int c = g.add("c", {a}, branch(met_c));
  const int d = g.add("d", {b, c}, 1e4);
  const DagRunResult res = run_dag(g, 2);
  CHECK(met_b);
  CHECK(met_c);
  CHECK(res.runs[b].thread != res.runs[c].thread);
  CHECK(res.runs[d].start_s >= std::max(res.runs[b].end_s, res.runs[c].end_s));
  CHECK(res.start_order.front() == a);
  CHECK(res.start_order.back() == d);
}

TEST_CASE("dag executor: a cycle is an input error naming it") {
  // a -> b -> c -> d -> b: the cycle through the lowest node on one (b), along the edges.
  DagGraph g;
  g.add("a", {}, 0.0);
  g.add("b", {0, 3}, 0.0);
  g.add("c", {1}, 0.0);
  g.add("d", {2}, 0.0);
  g.add("e", {3}, 0.0);  // downstream of the cycle, not on it
  CHECK_THROWS_WITH_AS(run_dag(g, 2), "dag: cycle b -> c -> d -> b", InputError);
  CHECK_THROWS_WITH_AS(topological_order(g), "dag: cycle b -> c -> d -> b", InputError);
  DagGraph self;
  self.add("x", {}, 0.0);
  self.add("loop", {1}, 0.0);
  CHECK_THROWS_WITH_AS(run_dag(self, 1), "dag: cycle loop -> loop", InputError);
  DagGraph bad;
  bad.add("x", {4}, 0.0);
  CHECK_THROWS_WITH_AS(run_dag(bad, 1),
                       "dag: node 'x' depends on node 4, but the graph has nodes 0..0", InputError);
  DagGraph twice;
  twice.add("x", {}, 0.0);
  twice.add("y", {0, 0}, 0.0);
  CHECK_THROWS_WITH_AS(run_dag(twice, 1), "dag: node 'y' lists dependency 'x' twice", InputError);
  CHECK_THROWS_WITH_AS(run_dag(twice, 0), "dag: threads = 0 must be >= 1", InputError);
}

TEST_CASE("dag executor: a node's exception stops the run and is rethrown") {
  std::atomic<int> after{0};
  DagGraph g;
  const int a = g.add("a", {}, [] { throw InputError("node a failed"); });
  g.add("b", {a}, [&] { ++after; });
  CHECK_THROWS_WITH_AS(run_dag(g, 2), "node a failed", InputError);
  CHECK(after.load() == 0);
}

}  // namespace
}  // namespace stratasim::kernels
