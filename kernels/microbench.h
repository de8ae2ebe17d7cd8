// CPU microbenchmarks for `stratasim calibrate` (issue 4): what the hardware model's parameters
// are fitted to. Each returns a Measurement (kernels/measurement.h) with its work counted by
// the same rules as the kernel cases (kernel_cases.h), so the fitted roofline predicts both.
//
//   "copy", "triad"   STREAM (McCalpin 1995) over arrays of `elems` floats: bytes 8 and 12 per
//                     element (write-allocate traffic not counted); launches 1.
//   "gemm_peak"       C = A B, n x n x n: matmul_flop 2 n^3. dtype "fp32" is the repo's blocked
//                     GEMM (kernels/gemm.h); "fp64" a blocked double GEMM of the same structure
//                     defined here. A CPU without native bf16/fp16 arithmetic in these kernels
//                     has no other dtype to measure (the kernels compute in fp32; AVX512_BF16
//                     dot products are not used), so calibrate leaves bf16/fp16 out of "peak".
//   "vector"          independent multiply-add chains over a per-thread array that fits in L1,
//                     on every thread: vector_flop 2 per element update, bytes 0.
//   "serial"          burn_flops ops as the pipeline runtime (pipeline_runtime.h) runs them,
//                     with no schedule in the way: one stage, one replica per thread (dp =
//                     threads, so every thread is busy), no gradients; vector_flop is one op's
//                     FLOP, seconds the mean op duration of a run (median/min over runs).
//                     Measured inside the runtime because its ops ran ~15% slower than the same
//                     burn_flops call in a bare loop on the development VM (cause not found).
//   "launch"          an OpenMP parallel region doing one store per thread (fork + join; a
//                     truly empty region is removed by the compiler): seconds per region.
//   "sync"            one OpenMP barrier inside a running region: seconds per barrier.
// Timing: one warm-up call, then repeats until both `min_repeats` calls and `min_total_s`
// seconds are done (at most `max_repeats`); seconds = median, min_seconds = fastest.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "kernels/measurement.h"

namespace stratasim::kernels {

struct RepeatPolicy {
  int min_repeats = 3;
  int max_repeats = 15;
  double min_total_s = 0.2;
};

// Times `fn` by the policy above and fills seconds, min_seconds and repeats of `m`.
Measurement time_repeats(Measurement m, const std::function<void()>& fn, RepeatPolicy policy);

Measurement bench_copy(std::size_t elems, RepeatPolicy policy);
Measurement bench_triad(std::size_t elems, RepeatPolicy policy);
Measurement bench_gemm_fp32(int n, RepeatPolicy policy);
Measurement bench_gemm_fp64(int n, RepeatPolicy policy);
Measurement bench_vector(double flop_per_thread, RepeatPolicy policy);
Measurement bench_serial(double flop_per_thread, RepeatPolicy policy);
Measurement bench_launch(int regions);  // seconds per empty region (median over batches)
Measurement bench_sync(int barriers);   // seconds per barrier (median over batches)

// Rounds: a shared machine's speed drifts over tens of seconds (the 2-core development VM:
// +-30% between runs a minute apart), so the full sets run kRounds times over and keep, per
// item, the fastest repeat (min_seconds) and the fastest round's median (seconds):
// calibration and validation then both see the machine's undisturbed state. The VM also
// alternates between a fast and a slow regime for one to ten seconds at a time (kernel_cases.h);
// 5 rounds (was 3) give the serial benchmark and the pipeline validation that replays it
// (`validate --runtime` runs kRounds rounds) more chances to be timed in a fast phase: with 3, a
// validate once timed every schedule in slow phases (-7..-15%, pipeline MAPE 11.5%).
inline constexpr int kRounds = 5;
// Merges one round into `best` (same items, same order; empty best: takes the round).
void keep_fastest(std::vector<Measurement>& best, const std::vector<Measurement>& round);

// The full set calibrate runs (quick: fewer and smaller sizes, one round, for tests). Memory sizes
// span last-level-cache-resident arrays (a few MiB) and arrays far beyond it (64-256 MiB each); the
// shape field says which ("cache" / "dram").
using Progress = std::function<void(std::string_view step)>;
std::vector<Measurement> run_microbenchmarks(bool quick, const Progress& progress);

// The few microbenchmarks `validate` re-runs (after each round of its kernel cases) to see
// whether the machine still runs at its calibrated speed: DRAM copy (arrays of 128 MiB; quick: 32 MiB), fp32 GEMM n = 512 (quick:
// 128) and the vector multiply-add rate, with the shapes calibrate gives them. A shared
// machine's drift between calibration and validation shows in every kernel's error; this
// separates it from the model's own error.
std::vector<Measurement> run_machine_check(bool quick);

}  // namespace stratasim::kernels
