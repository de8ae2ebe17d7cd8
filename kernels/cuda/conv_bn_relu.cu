// 3x3 convolution + batch norm + ReLU on the GPU (kernels/conv_bn_relu.h), NCHW, stride 1, zero
// padding 1. A 16 x 16-thread block computes a 16 x 16 pixel tile for 16 output channels (one
// pixel, 16 accumulators per thread), staging 8 input channels of the 18 x 18 input halo and
// their weights in shared memory at a time. Batch norm is folded to y * scale + shift with
// scale = gamma / sqrt(var + eps), shift = beta - mean * scale, as on the CPU.
// fused: the folded batch norm and ReLU are applied to the accumulators (one write of y).
// unfused: the convolution writes y, then a batch-norm kernel and a ReLU kernel pass over it.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

constexpr int kTile = 16, kOutCh = 16, kInCh = 8, kHalo = kTile + 2;

struct BnArgs {
  const float *gamma, *beta, *mean, *var;
  float eps;
};

__device__ __forceinline__ void bn_fold(const BnArgs& bn, int k, float& scale, float& shift) {
  scale = bn.gamma[k] / sqrtf(bn.var[k] + bn.eps);
  shift = bn.beta[k] - bn.mean[k] * scale;
}

template <bool kEpilogue>
__global__ void __launch_bounds__(kTile* kTile)
    conv3x3_kernel(const float* x, const float* w, float* y, BnArgs bn, ConvShape s) {
  __shared__ float in_s[kInCh][kHalo][kHalo];
  __shared__ float w_s[kOutCh][kInCh][9];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
  const int groups = (s.k + kOutCh - 1) / kOutCh;
  const int img = blockIdx.z / groups, k0 = (blockIdx.z % groups) * kOutCh;
  const std::size_t plane = std::size_t(s.h) * s.w;
  float acc[kOutCh] = {};
  for (int ch0 = 0; ch0 < s.c; ch0 += kInCh) {
    for (int e = threadIdx.x; e < kInCh * kHalo * kHalo; e += kTile * kTile) {
      const int cc = e / (kHalo * kHalo), rr = (e / kHalo) % kHalo, col = e % kHalo;
      const int ch = ch0 + cc, r = r0 + rr - 1, c = c0 + col - 1;
      in_s[cc][rr][col] = (ch < s.c && r >= 0 && r < s.h && c >= 0 && c < s.w)
                              ? x[(std::size_t(img) * s.c + ch) * plane + std::size_t(r) * s.w + c]
                              : 0.0f;
    }
    for (int e = threadIdx.x; e < kOutCh * kInCh * 9; e += kTile * kTile) {
      const int kk = e / (kInCh * 9), cc = (e / 9) % kInCh, t = e % 9;
      const int k = k0 + kk, ch = ch0 + cc;
      w_s[kk][cc][t] = (k < s.k && ch < s.c) ? w[(std::size_t(k) * s.c + ch) * 9 + t] : 0.0f;
    }
    __syncthreads();
    for (int cc = 0; cc < kInCh; ++cc) {
#pragma unroll
      for (int t = 0; t < 9; ++t) {
        const float v = in_s[cc][ty + t / 3][tx + t % 3];
#pragma unroll
        for (int kk = 0; kk < kOutCh; ++kk) acc[kk] = fmaf(v, w_s[kk][cc][t], acc[kk]);
      }
    }
    __syncthreads();
  }
  const int r = r0 + ty, c = c0 + tx;
  if (r >= s.h || c >= s.w) return;
#pragma unroll
  for (int kk = 0; kk < kOutCh; ++kk) {
    const int k = k0 + kk;
    if (k >= s.k) break;
    float v = acc[kk];
    if constexpr (kEpilogue) {
      float scale, shift;
      bn_fold(bn, k, scale, shift);
      v = fmaxf(v * scale + shift, 0.0f);
    }
    y[(std::size_t(img) * s.k + k) * plane + std::size_t(r) * s.w + c] = v;
  }
}

__global__ void bn_kernel(float* y, BnArgs bn, std::size_t total, std::size_t plane, int k_count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float scale, shift;
    bn_fold(bn, int((i / plane) % k_count), scale, shift);
    y[i] = y[i] * scale + shift;
  }
}

__global__ void relu_kernel(float* y, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = fmaxf(y[i], 0.0f);
}

void run(Form f, const float* x, const float* w, BnArgs bn, float* y, ConvShape s) {
  const dim3 grid((s.w + kTile - 1) / kTile, (s.h + kTile - 1) / kTile,
                  s.n * ((s.k + kOutCh - 1) / kOutCh));
  if (f == Form::kFused) {
    conv3x3_kernel<true><<<grid, kTile * kTile>>>(x, w, y, bn, s);
  } else {
    conv3x3_kernel<false><<<grid, kTile * kTile>>>(x, w, y, bn, s);
    const std::size_t plane = std::size_t(s.h) * s.w, total = plane * s.k * s.n;
    bn_kernel<<<grid_for(total, 256), 256>>>(y, bn, total, plane, s.k);
    relu_kernel<<<grid_for(total, 256), 256>>>(y, total);
  }
  check_launch("conv_bn_relu");
}

BnArgs bn_args(const float* g, const float* b, const float* m, const float* v, float eps) {
  return {g, b, m, v, eps};
}

}  // namespace

void conv_bn_relu_gpu(Form f, std::span<const float> x, std::span<const float> w,
                      const BatchNorm& bn, std::span<float> y, ConvShape s) {
  const DeviceBuffer<float> dx(x), dw(w), dg(bn.gamma), db(bn.beta), dm(bn.mean), dv(bn.var),
      dy(y.size());
  run(f, dx.get(), dw.get(), bn_args(dg.get(), db.get(), dm.get(), dv.get(), bn.eps), dy.get(), s);
  dy.download(y);
}

std::vector<Measurement> bench_conv_bn_relu(ConvShape s, const Timing& t) {
  const std::string shape = shape_text(KernelCase{KernelFamily::kConvBnRelu, {s.n, s.c, s.k, s.h}});
  const std::size_t out_n = std::size_t(s.n) * s.k * s.h * s.w;
  const DeviceBuffer<float> x(std::size_t(s.n) * s.c * s.h * s.w), w(9 * std::size_t(s.c) * s.k),
      g(s.k), b(s.k), m(s.k), v(s.k), fused(out_n), unfused(out_n);
  fill_uniform(x, 51), fill_uniform(w, 52), fill_uniform(g, 53), fill_uniform(b, 54);
  fill_uniform(m, 55), fill_uniform(v, 56, 0.5f, 2.0f);
  const BnArgs bn = bn_args(g.get(), b.get(), m.get(), v.get(), 1e-5f);
  run(Form::kFused, x.get(), w.get(), bn, fused.get(), s);
  run(Form::kUnfused, x.get(), w.get(), bn, unfused.get(), s);
  require_forms_agree("conv_bn_relu", shape, "y", fused.to_host(), unfused.to_host(),
                      twice(conv_tolerance(s.c)));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* y = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts =
        time_on_device([&] { run(f, x.get(), w.get(), bn, y, s); }, t, "conv_bn_relu");
    out.push_back(timed(counted(KernelFamily::kConvBnRelu, {s.n, s.c, s.k, s.h}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
