// Scaled dot-product attention on the GPU (kernels/attention.h), Q, K, V, O as [bh, s, d].
// fused: FlashAttention-style (Dao et al. 2022, Alg. 1) with fp32 SIMT arithmetic. A 128-thread
//   block owns 32 query rows (warp w: rows w, w+4, ..., w+28) and streams 32-key tiles of K and V
//   through shared memory; lane j scores key j against each of its warp's rows, the row max and
//   sum are kept online (running max m, running sum l, accumulators rescaled by exp(m - m_new)),
//   and P V accumulates in registers (lane owns columns lane, lane+32, ...). Tiles entirely above
//   the causal diagonal are skipped; the s x s scores never reach memory.
// unfused: S = Q K^T (tiled GEMM, batched over bh) into a bh x s x s workspace, the fused
//   softmax rows in place (scale and causal mask), then O = P V (tiled GEMM).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/gemm_tile.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

constexpr int kRows = 32, kKeys = 32, kThreads = 128;

template <int D>
constexpr int flash_smem_floats() {
  return kRows * D + kKeys * (D + 1) + kKeys * D + kRows * (kKeys + 1);
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    flash_attention(const float* q, const float* k, const float* v, float* o, int s, int d,
                    float scale, bool causal) {
  extern __shared__ float smem[];
  float* qs = smem;                  // [kRows][D], zero-padded beyond d
  float* ks = qs + kRows * D;        // [kKeys][D + 1]: lane-indexed rows, no bank clash
  float* vs = ks + kKeys * (D + 1);  // [kKeys][D]
  float* ps = vs + kKeys * D;        // [kRows][kKeys + 1]: probabilities of the tile
  constexpr int kCols = D / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int q0 = blockIdx.x * kRows;
  const std::size_t base = std::size_t(blockIdx.y) * s * d;
  for (int e = threadIdx.x; e < kRows * D; e += kThreads) {
    const int r = e / D, c = e % D;
    qs[e] = (q0 + r < s && c < d) ? q[base + std::size_t(q0 + r) * d + c] : 0.0f;
  }
  float acc[8][kCols], m[8], l[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[i][c] = 0.0f;
  }
  const int key_end = causal ? min(q0 + kRows, s) : s;  // keys any row of the block may see
  for (int k0 = 0; k0 < key_end; k0 += kKeys) {
    __syncthreads();  // the previous tile is consumed (and, first time, qs is stored)
    for (int e = threadIdx.x; e < kKeys * D; e += kThreads) {
      const int r = e / D, c = e % D;
      const bool in = k0 + r < s && c < d;
      const std::size_t at = base + std::size_t(k0 + r) * d + c;
      ks[r * (D + 1) + c] = in ? k[at] : 0.0f;
      vs[r * D + c] = in ? v[at] : 0.0f;
    }
    __syncthreads();
    const int key = k0 + lane;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int r = warp + 4 * i, qi = q0 + r;
      float sc = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D; ++kk) sc = fmaf(qs[r * D + kk], ks[lane * (D + 1) + kk], sc);
      const bool masked = key >= s || (causal && key > qi);
      sc = masked ? -INFINITY : sc * scale;
      const float m_new = fmaxf(m[i], warp_max(sc));
      const float p = masked ? 0.0f : expf(sc - m_new);  // m_new >= sc is finite here
      const float alpha = m[i] == -INFINITY ? 0.0f : expf(m[i] - m_new);  // acc, l are 0 then
      l[i] = l[i] * alpha + warp_sum(p);
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[i][c] *= alpha;
      ps[r * (kKeys + 1) + lane] = p;
    }
    __syncwarp();  // each warp reads only its own rows of ps
    for (int j = 0; j < kKeys; ++j) {
      const float* vr = vs + j * D;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float p = ps[(warp + 4 * i) * (kKeys + 1) + j];
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[i][c] = fmaf(p, vr[lane + 32 * c], acc[i][c]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int qi = q0 + warp + 4 * i;
    if (qi >= s) continue;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + 32 * c;
      if (col < d) o[base + std::size_t(qi) * d + col] = acc[i][c] / l[i];
    }
  }
}

template <int D>
void launch_flash(const float* q, const float* k, const float* v, float* o, AttentionShape sh) {
  constexpr int bytes = flash_smem_floats<D>() * sizeof(float);  // 53 KiB at D = 128: opt in
  check_cuda(
      cudaFuncSetAttribute(flash_attention<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
      "cudaFuncSetAttribute");
  const dim3 grid((sh.s + kRows - 1) / kRows, sh.bh);
  flash_attention<D>
      <<<grid, kThreads, bytes>>>(q, k, v, o, sh.s, sh.d, 1.0f / std::sqrt(float(sh.d)), sh.causal);
}

// workspace: bh * s * s floats (the scores), unfused only.
void run(Form f, const float* q, const float* k, const float* v, float* o, float* workspace,
         AttentionShape sh) {
  if (sh.d < 1 || sh.d > kMaxAttentionHeadDim) {
    throw std::runtime_error("CUDA attention: head dimension " + std::to_string(sh.d) +
                             " outside 1.." + std::to_string(kMaxAttentionHeadDim));
  }
  if (f == Form::kFused) {
    if (sh.d <= 32) {
      launch_flash<32>(q, k, v, o, sh);
    } else if (sh.d <= 64) {
      launch_flash<64>(q, k, v, o, sh);
    } else {
      launch_flash<128>(q, k, v, o, sh);
    }
  } else {
    const long long sd = (long long)sh.s * sh.d, ss = (long long)sh.s * sh.s;
    GemmArgs qk;  // S = Q K^T: m = s, n = s, k = d, B = K (s x d) transposed
    qk.a = q, qk.b = k, qk.c = workspace, qk.m = sh.s, qk.n = sh.s, qk.k = sh.d;
    qk.batch_stride_a = sd, qk.batch_stride_b = sd, qk.batch_stride_c = ss;
    launch_gemm<Epilogue::kNone, true>(qk, sh.bh);
    launch_softmax_rows(workspace, workspace, std::size_t(sh.bh) * sh.s, sh.s,
                        1.0f / std::sqrt(float(sh.d)), sh.causal);
    GemmArgs pv;  // O = P V: m = s, n = d, k = s
    pv.a = workspace, pv.b = v, pv.c = o, pv.m = sh.s, pv.n = sh.d, pv.k = sh.s;
    pv.batch_stride_a = ss, pv.batch_stride_b = sd, pv.batch_stride_c = sd;
    launch_gemm<Epilogue::kNone, false>(pv, sh.bh);
  }
  check_launch("attention");
}

// The CPU's counts (kernels/kernel_cases.h) for the fused form. The unfused GPU form differs
// from the CPU's: the GEMM reads K transposed in place (no K^T pass: 3 launches, not 4) and
// P V runs over the full P, masked zeros included (the CPU's skips the masked half).
Measurement work(Form f, AttentionShape sh) {
  Measurement m = counted(KernelFamily::kAttention, {sh.bh, sh.s, sh.d, 0}, f);
  if (f == Form::kUnfused) {
    const double bh = sh.bh, s = sh.s, d = sh.d;
    const double valid = bh * s * (s + 1) / 2, full = bh * s * s, io = bh * s * d;
    m.matmul_flop = 2 * 2 * d * full;
    // Q K^T: Q, K in, S out; softmax rows: unmasked S in, S out; P V: P, V in, O out
    m.bytes = kF32 * ((2 * io + full) + (valid + full) + (full + 2 * io));
    m.launches = 3;
  }
  return m;
}

}  // namespace

void attention_gpu(Form f, std::span<const float> q, std::span<const float> k,
                   std::span<const float> v, std::span<float> o, AttentionShape s) {
  const DeviceBuffer<float> dq(q), dk(k), dv(v), dout(o.size());
  const DeviceBuffer<float> ws(f == Form::kUnfused ? std::size_t(s.bh) * s.s * s.s : 1);
  run(f, dq.get(), dk.get(), dv.get(), dout.get(), ws.get(), s);
  dout.download(o);
}

std::vector<Measurement> bench_attention(AttentionShape s, const Timing& t) {
  const std::string shape = shape_text(KernelCase{KernelFamily::kAttention, {s.bh, s.s, s.d, 0}});
  const std::size_t n = std::size_t(s.bh) * s.s * s.d;
  const DeviceBuffer<float> q(n), k(n), v(n), fused(n), unfused(n),
      ws(std::size_t(s.bh) * s.s * s.s);
  fill_uniform(q, 41), fill_uniform(k, 42), fill_uniform(v, 43);
  run(Form::kFused, q.get(), k.get(), v.get(), fused.get(), nullptr, s);
  run(Form::kUnfused, q.get(), k.get(), v.get(), unfused.get(), ws.get(), s);
  require_forms_agree("attention", shape, "O", fused.to_host(), unfused.to_host(),
                      twice(attention_tolerance(s.s, s.d)));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* o = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts =
        time_on_device([&] { run(f, q.get(), k.get(), v.get(), o, ws.get(), s); }, t, "attention");
    out.push_back(timed(work(f, s), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
