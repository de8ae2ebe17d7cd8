// Blur -> Sobel magnitude -> sharpen on the GPU (kernels/image_pipeline.h), reads clamped to the
// image edge at every stage. Each stage is one __device__ function of a pixel accessor, shared
// by both forms, so every pixel of every stage is the same expression in both.
// fused: a 256-thread block makes a 32 x 32 output tile in shared memory: the input with a
//   3-pixel halo (edge-clamped reads), blur on the tile + 2, Sobel on the tile + 1, sharpen on
//   the tile (halos recomputed by neighbouring blocks): only the input is read and only out is
//   written. Tile entries are addressed by image coordinates, so edge clamping is the same as
//   in the unfused form.
// unfused: three full-image kernels, the blurred and the edge images through global memory.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

constexpr int kTile = 32, kThreads = 256;

template <class Px>
__device__ __forceinline__ float blur_at(Px px) {
  return (px(-1, -1) + 2.0f * px(-1, 0) + px(-1, 1) + 2.0f * px(0, -1) + 4.0f * px(0, 0) +
          2.0f * px(0, 1) + px(1, -1) + 2.0f * px(1, 0) + px(1, 1)) /
         16.0f;
}
template <class Px>
__device__ __forceinline__ float sobel_at(Px px) {
  const float gx =
      px(-1, 1) + 2.0f * px(0, 1) + px(1, 1) - px(-1, -1) - 2.0f * px(0, -1) - px(1, -1);
  const float gy =
      px(1, -1) + 2.0f * px(1, 0) + px(1, 1) - px(-1, -1) - 2.0f * px(-1, 0) - px(-1, 1);
  return sqrtf(gx * gx + gy * gy);
}
template <class Px>
__device__ __forceinline__ float sharpen_at(Px px) {
  return 5.0f * px(0, 0) - px(-1, 0) - px(1, 0) - px(0, -1) - px(0, 1);
}

__device__ __forceinline__ int clampi(int v, int hi) { return min(max(v, 0), hi); }

enum class Stage { kBlur, kSobel, kSharpen };

template <Stage S, class Px>
__device__ __forceinline__ float stage_at(Px px) {
  if constexpr (S == Stage::kBlur) return blur_at(px);
  if constexpr (S == Stage::kSobel) return sobel_at(px);
  return sharpen_at(px);
}

// Fills dst (size n x n, image origin (r0, c0)) with stage S of src (image origin (sr0, sc0)) at
// every in-image pixel; src must hold every in-image pixel within one of dst's.
template <Stage S>
__device__ void tile_stage(const float* src, int sn, int sr0, int sc0, float* dst, int n, int r0,
                           int c0, ImageShape s) {
  for (int e = threadIdx.x; e < n * n; e += kThreads) {
    const int r = r0 + e / n, c = c0 + e % n;
    if (r < 0 || r >= s.h || c < 0 || c >= s.w) continue;
    dst[e] = stage_at<S>([&](int dr, int dc) {
      return src[(clampi(r + dr, s.h - 1) - sr0) * sn + (clampi(c + dc, s.w - 1) - sc0)];
    });
  }
}

__global__ void __launch_bounds__(kThreads)
    fused_kernel(const float* in, float* out, ImageShape s) {
  constexpr int kIn = kTile + 6, kB = kTile + 4, kE = kTile + 2;
  __shared__ float in_s[kIn * kIn], b_s[kB * kB], e_s[kE * kE];
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  for (int e = threadIdx.x; e < kIn * kIn; e += kThreads) {
    const int r = clampi(r0 - 3 + e / kIn, s.h - 1), c = clampi(c0 - 3 + e % kIn, s.w - 1);
    in_s[e] = in[std::size_t(r) * s.w + c];
  }
  __syncthreads();
  tile_stage<Stage::kBlur>(in_s, kIn, r0 - 3, c0 - 3, b_s, kB, r0 - 2, c0 - 2, s);
  __syncthreads();
  tile_stage<Stage::kSobel>(b_s, kB, r0 - 2, c0 - 2, e_s, kE, r0 - 1, c0 - 1, s);
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
    const int r = r0 + e / kTile, c = c0 + e % kTile;
    if (r >= s.h || c >= s.w) continue;
    out[std::size_t(r) * s.w + c] = sharpen_at([&](int dr, int dc) {
      return e_s[(clampi(r + dr, s.h - 1) - (r0 - 1)) * kE + (clampi(c + dc, s.w - 1) - (c0 - 1))];
    });
  }
}

template <Stage S>
__global__ void pass_kernel(const float* src, float* dst, ImageShape s) {
  const std::size_t total = std::size_t(s.h) * s.w;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int r = int(i / s.w), c = int(i % s.w);
    dst[i] = stage_at<S>([&](int dr, int dc) {
      return src[std::size_t(clampi(r + dr, s.h - 1)) * s.w + clampi(c + dc, s.w - 1)];
    });
  }
}

// workspace: 2 * h * w floats (blurred, edges), unfused only.
void run(Form f, const float* in, float* out, float* workspace, ImageShape s) {
  if (f == Form::kFused) {
    const dim3 grid((s.w + kTile - 1) / kTile, (s.h + kTile - 1) / kTile);
    fused_kernel<<<grid, kThreads>>>(in, out, s);
  } else {
    const std::size_t total = std::size_t(s.h) * s.w;
    float* b = workspace;
    float* e = workspace + total;
    const int grid = grid_for(total, 256);
    pass_kernel<Stage::kBlur><<<grid, 256>>>(in, b, s);
    pass_kernel<Stage::kSobel><<<grid, 256>>>(b, e, s);
    pass_kernel<Stage::kSharpen><<<grid, 256>>>(e, out, s);
  }
  check_launch("image_pipeline");
}

}  // namespace

void image_pipeline_gpu(Form f, std::span<const float> in, std::span<float> out, ImageShape s) {
  const DeviceBuffer<float> din(in), dout(out.size()), ws(2 * in.size());
  run(f, din.get(), dout.get(), ws.get(), s);
  dout.download(out);
}

std::vector<Measurement> bench_image_pipeline(ImageShape s, const Timing& t) {
  const std::string shape = shape_text(KernelCase{KernelFamily::kImagePipeline, {s.h, s.w, 0, 0}});
  const std::size_t n = std::size_t(s.h) * s.w;
  const DeviceBuffer<float> in(n), fused(n), unfused(n), ws(2 * n);
  fill_uniform(in, 61, 0.0f, 1.0f);
  run(Form::kFused, in.get(), fused.get(), nullptr, s);
  run(Form::kUnfused, in.get(), unfused.get(), ws.get(), s);
  require_forms_agree("image_pipeline", shape, "out", fused.to_host(), unfused.to_host(),
                      image_pipeline_tolerance());
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* o = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts =
        time_on_device([&] { run(f, in.get(), o, ws.get(), s); }, t, "image_pipeline");
    out.push_back(timed(counted(KernelFamily::kImagePipeline, {s.h, s.w, 0, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
