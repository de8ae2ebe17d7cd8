// Fused vs unfused CPU kernels at large sizes, against the machine's measured memory bandwidth:
//   build/bench/bench_kernels [REPS] [--dram-only | --no-dram]
// For every kernel family: the best-of-REPS time (default 5, after one warm-up; fused and unfused
// run alternately) of each form and the speedup; for the memory-bound fused kernels the effective
// bandwidth (compulsory bytes: every input read once, every output written once) as a fraction
// of the STREAM copy bandwidth, the better of a measurement before and one after the kernels
// (issue 4's target: >= 70%, PASS/FAIL printed); for the compute-bound ones (GEMM, conv,
// attention) the FLOP rate. The main table's working sets (64-256 MiB) may be partly cache-
// resident on a CPU with a large L3 (300 MiB here); a second table (dram_gate) reruns the
// memory-bound kernels with working sets of at least 1 GiB against a copy of 1 GiB.
// Whether a kernel is memory-bound depends on the machine: the gate also times each fused
// kernel on a cache-resident working set (<= 2.2 MiB) and takes that rate as the kernel's own
// compute roof. Where the roof is at or above the copy bandwidth the kernel is memory-bound here
// and must reach 70% of copy (PASS/FAIL, exit status 1 on a FAIL); where it is below, no
// implementation of that arithmetic could reach the copy bandwidth on this machine: the row says
// "compute", and its fraction of the roof (min of copy and in-cache rate) is printed beside.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/bias_dropout_residual.h"
#include "kernels/conv_bn_relu.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/image_pipeline.h"
#include "kernels/layernorm.h"
#include "kernels/lstm_cell.h"
#include "kernels/softmax.h"
#include "kernels/stream.h"
#include "kernels/threads.h"
#include "sim/core/units.h"

using namespace stratasim;
using namespace stratasim::kernels;

namespace {

int g_reps = 5;

double time_s(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double best_time_s(const std::function<void()>& fn) {
  fn();  // warm-up: page faults, caches
  double best = 1e300;
  for (int r = 0; r < g_reps; ++r) best = std::min(best, time_s(fn));
  return best;
}

// Best times of two forms run alternately, so that load from other processes on a shared
// machine falls on both alike.
struct PairTimes {
  double fused_s = 1e300, unfused_s = 1e300;
};
PairTimes best_pair_s(const std::function<void()>& fused, const std::function<void()>& unfused) {
  fused(), unfused();  // warm-up
  PairTimes t;
  for (int r = 0; r < g_reps; ++r) {
    t.fused_s = std::min(t.fused_s, time_s(fused));
    t.unfused_s = std::min(t.unfused_s, time_s(unfused));
  }
  return t;
}

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Row {
  std::string name, shape;
  PairTimes t;
  double bytes = 0;  // compulsory bytes of the fused kernel; 0 for compute-bound kernels
  double flop = 0;   // FLOP of the fused kernel; 0 for memory-bound kernels
};

double g_copy_Bps = 0;
constexpr double kTargetFraction = 0.70;  // issue 4: fused memory-bound kernels vs copy

void print_row(const Row& r) {
  std::printf("%-24s %-22s %10.3f %10.3f %8.2fx", r.name.c_str(), r.shape.c_str(),
              r.t.fused_s / kMilli, r.t.unfused_s / kMilli, r.t.unfused_s / r.t.fused_s);
  if (r.bytes > 0) {  // fraction of the better of the two copy measurements
    const double bw = r.bytes / r.t.fused_s;
    const double fraction = bw / g_copy_Bps;
    // No verdict here (these working sets may sit partly in L3): the DRAM table below has it.
    std::printf("  %8.2f GB/s  %5.1f%% of copy\n", bw / kGB, 100.0 * fraction);
  } else {
    std::printf("  %8.2f GFLOP/s\n", r.flop / r.t.fused_s / kGiga);
  }
  std::fflush(stdout);
}

// Measured before and after the kernels; the larger copy figure is the reference (the machine
// may be shared, and a kernel is not credited for bandwidth others took from the copy).
void bench_stream(const char* when) {
  const std::size_t n = std::size_t(1) << 25;  // 128 MiB per array, far beyond any cache
  std::vector<float> a = random_vec(n, 1), b(n), c = random_vec(n, 2);
  const double copy_s = best_time_s([&] { stream_copy(a, b); });
  const double triad_s = best_time_s([&] { stream_triad(a, b, c, 3.0f); });
  g_copy_Bps = std::max(g_copy_Bps, 2.0 * 4 * n / copy_s);
  std::printf("memory bandwidth %s (%zu floats/array): copy %.2f GB/s, triad %.2f GB/s\n", when, n,
              2.0 * 4 * n / copy_s / kGB, 3.0 * 4 * n / triad_s / kGB);
}

Row bench_gemm() {
  const GemmShape s{1024, 1024, 1024};
  const auto a = random_vec(std::size_t(s.m) * s.k, 3), b = random_vec(std::size_t(s.k) * s.n, 4);
  const auto bias = random_vec(s.n, 5);
  std::vector<float> c(std::size_t(s.m) * s.n);
  return {"gemm+bias+gelu", "1024^3",
          best_pair_s([&] { gemm_bias_gelu_fused(a, b, bias, c, s); },
                      [&] { gemm_bias_gelu_unfused(a, b, bias, c, s); }),
          0, 2.0 * s.m * s.n * s.k};
}

Row bench_dropout() {
  const int rows = 4096, cols = 4096;
  const std::size_t n = std::size_t(rows) * cols;
  const auto x = random_vec(n, 6), res = random_vec(n, 7), bias = random_vec(cols, 8);
  std::vector<float> out(n);
  const DropoutParams d{0.1f, 1};
  return {"bias+dropout+residual", "4096x4096",
          best_pair_s([&] { bias_dropout_residual_fused(x, bias, res, out, rows, cols, d); },
                      [&] { bias_dropout_residual_unfused(x, bias, res, out, rows, cols, d); }),
          3.0 * 4 * n};
}

Row bench_layernorm() {
  const LayerNormShape s{16384, 1024, 1e-5f};
  const std::size_t n = std::size_t(s.rows) * s.cols;
  const auto x = random_vec(n, 9), r = random_vec(n, 10);
  const auto g = random_vec(s.cols, 11), b = random_vec(s.cols, 12);
  std::vector<float> h(n), y(n);
  return {"residual+layernorm", "16384x1024",
          best_pair_s([&] { add_layernorm_fused(x, r, g, b, h, y, s); },
                      [&] { add_layernorm_unfused(x, r, g, b, h, y, s); }),
          4.0 * 4 * n};
}

Row bench_softmax(bool causal) {
  const SoftmaxShape s{16, 1024, 0.125f, causal};
  const std::size_t n = std::size_t(s.batch) * s.s * s.s;
  const auto x = random_vec(n, 13, -8.0f, 8.0f);
  std::vector<float> y(n);
  // Causal: the fused kernel reads only the lower triangle (s(s+1)/2 per matrix), writes all.
  const double read = causal ? double(s.batch) * s.s * (s.s + 1) / 2 : double(n);
  return {causal ? "scale+mask+softmax" : "scale+softmax (no mask)", "16x1024x1024",
          best_pair_s([&] { scaled_masked_softmax_fused(x, y, s); },
                      [&] { scaled_masked_softmax_unfused(x, y, s); }),
          4.0 * (read + n)};
}

Row bench_attention() {
  const AttentionShape s{8, 1024, 64, true};
  const std::size_t n = std::size_t(s.bh) * s.s * s.d;
  const auto q = random_vec(n, 14), k = random_vec(n, 15), v = random_vec(n, 16);
  std::vector<float> o(n), ws(attention_unfused_workspace(s));
  // QK^T and PV over the causal half: 2 * 2 * bh * s^2 * d / 2.
  return {"attention (causal)", "bh8 s1024 d64",
          best_pair_s([&] { attention_fused(q, k, v, o, s); },
                      [&] { attention_unfused(q, k, v, o, ws, s); }),
          0, 2.0 * s.bh * double(s.s) * s.s * s.d};
}

Row bench_conv() {
  const ConvShape s{1, 64, 64, 128, 128};
  const auto x = random_vec(std::size_t(s.n) * s.c * s.h * s.w, 17);
  const auto w = random_vec(std::size_t(s.k) * s.c * 9, 18);
  const auto g = random_vec(s.k, 19), b = random_vec(s.k, 20), m = random_vec(s.k, 21);
  const auto var = random_vec(s.k, 22, 0.5f, 2.0f);
  const BatchNorm bn{g, b, m, var, 1e-5f};
  std::vector<float> y(std::size_t(s.n) * s.k * s.h * s.w);
  return {"conv3x3+bn+relu", "1x64->64x128x128",
          best_pair_s([&] { conv_bn_relu_fused(x, w, bn, y, s); },
                      [&] { conv_bn_relu_unfused(x, w, bn, y, s); }),
          0, 2.0 * 9 * s.c * s.k * double(s.h) * s.w * s.n};
}

Row bench_image() {
  const ImageShape s{4096, 4096};
  const std::size_t n = std::size_t(s.h) * s.w;
  const auto in = random_vec(n, 23, 0.0f, 1.0f);
  std::vector<float> out(n), ws(image_pipeline_unfused_workspace(s));
  return {"blur+sobel+sharpen", "4096x4096",
          best_pair_s([&] { image_pipeline_fused(in, out, s); },
                      [&] { image_pipeline_unfused(in, out, ws, s); }),
          2.0 * 4 * n};
}

Row bench_lstm() {
  const LstmShape s{4096, 1024};
  const std::size_t n = std::size_t(s.batch) * s.hidden;
  const auto gates = random_vec(4 * n, 24, -4.0f, 4.0f), bias = random_vec(4 * s.hidden, 25);
  const auto c = random_vec(n, 26);
  std::vector<float> co(n), ho(n), ws(lstm_cell_unfused_workspace(s));
  return {"lstm cell gates", "4096x1024",
          best_pair_s([&] { lstm_cell_fused(gates, bias, c, co, ho, s); },
                      [&] { lstm_cell_unfused(gates, bias, c, co, ho, ws, s); }),
          7.0 * 4 * n};
}

// ---- DRAM-resident bandwidth gate: every working set >= 1 GiB, beyond any cache. ----

// Uniform values in [lo, hi) from a hash of the index: filling GiBs with mt19937 takes seconds.
std::vector<float> hashed_vec(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                              float hi = 1.0f) {
  std::vector<float> v(n);
  const float step = (hi - lo) / 4294967296.0f;
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) {
    v[i] = lo + step * float(hash32(std::uint32_t(i) * 2654435761u ^ seed));
  }
  return v;
}

// Best times of a kernel's two forms and of a 1 GiB copy, the three run in turn in every round,
// so that load from other processes on a shared machine falls on the kernel and on the copy it is
// compared with alike.
struct GateTimes {
  double fused_s = 1e300, unfused_s = 1e300, copy_Bps = 0;
};
std::function<void()> g_dram_copy;  // copies 1 GiB (dram_gate sets it)
double g_dram_copy_B = 0;            // bytes it moves (read + write)

GateTimes best_triple(const std::function<void()>& fused, const std::function<void()>& unfused) {
  fused(), unfused(), g_dram_copy();  // warm-up
  GateTimes t;
  for (int r = 0; r < g_reps; ++r) {
    t.copy_Bps = std::max(t.copy_Bps, g_dram_copy_B / time_s(g_dram_copy));
    t.fused_s = std::min(t.fused_s, time_s(fused));
    t.unfused_s = std::min(t.unfused_s, time_s(unfused));
  }
  return t;
}

struct GateRow {
  std::string name, shape;
  GateTimes t;
  double bytes = 0;      // compulsory bytes of the fused kernel
  double working_B = 0;  // bytes the fused kernel's arrays occupy
  double cached_Bps = 0;  // the fused kernel's compulsory bytes per second in cache
};

// The fused kernel's rate on a cache-resident working set: calls in a loop of >= 20 ms (so the
// OpenMP fork and join are amortized), best of the rounds.
double cached_rate_Bps(const std::function<void()>& fused, double bytes_per_call) {
  fused();
  int calls = 1;
  while (time_s([&] { for (int i = 0; i < calls; ++i) fused(); }) < 0.02) calls *= 2;
  double best = 1e300;
  for (int r = 0; r < g_reps; ++r) {
    best = std::min(best, time_s([&] { for (int i = 0; i < calls; ++i) fused(); }) / calls);
  }
  return bytes_per_call / best;
}

GateRow gate_dropout() {
  const int rows = 24576, cols = 4096;  // 3 arrays of 384 MiB
  const std::size_t n = std::size_t(rows) * cols;
  const auto x = hashed_vec(n, 6), res = hashed_vec(n, 7), bias = hashed_vec(cols, 8);
  std::vector<float> out(n);
  const DropoutParams d{0.1f, 1};
  GateRow row{"bias+dropout+residual", "24576x4096",
              best_triple([&] { bias_dropout_residual_fused(x, bias, res, out, rows, cols, d); },
                          [&] { bias_dropout_residual_unfused(x, bias, res, out, rows, cols, d); }),
              3.0 * 4 * n, 3.0 * 4 * n};
  const int small_rows = 48;  // 3 arrays of 768 KiB
  const std::size_t m = std::size_t(small_rows) * cols;
  const std::span<const float> xs(x.data(), m), rs(res.data(), m);
  const std::span<float> os(out.data(), m);
  row.cached_Bps = cached_rate_Bps(
      [&] { bias_dropout_residual_fused(xs, bias, rs, os, small_rows, cols, d); }, 3.0 * 4 * m);
  return row;
}

GateRow gate_layernorm() {
  const LayerNormShape s{65536, 1024, 1e-5f};  // 4 arrays of 256 MiB
  const std::size_t n = std::size_t(s.rows) * s.cols;
  const auto x = hashed_vec(n, 9), r = hashed_vec(n, 10);
  const auto g = hashed_vec(s.cols, 11), b = hashed_vec(s.cols, 12);
  std::vector<float> h(n), y(n);
  GateRow row{"residual+layernorm", "65536x1024",
              best_triple([&] { add_layernorm_fused(x, r, g, b, h, y, s); },
                          [&] { add_layernorm_unfused(x, r, g, b, h, y, s); }),
              4.0 * 4 * n, 4.0 * 4 * n};
  const LayerNormShape small{128, s.cols, s.eps};  // 4 arrays of 512 KiB
  const std::size_t m = std::size_t(small.rows) * small.cols;
  const std::span<const float> xs(x.data(), m), rs(r.data(), m);
  const std::span<float> hs(h.data(), m), ys(y.data(), m);
  row.cached_Bps =
      cached_rate_Bps([&] { add_layernorm_fused(xs, rs, g, b, hs, ys, small); }, 4.0 * 4 * m);
  return row;
}

GateRow gate_softmax(bool causal) {
  const SoftmaxShape s{128, 1024, 0.125f, causal};  // 2 arrays of 512 MiB
  const std::size_t n = std::size_t(s.batch) * s.s * s.s;
  const auto x = hashed_vec(n, 13, -8.0f, 8.0f);
  std::vector<float> y(n);
  const auto read_of = [&](SoftmaxShape sh) {
    const double all = double(sh.batch) * sh.s * sh.s;
    return causal ? double(sh.batch) * sh.s * (sh.s + 1) / 2 : all;
  };
  GateRow row{causal ? "scale+mask+softmax" : "scale+softmax (no mask)", "128x1024x1024",
              best_triple([&] { scaled_masked_softmax_fused(x, y, s); },
                          [&] { scaled_masked_softmax_unfused(x, y, s); }),
              4.0 * (read_of(s) + n), 2.0 * 4 * n};
  // In cache: four 256 x 256 matrices (x and y of 1 MiB), with the same mask (rows of a
  // quarter of the length, the same work per element; whole matrices per thread, so that the
  // causal rows' growing work is balanced as in the large shape).
  const SoftmaxShape small{4, 256, s.scale, causal};
  const std::size_t m = std::size_t(small.batch) * small.s * small.s;
  const std::span<const float> xs(x.data(), m);
  const std::span<float> ys(y.data(), m);
  row.cached_Bps = cached_rate_Bps([&] { scaled_masked_softmax_fused(xs, ys, small); },
                                   4.0 * (read_of(small) + m));
  return row;
}

GateRow gate_image() {
  const ImageShape s{16384, 8192};  // in and out of 512 MiB (the unfused workspace: 1 GiB more)
  const std::size_t n = std::size_t(s.h) * s.w;
  const auto in = hashed_vec(n, 23, 0.0f, 1.0f);
  std::vector<float> out(n), ws(image_pipeline_unfused_workspace(s));
  GateRow row{"blur+sobel+sharpen", "16384x8192",
              best_triple([&] { image_pipeline_fused(in, out, s); },
                          [&] { image_pipeline_unfused(in, out, ws, s); }),
              2.0 * 4 * n, 2.0 * 4 * n};
  const ImageShape small{128, 1024};  // in and out of 512 KiB, two 64-row strips
  const std::size_t m = std::size_t(small.h) * small.w;
  const std::span<const float> is(in.data(), m);
  const std::span<float> os(out.data(), m);
  row.cached_Bps = cached_rate_Bps([&] { image_pipeline_fused(is, os, small); }, 2.0 * 4 * m);
  return row;
}

GateRow gate_lstm() {
  const LstmShape s{49152, 1024};  // gates 768 MiB, c, c' and h' 192 MiB each
  const std::size_t n = std::size_t(s.batch) * s.hidden;
  const auto gates = hashed_vec(4 * n, 24, -4.0f, 4.0f), bias = hashed_vec(4 * s.hidden, 25);
  const auto c = hashed_vec(n, 26);
  std::vector<float> co(n), ho(n), ws(lstm_cell_unfused_workspace(s));
  GateRow row{"lstm cell gates", "49152x1024",
              best_triple([&] { lstm_cell_fused(gates, bias, c, co, ho, s); },
                          [&] { lstm_cell_unfused(gates, bias, c, co, ho, ws, s); }),
              7.0 * 4 * n, 7.0 * 4 * n};
  const LstmShape small{64, s.hidden};  // gates 1 MiB, c, c' and h' 256 KiB each
  const std::size_t m = std::size_t(small.batch) * small.hidden;
  const std::span<const float> gs(gates.data(), 4 * m), cs(c.data(), m);
  const std::span<float> cos(co.data(), m), hos(ho.data(), m);
  row.cached_Bps =
      cached_rate_Bps([&] { lstm_cell_fused(gs, bias, cs, cos, hos, small); }, 7.0 * 4 * m);
  return row;
}

// Returns how many kernels fall below the target.
int dram_gate() {
  std::printf("\nDRAM-resident (working sets >= 1 GiB), fraction of a 1 GiB copy timed in the "
              "same rounds, target %.0f%%:\n",
              100.0 * kTargetFraction);
  const std::size_t copy_n = std::size_t(1) << 27;  // 512 MiB per array, 1 GiB in all
  std::vector<float> copy_a = hashed_vec(copy_n, 1), copy_b(copy_n);
  g_dram_copy = [&] { stream_copy(copy_a, copy_b); };
  g_dram_copy_B = 2.0 * 4 * copy_n;
  std::vector<GateRow> rows;
  for (const auto& bench : std::vector<std::function<GateRow()>>{
           gate_dropout, gate_layernorm, [] { return gate_softmax(true); },
           [] { return gate_softmax(false); }, gate_image, gate_lstm}) {
    rows.push_back(bench());
  }
  std::printf("%-24s %-14s %8s %10s %10s %8s %10s %8s %7s %8s %8s\n", "kernel", "shape",
              "work GiB", "fused GB/s", "copy GB/s", "of copy", "cache GB/s", "bound", "of roof",
              "speedup", "target");
  int failed = 0;
  for (const GateRow& r : rows) {
    const double bw = r.bytes / r.t.fused_s, fraction = bw / r.t.copy_Bps;
    const bool memory_bound = r.cached_Bps >= r.t.copy_Bps;
    const double roof = std::min(r.t.copy_Bps, r.cached_Bps);
    const bool pass = fraction >= kTargetFraction;
    failed += memory_bound && !pass ? 1 : 0;
    std::printf("%-24s %-14s %8.2f %10.2f %10.2f %7.1f%% %10.2f %8s %6.1f%% %7.2fx %8s\n",
                r.name.c_str(), r.shape.c_str(), r.working_B / kGiB, bw / kGB,
                r.t.copy_Bps / kGB, 100.0 * fraction, r.cached_Bps / kGB,
                memory_bound ? "memory" : "compute", 100.0 * bw / roof,
                r.t.unfused_s / r.t.fused_s, pass ? "PASS" : memory_bound ? "FAIL" : "n/a");
  }
  std::printf("bound: memory where the fused kernel's in-cache rate reaches the copy bandwidth "
              "(the 70%% target applies), compute where it does not (of roof: fraction of the "
              "smaller of the two)\n");
  std::fflush(stdout);
  g_dram_copy = nullptr;
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  bool cached = true, dram = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dram-only") cached = false;
    else if (a == "--no-dram") dram = false;
    else g_reps = std::max(1, std::atoi(argv[i]));
  }
  std::printf("stratasim kernels, CPU, %d threads, best of %d\n", kernel_threads(), g_reps);
  if (!cached) return dram_gate() > 0 ? 1 : 0;
  bench_stream("before");
  std::vector<Row> rows;
  for (const auto& bench : std::vector<std::function<Row()>>{
           bench_gemm, bench_dropout, bench_layernorm, [] { return bench_softmax(true); },
           [] { return bench_softmax(false); }, bench_attention, bench_conv, bench_image,
           bench_lstm}) {
    rows.push_back(bench());
  }
  bench_stream("after");
  std::printf("\n%-24s %-22s %10s %10s %9s  %s\n", "kernel", "shape", "fused ms", "unfused ms",
              "speedup", "fused rate");
  for (const Row& r : rows) print_row(r);
  return dram && dram_gate() > 0 ? 1 : 0;
}
