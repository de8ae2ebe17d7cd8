// Scaled, causally masked row softmax on the GPU (kernels/softmax.h), one warp per row.
// fused = one kernel: row max, then the sum of exponentials, then the normalized write, reading
// only the unmasked entries (the row stays in L1/L2 between the three sweeps) and writing 0 to
// the masked ones. unfused = the framework's passes over the whole tensor: scale, mask (-inf
// fill), row max, exp(x - max), row sum, divide.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

constexpr int kWarps = 8;

// Unmasked entries of row `row` of a stack of s x s matrices (j <= i when causal).
__device__ __forceinline__ int valid_of(std::size_t row, int s, bool causal) {
  return causal ? int(row % s) + 1 : s;
}

__global__ void fused_rows(const float* x, float* y, std::size_t rows, int s, float scale,
                           bool causal) {
  const int lane = threadIdx.x % 32;
  const std::size_t row = blockIdx.x * std::size_t(kWarps) + threadIdx.x / 32;
  if (row >= rows) return;
  const float* xr = x + row * s;
  float* yr = y + row * s;
  const int valid = valid_of(row, s, causal);
  float m = -INFINITY;
  for (int j = lane; j < valid; j += 32) m = fmaxf(m, scale * xr[j]);
  m = warp_max(m);
  float sum = 0.0f;
  for (int j = lane; j < valid; j += 32) sum += expf(scale * xr[j] - m);
  sum = warp_sum(sum);
  for (int j = lane; j < s; j += 32) yr[j] = j < valid ? expf(scale * xr[j] - m) / sum : 0.0f;
}

__global__ void scale_kernel(const float* x, float* y, std::size_t total, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = scale * x[i];
}

__global__ void mask_kernel(float* y, std::size_t total, int s) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int j = int(i % s), r = int((i / s) % s);
    if (j > r) y[i] = -INFINITY;
  }
}

// kMax: out[row] = max of the row; otherwise its sum (all s entries, masked ones -inf or 0).
template <bool kMax>
__global__ void row_reduce(const float* y, float* out, std::size_t rows, int s) {
  const int lane = threadIdx.x % 32;
  const std::size_t row = blockIdx.x * std::size_t(kWarps) + threadIdx.x / 32;
  if (row >= rows) return;
  const float* yr = y + row * s;
  float acc = kMax ? -INFINITY : 0.0f;
  for (int j = lane; j < s; j += 32) acc = kMax ? fmaxf(acc, yr[j]) : acc + yr[j];
  acc = kMax ? warp_max(acc) : warp_sum(acc);
  if (lane == 0) out[row] = acc;
}

// kExp: y = exp(y - v[row]); otherwise y = y / v[row].
template <bool kExp>
__global__ void row_apply(float* y, const float* v, std::size_t total, int s) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = kExp ? expf(y[i] - v[i / s]) : y[i] / v[i / s];
}

// workspace: 2 * rows floats (row max, row sum), unfused only.
void run(Form f, const float* x, float* y, float* workspace, SoftmaxShape sh) {
  const std::size_t rows = std::size_t(sh.batch) * sh.s, total = rows * sh.s;
  const int row_grid = int((rows + kWarps - 1) / kWarps), grid = grid_for(total, 256);
  if (f == Form::kFused) {
    fused_rows<<<row_grid, 32 * kWarps>>>(x, y, rows, sh.s, sh.scale, sh.causal);
  } else {
    float* rmax = workspace;
    float* rsum = workspace + rows;
    scale_kernel<<<grid, 256>>>(x, y, total, sh.scale);
    if (sh.causal) mask_kernel<<<grid, 256>>>(y, total, sh.s);
    row_reduce<true><<<row_grid, 32 * kWarps>>>(y, rmax, rows, sh.s);
    row_apply<true><<<grid, 256>>>(y, rmax, total, sh.s);
    row_reduce<false><<<row_grid, 32 * kWarps>>>(y, rsum, rows, sh.s);
    row_apply<false><<<grid, 256>>>(y, rsum, total, sh.s);
  }
  check_launch("softmax");
}

}  // namespace

void launch_softmax_rows(const float* x, float* y, std::size_t rows, int s, float scale,
                         bool causal) {
  fused_rows<<<int((rows + kWarps - 1) / kWarps), 32 * kWarps>>>(x, y, rows, s, scale, causal);
  check_launch("softmax rows");
}

void softmax_gpu(Form f, std::span<const float> x, std::span<float> y, SoftmaxShape s) {
  const DeviceBuffer<float> dx(x), dy(y.size()), ws(2 * std::size_t(s.batch) * s.s);
  run(f, dx.get(), dy.get(), ws.get(), s);
  dy.download(y);
}

std::vector<Measurement> bench_softmax(SoftmaxShape s, const Timing& t) {
  const std::string shape = shape_text(KernelCase{KernelFamily::kSoftmax, {s.batch, s.s, 0, 0}});
  const std::size_t n = std::size_t(s.batch) * s.s * s.s;
  const DeviceBuffer<float> x(n), fused(n), unfused(n), ws(2 * std::size_t(s.batch) * s.s);
  fill_uniform(x, 31, -8.0f, 8.0f);
  run(Form::kFused, x.get(), fused.get(), nullptr, s);
  run(Form::kUnfused, x.get(), unfused.get(), ws.get(), s);
  require_forms_agree("softmax", shape, "y", fused.to_host(), unfused.to_host(),
                      twice(softmax_tolerance(s.s)));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* y = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts = time_on_device([&] { run(f, x.get(), y, ws.get(), s); }, t, "softmax");
    out.push_back(timed(counted(KernelFamily::kSoftmax, {s.batch, s.s, 0, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
