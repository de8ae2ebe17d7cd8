#include "kernels/pipeline_runtime.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#ifdef __linux__
#include <sys/resource.h>
#include <time.h>
#endif

#include "sim/core/error.h"
#include "strategies/pipeline/schedules.h"

namespace stratasim::kernels {
namespace {

struct Message {
  int32_t micro_batch;
  std::vector<float> data;
};

// FIFO with a capacity: push blocks while full, pop blocks while empty.
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {}

  void push(Message msg) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(msg));
    not_empty_.notify_one();
  }

  Message pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !items_.empty(); });
    Message msg = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return msg;
  }

 private:
  std::size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Message> items_;
};

// This thread's CPU time in seconds, and its involuntary context switches so far (-1: unknown).
double thread_cpu_s() {
#ifdef __linux__
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return ts.tv_sec + 1e-9 * ts.tv_nsec;
#endif
  return -1;
}
long thread_preemptions() {
#ifdef __linux__
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
  return -1;
}

double per_stage(const std::vector<double>& v, int vstage, const char* what) {
  if (v.size() == 1) return v[0];
  SS_ASSERT(vstage < static_cast<int>(v.size()), what);
  return v[vstage];
}

}  // namespace

float burn_flops(double flop, float seed) {
  // 8 independent chains of x = x * a + b (2 FLOP each) per iteration: 16 FLOP. x converges to
  // b / (1 - a) = 1, so no value overflows or becomes subnormal.
  constexpr int kLanes = 8;
  const auto iters = static_cast<long long>(flop / (2.0 * kLanes));
  const float a = 0.9999f, b = 0.0001f;
  float x[kLanes];
  for (int l = 0; l < kLanes; ++l) x[l] = seed + 0.125f * static_cast<float>(l);
  for (long long it = 0; it < iters; ++it) {
    for (int l = 0; l < kLanes; ++l) x[l] = x[l] * a + b;
  }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += x[l];
  return sum;
}

PipelineRunResult run_pipeline(const PipelineRuntimeConfig& cfg) {
  const int p = cfg.stages, m = cfg.micro_batches, v = cfg.chunks;
  if (auto why = schedule_rule_violation(cfg.kind, p, m, v)) throw InputError(*why);
  if (cfg.forward_flop.empty() || cfg.backward_flop.empty() || cfg.activation_elems < 1 ||
      cfg.queue_capacity < 0) {
    throw InputError("pipeline runtime: forward_flop and backward_flop need a value, "
                     "activation_elems >= 1 and queue_capacity >= 0");
  }

  PipelineRunResult res;
  res.schedule = make_schedule(cfg.kind, p, m, v);
  const PipelineSchedule& s = res.schedule;
  const int vstages = s.virtual_stages();
  for (const auto* w : {&cfg.forward_flop, &cfg.backward_flop}) {
    if (w->size() != 1 && static_cast<int>(w->size()) != vstages) {
      throw InputError("pipeline runtime: per-stage work needs 1 or p * v = " +
                       std::to_string(vstages) + " values, got " + std::to_string(w->size()));
    }
  }

  const auto capacity = static_cast<std::size_t>(cfg.queue_capacity == 0 ? m : cfg.queue_capacity);
  // fwd[i]: activations from virtual stage i to i + 1; bwd[i]: gradients from i + 1 to i.
  std::vector<std::unique_ptr<BoundedQueue>> fwd, bwd;
  for (int i = 0; i + 1 < vstages; ++i) {
    fwd.push_back(std::make_unique<BoundedQueue>(capacity));
    bwd.push_back(std::make_unique<BoundedQueue>(capacity));
  }

  res.timeline.per_rank.resize(p);
  res.rank_peak_stash.assign(p, 0);
  res.rank_busy_cpu_s.assign(p, -1);
  res.rank_preemptions.assign(p, -1);
  std::vector<double> rank_checksum(p, 0.0);
  std::vector<std::exception_ptr> errors(p);
  std::barrier start_line(p + 1);
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0;  // written by the main thread before it arrives at the barrier

  auto rank_main = [&](int r) {
    try {
      auto& out = res.timeline.per_rank[r];
      out.reserve(s.per_rank[r].size());
      // Activations of this rank's forwards awaiting their backward, keyed by (chunk, mb).
      std::map<std::pair<int, int>, std::vector<float>> stash;
      int peak = 0;
      double cpu = 0;
      start_line.arrive_and_wait();
      const long preempt0 = thread_preemptions();
      const auto since = [&](Clock::time_point t) {
        return std::chrono::duration<double>(t - t0).count();
      };
      for (const PipeOp& op : s.per_rank[r]) {
        const int i = s.virtual_stage(r, op.chunk);
        std::vector<float> data;
        if (op.kind == PipeOpKind::kForward) {
          if (i == 0) {
            data.assign(cfg.activation_elems, 0.01f * static_cast<float>(op.micro_batch + 1));
          } else {
            Message msg = fwd[i - 1]->pop();
            SS_ASSERT(msg.micro_batch == op.micro_batch,
                      "activations arrive in the schedule's micro-batch order");
            data = std::move(msg.data);
          }
          const auto start = Clock::now();
          const double cpu0 = thread_cpu_s();
          const float y = burn_flops(per_stage(cfg.forward_flop, i, "forward_flop"), data[0]);
          for (float& x : data) x = 0.5f * x + 1e-3f * y;
          cpu += thread_cpu_s() - cpu0;
          const auto end = Clock::now();
          out.push_back({op, since(start), since(end)});
          stash[{op.chunk, op.micro_batch}] = data;
          peak = std::max(peak, static_cast<int>(stash.size()));
          if (i + 1 < vstages) fwd[i]->push({op.micro_batch, std::move(data)});
        } else {
          auto it = stash.find({op.chunk, op.micro_batch});
          SS_ASSERT(it != stash.end(), "a backward follows its forward on the same rank");
          if (i + 1 == vstages) {
            data = it->second;  // the loss gradient starts from the last activation
          } else {
            Message msg = bwd[i]->pop();
            SS_ASSERT(msg.micro_batch == op.micro_batch,
                      "gradients arrive in the schedule's micro-batch order");
            data = std::move(msg.data);
          }
          const auto start = Clock::now();
          const double cpu0 = thread_cpu_s();
          const float y = burn_flops(per_stage(cfg.backward_flop, i, "backward_flop"),
                                     data[0] + it->second[0]);
          for (std::size_t k = 0; k < data.size(); ++k) {
            data[k] = 0.5f * data[k] + 0.25f * it->second[k] + 1e-3f * y;
          }
          cpu += thread_cpu_s() - cpu0;
          const auto end = Clock::now();
          out.push_back({op, since(start), since(end)});
          stash.erase(it);
          if (i > 0) {
            bwd[i - 1]->push({op.micro_batch, std::move(data)});
          } else {
            for (float x : data) rank_checksum[r] += x;
          }
        }
      }
      res.rank_peak_stash[r] = peak;
      const long preempt1 = thread_preemptions();
      res.rank_preemptions[r] = preempt0 < 0 || preempt1 < 0 ? -1 : preempt1 - preempt0;
      res.rank_busy_cpu_s[r] = thread_cpu_s() < 0 ? -1 : cpu;
    } catch (...) {
      errors[r] = std::current_exception();  // SS_ASSERT failures abort before reaching here
    }
  };

  {
    std::vector<std::jthread> threads;
    threads.reserve(p);
    for (int r = 0; r < p; ++r) threads.emplace_back(rank_main, r);
    t0 = Clock::now();
    start_line.arrive_and_wait();
  }  // joins every rank
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  double makespan = 0;
  for (const auto& ops : res.timeline.per_rank) {
    for (const TimedOp& t : ops) makespan = std::max(makespan, t.end_s);
  }
  res.timeline.makespan_s = makespan;
  res.rank_busy_s.assign(p, 0.0);
  res.rank_idle_fraction.assign(p, 0.0);
  for (int r = 0; r < p; ++r) {
    for (const TimedOp& t : res.timeline.per_rank[r]) res.rank_busy_s[r] += t.end_s - t.start_s;
    res.rank_idle_fraction[r] = makespan > 0 ? (makespan - res.rank_busy_s[r]) / makespan : 0.0;
    res.bubble_fraction += res.rank_idle_fraction[r] / p;
    res.checksum += rank_checksum[r];
  }
  return res;
}

StageDurations measured_stage_durations(const PipelineRunResult& result) {
  const PipelineSchedule& s = result.schedule;
  const int vstages = s.virtual_stages();
  StageDurations d;
  d.forward_s.assign(vstages, 0.0);
  d.backward_s.assign(vstages, 0.0);
  for (int r = 0; r < static_cast<int>(result.timeline.per_rank.size()); ++r) {
    for (const TimedOp& t : result.timeline.per_rank[r]) {
      auto& sum = t.op.kind == PipeOpKind::kForward ? d.forward_s : d.backward_s;
      sum[s.virtual_stage(r, t.op.chunk)] += t.end_s - t.start_s;
    }
  }
  // Each virtual stage runs every micro-batch once per direction.
  for (int i = 0; i < vstages; ++i) {
    d.forward_s[i] /= s.micro_batches;
    d.backward_s[i] /= s.micro_batches;
  }
  return d;
}

}  // namespace stratasim::kernels
