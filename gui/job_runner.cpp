#include "gui/job_runner.h"

#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <thread>

#include "gui/result_file.h"
#include "sim/core/error.h"
#include "sim/core/text.h"
#include "strategies/lowering/lower.h"

namespace stratasim {
namespace {

JobResult evaluate_job(const Scenario& sc) {
  JobResult r{JobKind::kEvaluate, evaluate_variants_with_timelines(sc), {}, {}, false};
  r.summary = QString("%1: %2 variants").arg(QString::fromStdString(sc.name)).arg(r.rows.size());
  return r;
}

JobResult search_job(const Scenario& sc, int top_k, Objective objective, std::atomic<bool>& cancel,
                     std::atomic<uint64_t>& done, std::atomic<uint64_t>& total) {
  SearchOptions o;
  o.top_k = top_k;
  o.objective = objective;
  // Leave one core to the GUI thread.
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  o.cancel = &cancel;
  total = sc.search.size();
  o.progress = [&done](uint64_t d, uint64_t) { done = d; };
  const SearchResult s = search_scenario(sc, o);
  JobResult r{JobKind::kSearch, evaluate_candidates(sc, s.top), {}, {}, s.cancelled};
  r.summary = QString::fromStdString(format_text(
      "%s: search %s after %llu of %llu points, %llu feasible, top %zu by %s shown (%.1f s)",
      sc.name.c_str(), s.cancelled ? "cancelled" : "done", (unsigned long long)s.points,
      (unsigned long long)sc.search.size(), (unsigned long long)s.feasible, r.rows.size(),
      std::string(objective_name(objective)).c_str(), s.seconds));
  return r;
}

}  // namespace

JobRunner::JobRunner(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<JobResult>::finished, this, &JobRunner::on_worker_done);
  connect(&command_, &CommandRunner::line, this, &JobRunner::message);
  connect(&command_, &CommandRunner::finished, this, &JobRunner::on_simulated);
  poll_.setInterval(50);
  connect(&poll_, &QTimer::timeout, this, [this] { emit progress(percent()); });
}

JobRunner::~JobRunner() {
  cancel();
  watcher_.waitForFinished();  // the worker reads the shared state until it returns
}

bool JobRunner::busy() const { return watcher_.isRunning() || command_.busy(); }

int JobRunner::percent() const {
  if (!shared_ || shared_->total == 0) return -1;
  return static_cast<int>(100.0 * double(shared_->done) / double(shared_->total));
}

bool JobRunner::start_worker(JobKind kind, std::function<JobResult(Shared&)> work) {
  if (busy()) return false;
  result_ = JobResult{kind, {}, {}, {}, false};
  shared_ = std::make_shared<Shared>();
  std::shared_ptr<Shared> shared = shared_;
  watcher_.setFuture(QtConcurrent::run([shared, kind, work = std::move(work)] {
    try {
      return work(*shared);
    } catch (const std::exception& e) {
      return JobResult{kind, {}, {}, QString::fromStdString(e.what()), false};
    }
  }));
  poll_.start();
  return true;
}

bool JobRunner::start_evaluate(const Scenario& sc) {
  return start_worker(JobKind::kEvaluate, [sc](Shared&) { return evaluate_job(sc); });
}

bool JobRunner::start_search(const Scenario& sc, int top_k, Objective objective) {
  return start_worker(JobKind::kSearch, [sc, top_k, objective](Shared& s) {
    return search_job(sc, top_k, objective, s.cancel, s.done, s.total);
  });
}

bool JobRunner::start_simulate(const Scenario& sc, const QString& scenario_file,
                               const QString& variant) {
  if (busy()) return false;
  result_ = JobResult{JobKind::kSimulate, {}, {}, {}, false};
  shared_.reset();
  simulated_ = sc;
  simulated_variant_ = variant;
  QStringList args{"simulate", scenario_file, "--json", temp_.filePath("simulate.json")};
  if (!variant.isEmpty()) args << "--variant" << variant;
  QFile::remove(temp_.filePath("simulate.json"));
  poll_.start();
  return command_.start(args);
}

void JobRunner::cancel() {
  if (shared_) shared_->cancel = true;
  command_.cancel();
}

void JobRunner::on_worker_done() {
  poll_.stop();
  result_ = watcher_.result();
  emit finished(result_.error.isEmpty());
}

void JobRunner::on_simulated(int code, bool cancelled, const QString& error) {
  poll_.stop();
  result_.cancelled = cancelled;
  if (cancelled) {
    result_.error = "simulation cancelled";
  } else if (!error.isEmpty() || code != 0) {
    result_.error = !error.isEmpty() ? error : command_.output().trimmed();
    if (result_.error.isEmpty()) result_.error = QString("stratasim simulate exited with %1").arg(code);
  } else {
    try {
      const ResultFile file = read_result_file(temp_.filePath("simulate.json").toStdString());
      const std::string name = simulated_variant_.isEmpty() ? simulated_.variants.front().first
                                                            : simulated_variant_.toStdString();
      // The rows must outlive the reference find_variant returns (a temporary would not).
      const std::vector<VariantResult> rows = evaluate_variants(simulated_);
      const VariantResult& v = find_variant(rows, name, simulated_.file);
      VariantResult row{name + " (simgrid)", v.strategy, v.plan, file.entries.front().prediction, ""};
      if (!row.feasible()) throw InputError(simulated_.file, "variants", name, "is infeasible");
      result_.rows.push_back(std::move(row));
      result_.summary = QString::fromStdString(name + ": simulated with SimGrid");
    } catch (const std::exception& e) {
      result_.error = QString::fromStdString(e.what());
    }
  }
  emit finished(result_.error.isEmpty());
}

}  // namespace stratasim
