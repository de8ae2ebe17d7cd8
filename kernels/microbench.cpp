#include "kernels/microbench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/huge_pages.h"
#include "kernels/pipeline_runtime.h"
#include "kernels/stream.h"
#include "kernels/threads.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

#ifdef STRATASIM_KERNELS_OPENMP
#include <omp.h>
#endif

namespace stratasim::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Timed arrays live on huge pages, as the kernel cases' do (kernels/huge_pages.h).
BenchVec filled(std::size_t n, float value) { return BenchVec(n, value); }

std::string mib_text(double bytes) {
  return std::to_string(static_cast<long long>(bytes / kMiB + 0.5)) + "MiB";
}

// Results of timed loops are added here (atomically), so no timed work is dead code.
float g_sink = 0;

// C = A B in double, blocked like kernels/gemm.cpp (OpenMP over row blocks, i-k-j order so the
// inner loop streams a row of B and C).
void gemm_fp64(const double* a, const double* b, double* c, int n) {
  constexpr int kBlock = 64;
#pragma omp parallel for schedule(dynamic)
  for (int i0 = 0; i0 < n; i0 += kBlock) {
    const int i1 = std::min(n, i0 + kBlock);
    for (int i = i0; i < i1; ++i) std::fill_n(c + std::size_t(i) * n, n, 0.0);
    for (int p0 = 0; p0 < n; p0 += kBlock) {
      const int p1 = std::min(n, p0 + kBlock);
      for (int i = i0; i < i1; ++i) {
        double* __restrict ci = c + std::size_t(i) * n;
        for (int p = p0; p < p1; ++p) {
          const double av = a[std::size_t(i) * n + p];
          const double* __restrict bp = b + std::size_t(p) * n;
          for (int j = 0; j < n; ++j) ci[j] += av * bp[j];
        }
      }
    }
  }
}

// One store per thread into its own slot: the least work that keeps a parallel region alive.
int g_slots[256];
void touch_own_slot() {
#ifdef STRATASIM_KERNELS_OPENMP
  g_slots[omp_get_thread_num() % 256] += 1;
#else
  g_slots[0] += 1;
#endif
}

// Per thread: kLanes independent chains x = x * a + b over an L1-resident array, `passes` times.
void vector_work(std::int64_t passes) {
  constexpr int kLanes = 1024;  // 4 KiB per thread
#pragma omp parallel
  {
    alignas(64) float x[kLanes];
    for (int l = 0; l < kLanes; ++l) x[l] = 0.001f * static_cast<float>(l);
    const float a = 0.9999f, b = 0.0001f;
    for (std::int64_t it = 0; it < passes; ++it) {
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) x[l] = x[l] * a + b;
    }
    float s = 0;
    for (int l = 0; l < kLanes; ++l) s += x[l];
#pragma omp atomic
    g_sink += s;
  }
}

}  // namespace

Measurement time_repeats(Measurement m, const std::function<void()>& fn, RepeatPolicy policy) {
  fn();  // warm-up: page faults, caches, thread pool start
  std::vector<double> times;
  double total = 0;
  while (static_cast<int>(times.size()) < policy.max_repeats &&
         (static_cast<int>(times.size()) < policy.min_repeats || total < policy.min_total_s)) {
    times.push_back(seconds_of(fn));
    total += times.back();
  }
  m.seconds = median(times);
  m.min_seconds = *std::min_element(times.begin(), times.end());
  m.repeats = static_cast<int>(times.size());
  return m;
}

Measurement bench_copy(std::size_t elems, RepeatPolicy policy) {
  BenchVec a = filled(elems, 1.0f), b = filled(elems, 0.0f);
  Measurement m{
      .family = "copy", .form = "", .dtype = "fp32", .shape = mib_text(4.0 * elems) + "/array"};
  m.bytes = 8.0 * static_cast<double>(elems);
  return time_repeats(
      m, [&] { stream_copy(a, b); }, policy);
}

Measurement bench_triad(std::size_t elems, RepeatPolicy policy) {
  BenchVec a = filled(elems, 0.0f), b = filled(elems, 1.0f), c = filled(elems, 2.0f);
  Measurement m{
      .family = "triad", .form = "", .dtype = "fp32", .shape = mib_text(4.0 * elems) + "/array"};
  m.bytes = 12.0 * static_cast<double>(elems);
  m.vector_flop = 2.0 * static_cast<double>(elems);
  return time_repeats(
      m, [&] { stream_triad(a, b, c, 3.0f); }, policy);
}

Measurement bench_gemm_fp32(int n, RepeatPolicy policy) {
  const std::size_t nn = std::size_t(n) * n;
  BenchVec a = filled(nn, 0.5f), b = filled(nn, 0.25f), c = filled(nn, 0.0f);
  Measurement m{
      .family = "gemm_peak", .form = "", .dtype = "fp32", .shape = std::to_string(n) + "^3"};
  m.matmul_flop = 2.0 * n * double(n) * n;
  m.bytes = 3.0 * 4.0 * double(nn);
  return time_repeats(
      m,
      [&] {
        gemm(a, b, c, GemmShape{n, n, n});
      },
      policy);
}

Measurement bench_gemm_fp64(int n, RepeatPolicy policy) {
  const std::size_t nn = std::size_t(n) * n;
  BenchVecD a(nn, 0.5), b(nn, 0.25), c(nn, 0.0);
  Measurement m{
      .family = "gemm_peak", .form = "", .dtype = "fp64", .shape = std::to_string(n) + "^3"};
  m.matmul_flop = 2.0 * n * double(n) * n;
  m.bytes = 3.0 * 8.0 * double(nn);
  return time_repeats(
      m, [&] { gemm_fp64(a.data(), b.data(), c.data(), n); }, policy);
}

Measurement bench_vector(double flop_per_thread, RepeatPolicy policy) {
  const auto passes = static_cast<std::int64_t>(flop_per_thread / (2.0 * 1024));
  Measurement m{.family = "vector",
                .form = "",
                .dtype = "fp32",
                .shape = std::to_string(passes) + " passes x 1024 x " +
                         std::to_string(kernel_threads()) + " threads"};
  m.vector_flop = 2.0 * 1024 * double(passes) * kernel_threads();
  return time_repeats(
      m, [&] { vector_work(passes); }, policy);
}

Measurement bench_serial(double flop_per_thread, RepeatPolicy policy) {
  // The pipeline runtime's own op loop with no schedule in the way: one stage, dp = threads
  // replicas (every thread busy, as the ranks of a pipeline are), no gradients. Each op's time
  // is taken from the runtime's timeline, so the runtime's per-op costs are included.
  const int threads = kernel_threads();
  Measurement m{.family = "serial",
                .form = "",
                .dtype = "fp32",
                .shape = format_count(flop_per_thread) + " FLOP per op, 1 stage x " +
                         std::to_string(threads) + " replicas"};
  m.vector_flop = flop_per_thread;
  PipelineRuntimeConfig c;
  c.kind = ScheduleKind::kGPipe;
  c.stages = 1;
  c.micro_batches = 4;
  c.forward_flop = {flop_per_thread};
  c.backward_flop = {flop_per_thread};
  c.dp = threads;
  c.grad_elems = 0;
  (void)run_pipeline(c);  // warm-up
  std::vector<double> per_op;
  double total = 0;
  while (static_cast<int>(per_op.size()) < policy.max_repeats &&
         (static_cast<int>(per_op.size()) < policy.min_repeats || total < policy.min_total_s)) {
    const PipelineRunResult run = run_pipeline(c);
    const StageDurations d = measured_stage_durations(run);
    per_op.push_back(0.5 * (d.forward_s[0] + d.backward_s[0]));
    total += run.timeline.makespan_s;
  }
  m.seconds = median(per_op);
  m.min_seconds = *std::min_element(per_op.begin(), per_op.end());
  m.repeats = static_cast<int>(per_op.size());
  return m;
}

Measurement bench_launch(int regions) {
  Measurement m{.family = "launch",
                .form = "",
                .dtype = "fp32",
                .shape = "empty parallel region, " + std::to_string(kernel_threads()) + " threads"};
  m.launches = 1;
  std::vector<double> per_region;
  double total = 0;  // at most ~0.5 s: on a loaded machine a region can take milliseconds
  for (int batch = 0; batch < 7 && (batch < 3 || total < 0.5); ++batch) {
    const double s = seconds_of([&] {
      for (int r = 0; r < regions; ++r) {
#pragma omp parallel
        touch_own_slot();  // an empty region would be removed by the compiler
      }
    });
    per_region.push_back(s / regions);
    total += s;
  }
  m.seconds = median(per_region);
  m.min_seconds = *std::min_element(per_region.begin(), per_region.end());
  m.repeats = static_cast<int>(per_region.size());
  return m;
}

Measurement bench_sync(int barriers) {
  Measurement m{.family = "sync",
                .form = "",
                .dtype = "fp32",
                .shape = "barrier, " + std::to_string(kernel_threads()) + " threads"};
  m.launches = 0;
  std::vector<double> per_barrier;
  double total = 0;
  for (int batch = 0; batch < 7 && (batch < 3 || total < 0.5); ++batch) {
    double inside = 0;
#pragma omp parallel
    {
#pragma omp barrier
      const auto t0 = Clock::now();
      for (int b = 0; b < barriers; ++b) {
#pragma omp barrier
      }
#ifdef STRATASIM_KERNELS_OPENMP
      if (omp_get_thread_num() == 0)
        inside = std::chrono::duration<double>(Clock::now() - t0).count();
#else
      inside = std::chrono::duration<double>(Clock::now() - t0).count();
#endif
    }
    per_barrier.push_back(inside / barriers);
    total += inside;
  }
  m.seconds = median(per_barrier);
  m.min_seconds = *std::min_element(per_barrier.begin(), per_barrier.end());
  m.repeats = static_cast<int>(per_barrier.size());
  return m;
}

void keep_fastest(std::vector<Measurement>& best, const std::vector<Measurement>& round) {
  if (best.empty()) {
    best = round;
    return;
  }
  SS_ASSERT(best.size() == round.size(), "rounds measure the same items in the same order");
  for (std::size_t i = 0; i < best.size(); ++i) {
    best[i].min_seconds = std::min(best[i].min_seconds, round[i].min_seconds);
    best[i].seconds = std::min(best[i].seconds, round[i].seconds);
    best[i].repeats += round[i].repeats;
  }
}

namespace {

std::vector<Measurement> microbenchmark_round(bool quick, const Progress& progress,
                                              const std::string& round) {
  std::vector<Measurement> out;
  const auto step = [&](const Measurement& m) {
    out.push_back(m);
    if (progress) progress(round + m.family + " " + m.dtype + " " + m.shape);
  };
  const RepeatPolicy policy{3, quick ? 5 : 15, quick ? 0.05 : 0.2};
  step(bench_launch(quick ? 50 : 500));
  step(bench_sync(quick ? 50 : 500));
  // Arrays of 1 MiB stay in the last-level cache; 64-256 MiB arrays (128-768 MiB per call)
  // do not (measured on the 2-core development VM: copy falls from ~40 to ~4 GB/s between 8
  // and 32 MiB per array).
  const std::vector<std::size_t> cache_elems = {std::size_t(1) << 18};
  const std::vector<std::size_t> dram_elems =
      quick ? std::vector<std::size_t>{std::size_t(1) << 23}
            : std::vector<std::size_t>{std::size_t(1) << 24, std::size_t(3) << 23,
                                       std::size_t(1) << 25, std::size_t(1) << 26};
  for (const auto& [set, where] :
       {std::pair{&cache_elems, " cache"}, std::pair{&dram_elems, " dram"}}) {
    for (std::size_t e : *set) {
      Measurement c = bench_copy(e, policy);
      c.shape += where;
      step(c);
      Measurement t = bench_triad(e, policy);
      t.shape += where;
      step(t);
    }
  }
  for (int n : quick ? std::vector<int>{64, 128, 256}
                     : std::vector<int>{96, 128, 192, 256, 384, 512, 768}) {
    step(bench_gemm_fp32(n, policy));
  }
  for (int n : quick ? std::vector<int>{64, 128} : std::vector<int>{128, 256, 512}) {
    step(bench_gemm_fp64(n, policy));
  }
  for (double f : quick ? std::vector<double>{2e6, 2e7} : std::vector<double>{2e7, 1e8, 4e8}) {
    step(bench_vector(f, policy));
  }
  for (double f : quick ? std::vector<double>{5e5, 8e6} : std::vector<double>{2e6, 1e7, 4e7}) {
    step(bench_serial(f, policy));
  }
  return out;
}

}  // namespace

std::vector<Measurement> run_microbenchmarks(bool quick, const Progress& progress) {
  std::vector<Measurement> best;
  const int rounds = quick ? 1 : kRounds;
  for (int r = 0; r < rounds; ++r) {
    const std::string tag = "round " + std::to_string(r + 1) + "/" + std::to_string(rounds) + ": ";
    keep_fastest(best, microbenchmark_round(quick, progress, tag));
  }
  return best;
}

std::vector<Measurement> run_machine_check(bool quick) {
  const RepeatPolicy policy{3, quick ? 5 : 15, quick ? 0.05 : 0.2};
  Measurement copy = bench_copy(quick ? std::size_t(1) << 23 : std::size_t(1) << 25, policy);
  copy.shape += " dram";
  return {copy, bench_gemm_fp32(quick ? 128 : 512, policy),
          bench_vector(quick ? 2e7 : 1e8, policy)};
}

}  // namespace stratasim::kernels
