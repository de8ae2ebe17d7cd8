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

RingAllReduce::RingAllReduce(int participants)
    : n_(participants),
      progress_(std::make_unique<std::atomic<int64_t>[]>(static_cast<std::size_t>(participants))),
      buffers_(participants, nullptr),
      sizes_(participants, 0) {
  SS_ASSERT(participants >= 1, "a ring needs at least one participant");
  for (int d = 0; d < n_; ++d) progress_[d].store(0);
}

void RingAllReduce::wait_neighbours(int d, int64_t step) {
  for (const int q : {(d + n_ - 1) % n_, (d + 1) % n_}) {
    for (int64_t seen = progress_[q].load(std::memory_order_acquire); seen < step;
         seen = progress_[q].load(std::memory_order_acquire)) {
      progress_[q].wait(seen, std::memory_order_acquire);
    }
  }
}

void RingAllReduce::finish_step(int d) {
  progress_[d].fetch_add(1, std::memory_order_release);
  progress_[d].notify_all();
}

int RingAllReduce::allreduce(int d, std::span<float> buffer) {
  SS_ASSERT(d >= 0 && d < n_, "ring participant out of range");
  if (n_ == 1) return 0;
  const int64_t first = progress_[d].load(std::memory_order_relaxed);
  // Step 0 of the call: publish the buffer once the neighbours are done with the last one.
  wait_neighbours(d, first);
  buffers_[d] = buffer.data();
  sizes_[d] = buffer.size();
  finish_step(d);
  const int left = (d + n_ - 1) % n_;
  const std::size_t size = buffer.size();
  const auto segment = [&](int k) {  // [begin, end) of segment k (mod n), near-equal parts
    const int kk = ((k % n_) + n_) % n_;
    return std::pair{size * kk / n_, size * (kk + 1) / n_};
  };
  int steps = 0;
  for (int s = 0; s < 2 * (n_ - 1); ++s) {
    wait_neighbours(d, first + 1 + s);
    SS_ASSERT(sizes_[left] == size, "every ring participant all-reduces a buffer of equal size");
    const float* __restrict src = buffers_[left];
    float* __restrict dst = buffer.data();
    if (s < n_ - 1) {  // reduce-scatter
      const auto [lo, hi] = segment(d - 1 - s);
      for (std::size_t e = lo; e < hi; ++e) dst[e] += src[e];
    } else {  // all-gather
      const auto [lo, hi] = segment(d - (s - (n_ - 1)));
      for (std::size_t e = lo; e < hi; ++e) dst[e] = src[e];
    }
    finish_step(d);
    ++steps;
  }
  return steps;
}

namespace {

using Clock = std::chrono::steady_clock;

// A (chunk, bucket) whose gradient is final, handed from a rank to its communication thread;
// bucket -1 closes the queue.
struct ReadyBucket {
  int chunk, bucket;
};
class BucketQueue {
 public:
  void push(ReadyBucket b) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(b);
    }
    cv_.notify_one();
  }
  ReadyBucket pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty(); });
    const ReadyBucket b = items_.front();
    items_.pop_front();
    return b;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ReadyBucket> items_;
};

void check_config(const PipelineRuntimeConfig& cfg) {
  if (auto why = schedule_rule_violation(cfg.kind, cfg.stages, cfg.micro_batches, cfg.chunks)) {
    throw InputError(*why);
  }
  if (cfg.forward_flop.empty() || cfg.backward_flop.empty() || cfg.activation_elems < 1 ||
      cfg.queue_capacity < 0) {
    throw InputError("pipeline runtime: forward_flop and backward_flop need a value, "
                     "activation_elems >= 1 and queue_capacity >= 0");
  }
  if (cfg.dp < 1) {
    throw InputError("pipeline runtime: dp = " + std::to_string(cfg.dp) + " must be >= 1");
  }
  if (cfg.grad_elems < 0) {
    throw InputError("pipeline runtime: grad_elems = " + std::to_string(cfg.grad_elems) +
                     " must be >= 0");
  }
  if (cfg.dp_buckets < 1 || (cfg.grad_elems > 0 && cfg.dp_buckets > cfg.grad_elems)) {
    throw InputError("pipeline runtime: dp_buckets = " + std::to_string(cfg.dp_buckets) +
                     " must lie in [1, grad_elems = " + std::to_string(cfg.grad_elems) + "]");
  }
}

// Everything the workers of one run share; each worker writes only its own slots.
struct Run {
  const PipelineRuntimeConfig& cfg;
  PipelineRunResult& res;
  int p, m, vstages;
  // Per replica: fwd[i] carries activations from virtual stage i to i + 1, bwd[i] gradients
  // from i + 1 to i.
  std::vector<std::vector<std::unique_ptr<BoundedQueue>>> fwd, bwd;
  std::vector<std::unique_ptr<RingAllReduce>> rings;  // per pipeline rank, dp participants
  std::vector<double> checksum;                       // per worker
  Clock::time_point t0;

  double since(Clock::time_point t) const { return std::chrono::duration<double>(t - t0).count(); }
  std::pair<std::size_t, std::size_t> bucket_range(int chunk, int bucket) const {
    const auto g = static_cast<std::size_t>(cfg.grad_elems);
    const auto nb = static_cast<std::size_t>(cfg.dp_buckets);
    return {chunk * g + g * bucket / nb, chunk * g + g * (bucket + 1) / nb};
  }
  // Adds the gradient of the backward of (mb, virtual stage i) on replica d to one bucket.
  void accumulate(int d, int i, int mb, int chunk, int bucket, std::vector<float>& grad) const {
    const auto [lo, hi] = bucket_range(chunk, bucket);
    const std::size_t chunk_base = static_cast<std::size_t>(chunk) * cfg.grad_elems;
    for (std::size_t e = lo; e < hi; ++e) {
      const auto k = static_cast<long long>(e - chunk_base);
      grad[e] += static_cast<float>(((d + 1LL) * (mb + 1LL) + i + k) % 8);
    }
  }
  void allreduce(int w, ReadyBucket b) {
    const int r = w % p;
    const auto [lo, hi] = bucket_range(b.chunk, b.bucket);
    CommEvent ev{b.chunk, b.bucket, since(Clock::now()), 0, 0, static_cast<int64_t>(hi - lo)};
    ev.steps = rings[r]->allreduce(w / p, std::span(res.gradients[w]).subspan(lo, hi - lo));
    ev.end_s = since(Clock::now());
    res.comm[w].push_back(ev);
  }
  void worker(int w, BucketQueue* comm_queue, std::barrier<>& start_line);
  void forward(int w, const PipeOp& op, std::map<std::pair<int, int>, std::vector<float>>& stash,
               double& cpu);
};

void Run::forward(int w, const PipeOp& op, std::map<std::pair<int, int>, std::vector<float>>& stash,
                  double& cpu) {
  const int r = w % p, d = w / p, i = res.schedule.virtual_stage(r, op.chunk);
  std::vector<float> data;
  if (i == 0) {
    data.assign(cfg.activation_elems,
                0.01f * static_cast<float>(op.micro_batch + 1) + 1e-3f * static_cast<float>(d));
  } else {
    Message msg = fwd[d][i - 1]->pop();
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
  res.timeline.per_rank[w].push_back({op, since(start), since(end)});
  stash[{op.chunk, op.micro_batch}] = data;
  if (i + 1 < vstages) fwd[d][i]->push({op.micro_batch, std::move(data)});
}

void Run::worker(int w, BucketQueue* comm_queue, std::barrier<>& start_line) {
  const int r = w % p, d = w / p;
  const std::vector<PipeOp>& ops = res.schedule.per_rank[r];
  auto& out = res.timeline.per_rank[w];
  out.reserve(ops.size());
  // The rank's last backward of each chunk: its gradients are final after it.
  std::map<int, std::size_t> last_backward;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    if (ops[j].kind == PipeOpKind::kBackward) last_backward[ops[j].chunk] = j;
  }
  std::vector<ReadyBucket> ready;  // in the order the buckets became final
  // Activations of this rank's forwards awaiting their backward, keyed by (chunk, mb).
  std::map<std::pair<int, int>, std::vector<float>> stash;
  int peak = 0;
  double cpu = 0;
  start_line.arrive_and_wait();
  const long preempt0 = thread_preemptions();
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const PipeOp& op = ops[j];
    if (op.kind == PipeOpKind::kForward) {
      forward(w, op, stash, cpu);
      peak = std::max(peak, static_cast<int>(stash.size()));
      continue;
    }
    const int i = res.schedule.virtual_stage(r, op.chunk);
    auto it = stash.find({op.chunk, op.micro_batch});
    SS_ASSERT(it != stash.end(), "a backward follows its forward on the same rank");
    std::vector<float> data;
    if (i + 1 == vstages) {
      data = it->second;  // the loss gradient starts from the last activation
    } else {
      Message msg = bwd[d][i]->pop();
      SS_ASSERT(msg.micro_batch == op.micro_batch,
                "gradients arrive in the schedule's micro-batch order");
      data = std::move(msg.data);
    }
    const auto start = Clock::now();
    const double cpu0 = thread_cpu_s();
    // A backward in slices, one per bucket (the same work whether overlapped or not): after
    // slice b of a chunk's last backward, bucket b of that chunk is final.
    const bool last = last_backward[op.chunk] == j && cfg.grad_elems > 0;
    const int slices = cfg.dp_buckets;
    float y = 0;
    for (int b = 0; b < slices; ++b) {
      y += burn_flops(per_stage(cfg.backward_flop, i, "backward_flop") / slices,
                      data[0] + it->second[0]);
      if (cfg.grad_elems == 0) continue;
      accumulate(d, i, op.micro_batch, op.chunk, b, res.gradients[w]);
      if (last) {
        ready.push_back({op.chunk, b});
        if (comm_queue) comm_queue->push(ready.back());
      }
    }
    for (std::size_t k = 0; k < data.size(); ++k) {
      data[k] = 0.5f * data[k] + 0.25f * it->second[k] + 1e-3f * y;
    }
    cpu += thread_cpu_s() - cpu0;
    const auto end = Clock::now();
    out.push_back({op, since(start), since(end)});
    stash.erase(it);
    if (i > 0) {
      bwd[d][i - 1]->push({op.micro_batch, std::move(data)});
    } else {
      for (float x : data) checksum[w] += x;
    }
  }
  res.rank_peak_stash[w] = peak;
  const long preempt1 = thread_preemptions();
  res.rank_preemptions[w] = preempt0 < 0 || preempt1 < 0 ? -1 : preempt1 - preempt0;
  res.rank_busy_cpu_s[w] = thread_cpu_s() < 0 ? -1 : cpu;
  if (comm_queue) {
    comm_queue->push({-1, -1});
  } else if (cfg.dp > 1) {
    for (const ReadyBucket& b : ready) allreduce(w, b);
  }
}

void summarize(PipelineRunResult& res, const std::vector<double>& checksum) {
  const int workers = static_cast<int>(res.timeline.per_rank.size());
  double makespan = 0, iteration = 0;
  for (const auto& ops : res.timeline.per_rank) {
    for (const TimedOp& t : ops) makespan = std::max(makespan, t.end_s);
  }
  res.timeline.makespan_s = makespan;
  iteration = makespan;
  res.rank_busy_s.assign(workers, 0.0);
  res.rank_idle_fraction.assign(workers, 0.0);
  for (int w = 0; w < workers; ++w) {
    for (const TimedOp& t : res.timeline.per_rank[w]) res.rank_busy_s[w] += t.end_s - t.start_s;
    res.rank_idle_fraction[w] = makespan > 0 ? (makespan - res.rank_busy_s[w]) / makespan : 0.0;
    res.bubble_fraction += res.rank_idle_fraction[w] / workers;
    res.checksum += checksum[w];
    double comm = 0;
    for (const CommEvent& e : res.comm[w]) {
      comm += e.end_s - e.start_s;
      iteration = std::max(iteration, e.end_s);
    }
    res.allreduce_s = std::max(res.allreduce_s, comm);
  }
  res.iteration_s = iteration;
  res.allreduce_exposed_s = iteration - makespan;
}

}  // namespace

PipelineRunResult run_pipeline(const PipelineRuntimeConfig& cfg) {
  check_config(cfg);
  const int p = cfg.stages, m = cfg.micro_batches, dp = cfg.dp;
  PipelineRunResult res;
  res.schedule = make_schedule(cfg.kind, p, m, cfg.chunks);
  res.dp = dp;
  const int vstages = res.schedule.virtual_stages();
  for (const auto* w : {&cfg.forward_flop, &cfg.backward_flop}) {
    if (w->size() != 1 && static_cast<int>(w->size()) != vstages) {
      throw InputError("pipeline runtime: per-stage work needs 1 or p * v = " +
                       std::to_string(vstages) + " values, got " + std::to_string(w->size()));
    }
  }

  Run run{cfg, res, p, m, vstages, {}, {}, {}, {}, {}};
  const auto capacity = static_cast<std::size_t>(cfg.queue_capacity == 0 ? m : cfg.queue_capacity);
  run.fwd.resize(dp);
  run.bwd.resize(dp);
  for (int d = 0; d < dp; ++d) {
    for (int i = 0; i + 1 < vstages; ++i) {
      run.fwd[d].push_back(std::make_unique<BoundedQueue>(capacity));
      run.bwd[d].push_back(std::make_unique<BoundedQueue>(capacity));
    }
  }
  for (int r = 0; r < p; ++r) run.rings.push_back(std::make_unique<RingAllReduce>(dp));
  const int workers = dp * p;
  res.timeline.per_rank.resize(workers);
  res.rank_peak_stash.assign(workers, 0);
  res.rank_busy_cpu_s.assign(workers, -1);
  res.rank_preemptions.assign(workers, -1);
  res.comm.resize(workers);
  res.gradients.assign(
      workers, std::vector<float>(static_cast<std::size_t>(cfg.chunks) * cfg.grad_elems, 0.0f));
  run.checksum.assign(workers, 0.0);
  const bool comm_threads = cfg.overlap_dp && dp > 1 && cfg.grad_elems > 0;
  std::vector<BucketQueue> comm_queues(comm_threads ? workers : 0);
  std::vector<std::exception_ptr> errors(2 * workers);
  std::barrier start_line(workers + 1);
  {
    std::vector<std::jthread> threads;
    threads.reserve(2 * workers);
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        try {
          run.worker(w, comm_threads ? &comm_queues[w] : nullptr, start_line);
        } catch (...) {
          errors[w] = std::current_exception();  // SS_ASSERT failures abort before reaching here
        }
      });
      if (!comm_threads) continue;
      threads.emplace_back([&, w] {
        try {
          for (ReadyBucket b = comm_queues[w].pop(); b.bucket >= 0; b = comm_queues[w].pop()) {
            run.allreduce(w, b);
          }
        } catch (...) {
          errors[workers + w] = std::current_exception();
        }
      });
    }
    run.t0 = Clock::now();
    start_line.arrive_and_wait();
  }  // joins every thread
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  summarize(res, run.checksum);
  return res;
}

StageDurations measured_stage_durations(const PipelineRunResult& result) {
  const PipelineSchedule& s = result.schedule;
  const int vstages = s.virtual_stages();
  StageDurations d;
  d.forward_s.assign(vstages, 0.0);
  d.backward_s.assign(vstages, 0.0);
  const int workers = static_cast<int>(result.timeline.per_rank.size());
  for (int w = 0; w < workers; ++w) {
    for (const TimedOp& t : result.timeline.per_rank[w]) {
      auto& sum = t.op.kind == PipeOpKind::kForward ? d.forward_s : d.backward_s;
      sum[s.virtual_stage(w % s.stages, t.op.chunk)] += t.end_s - t.start_s;
    }
  }
  // Each virtual stage runs every micro-batch once per direction on every replica.
  const double runs = static_cast<double>(s.micro_batches) * (workers / s.stages);
  for (int i = 0; i < vstages; ++i) {
    d.forward_s[i] /= runs;
    d.backward_s[i] /= runs;
  }
  return d;
}

}  // namespace stratasim::kernels
