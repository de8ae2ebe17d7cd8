// The window's long jobs, off the GUI thread: evaluating every variant and the search run in a
// worker thread (QtConcurrent) with a progress fraction and a cancel flag the search checks
// before every point; a SimGrid simulation runs as a `stratasim simulate` child process
// (SimGrid forks, a GUI must not), which Cancel kills.
#pragma once

#include <QtCore/QFutureWatcher>
#include <QtCore/QObject>
#include <QtCore/QTemporaryDir>
#include <QtCore/QTimer>
#include <atomic>
#include <memory>

#include "gui/command_runner.h"
#include "gui/variant_eval.h"

namespace stratasim {

enum class JobKind { kEvaluate, kSearch, kSimulate };

struct JobResult {
  JobKind kind = JobKind::kEvaluate;
  std::vector<VariantResult> rows;  // variants, search candidates, or the one simulated variant
  QString summary;                  // one line for the status bar
  QString error;                    // empty when it worked
  bool cancelled = false;
};

class JobRunner : public QObject {
  Q_OBJECT
 public:
  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;

  // Each returns false (and starts nothing) while a job runs.
  bool start_evaluate(const Scenario& sc);
  bool start_search(const Scenario& sc, int top_k, Objective objective = Objective::kThroughput);
  // `scenario_file`: the scenario as the child reads it; `variant` "" = the base strategy.
  bool start_simulate(const Scenario& sc, const QString& scenario_file, const QString& variant);
  void cancel();

  bool busy() const;
  int percent() const;  // 0..100, or -1 while the amount of work is unknown
  const JobResult& result() const { return result_; }
  CommandRunner* command() { return &command_; }

 signals:
  void progress(int percent);       // every 50 ms while a job runs
  void message(const QString& text);  // the simulate child's stderr, line by line
  void finished(bool ok);

 private:
  struct Shared {
    std::atomic<bool> cancel{false};
    std::atomic<uint64_t> done{0}, total{0};
  };
  bool start_worker(JobKind kind, std::function<JobResult(Shared&)> work);
  void on_worker_done();
  void on_simulated(int code, bool cancelled, const QString& error);

  QFutureWatcher<JobResult> watcher_;
  std::shared_ptr<Shared> shared_;
  CommandRunner command_;
  QTimer poll_;
  QTemporaryDir temp_;
  Scenario simulated_;  // the scenario and variant the child simulates
  QString simulated_variant_;
  JobResult result_;
};

}  // namespace stratasim
