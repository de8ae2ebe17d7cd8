// Validation of the pipeline schedule timing (strategies/pipeline execute_schedule) against the
// real pipeline runtime on CPU threads (kernels/pipeline_runtime.h): each op's duration is
// predicted from the calibrated per-thread rate of burn_flops-style work
//   forward_s[i] = serial_overhead_s + forward_flop[i] / serial_flops   (backward alike)
//   p2p_s[i]     = sync_s (a hand-off between two threads: one synchronisation)
// and the pipeline schedule turns those into the iteration time and bubble -- through the generic
// scenario path (predict_runtime_case: the stages as task ops, the analytical engine); the runtime then runs
// the same (schedule, p, m, v, FLOP per virtual stage) and the two are compared. The runtime
// runs p threads, so the cases use p <= the machine's cores (p = 2 here).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/dag_executor.h"
#include "strategies/model/model_spec.h"
#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/pipeline/schedule_timing.h"
#include "validate/calibration.h"

namespace stratasim {

struct RuntimeCase {
  ScheduleKind kind = ScheduleKind::k1F1B;
  int p = 2, m = 4, v = 1;
  std::vector<double> forward_flop;   // per virtual stage (p * v)
  std::vector<double> backward_flop;  // per virtual stage (p * v)
};

// GPipe, 1F1B and interleaved 1F1B, balanced and unbalanced stages, p = 2; quick: tiny ops.
std::vector<RuntimeCase> runtime_cases(bool quick);

// The case as a scenario (issue 16: the generic path): one task op per virtual stage on p devices
// of one node (the runtime's threads, a core each, handing off through the calibrated shared-memory
// link's latency), the case's schedule, non-blocking hand-offs; the analytical engine's iteration
// time and bubble fraction. Equals execute_schedule on predicted_durations up to the hand-off
// model (tests/validate checks it against execute_schedule on those durations).
std::pair<double, double> predict_runtime_case(const RuntimeCase& c, const Calibration& cal);

struct RuntimeCaseResult {
  std::string schedule;  // schedule_name()
  int p = 0, m = 0, v = 0;
  double predicted_s = 0, measured_s = 0, error = 0;  // error = (pred - meas) / meas
  double predicted_bubble = 0, measured_bubble = 0;   // idle fraction, mean over ranks
  long preemptions = 0;  // involuntary context switches in the measured run (-1 unknown)
};

// Predicts the case, then runs it `repeats` times after one warm-up run and keeps the fastest
// (the least disturbed by other processes).
RuntimeCaseResult validate_runtime_case(const RuntimeCase& c, const Calibration& cal, int repeats);

// Every case, `rounds` rounds over (a shared machine's speed drifts; see kernels/microbench.h),
// keeping each case's fastest measured run; progress after each case and round.
std::vector<RuntimeCaseResult> validate_runtime(
    const std::vector<RuntimeCase>& cases, const Calibration& cal, int rounds, int repeats,
    const std::function<void(std::string_view)>& progress);

// The DAG executor's graphs (kernels/dag_examples.h: a ResNet bottleneck block, an LSTM
// sequence) predicted as any scenario is: each node a single-threaded `task` op of an operator
// graph (dag_model), one pass streamed forward on the calibrated hardware (its DeviceSpec::task_*
// from calibrate) with one stream per thread, the analytical engine's concurrent kernels
// (sim/cost/concurrent_kernels.h: run_dag's FIFO policy, one core per task); then run_dag
// measures it.
struct DagCase {
  std::string graph;  // a kernels::dag_example name
  double flop = 0;    // per unit of node work
  int threads = 2;
};
std::vector<DagCase> dag_cases(bool quick, int threads);

// A DAG as an operator graph of task ops (a node's dependencies are its inputs; at most 3).
ModelSpec dag_model(const kernels::DagGraph& g, const std::string& name);

struct DagCaseResult {
  std::string graph;
  int threads = 0, nodes = 0;
  double predicted_s = 0, measured_s = 0, error = 0;
};

// Predicts every case through lower() and the analytical engine, then runs each `repeats` times
// per round (after a warm-up), `rounds` rounds, keeping the fastest run.
std::vector<DagCaseResult> validate_dags(const std::vector<DagCase>& cases, const Calibration& cal,
                                         int rounds, int repeats,
                                         const std::function<void(std::string_view)>& progress);

}  // namespace stratasim
