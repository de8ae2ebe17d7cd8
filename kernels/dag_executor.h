// A task-parallel executor for branching operator graphs (issue 4): the ResNet block's residual
// branch, the four LSTM gates, attention heads — nodes whose dependencies form a DAG, run on a
// fixed pool of threads in dependency order. A node becomes ready when its last predecessor
// finished and goes to the back of one FIFO ready queue (initially ready nodes in index order);
// an idle thread takes the front. Each node's work is a callable or, without one, a serial busy
// loop of `flop` floating-point operations (burn_flops, as the pipeline runtime's ops). The run
// records every node's start, end and thread on one steady clock from a start barrier, so the
// recorded times respect every dependency exactly.
//
// predict_dag_makespan runs the same policy (FIFO ready queue, lowest free thread) on given
// durations: the simulator's view of the same graph, for comparison with a measured run.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace stratasim::kernels {

struct DagNode {
  std::string name;
  std::vector<int> deps;        // indices of the nodes that must finish first
  std::function<void()> work;   // empty: burn `flop` instead
  double flop = 0;
};

struct DagGraph {
  std::vector<DagNode> nodes;
  // Appends a node and returns its index.
  int add(std::string name, std::vector<int> deps, double flop);
  int add(std::string name, std::vector<int> deps, std::function<void()> work);
};

struct DagNodeRun {
  int thread = -1;     // pool thread that ran it, 0 .. threads-1
  double start_s = 0;  // seconds from the start barrier
  double end_s = 0;
};

struct DagRunResult {
  int threads = 1;
  std::vector<DagNodeRun> runs;  // per node (index as in the graph)
  std::vector<int> start_order;  // node indices in the order they were taken from the queue
  double makespan_s = 0;         // end of the last node
  double busy_s = 0;             // sum of node durations
};

// A dependency-respecting order of all nodes (Kahn). Throws InputError for a dependency index
// out of range, a repeated dependency, or a cycle, naming it: "dag: cycle a -> b -> a" (the
// cycle through the lowest-indexed node that lies on one, written from that node).
std::vector<int> topological_order(const DagGraph& graph);

// Runs every node exactly once on `threads` threads (>= 1, else InputError). An exception thrown
// by a node's work stops further starts and is rethrown after the threads joined.
DagRunResult run_dag(const DagGraph& graph, int threads);

// Longest path through the graph with these per-node durations: a lower bound on any run's
// makespan whatever the thread count.
double critical_path_s(const DagGraph& graph, const std::vector<double>& duration_s);

// The makespan of run_dag's policy with these per-node durations and free scheduling.
double predict_dag_makespan(const DagGraph& graph, const std::vector<double>& duration_s,
                            int threads);

// Each node's measured duration (end - start), to feed the two functions above.
std::vector<double> measured_durations(const DagRunResult& run);

}  // namespace stratasim::kernels
