// Residual add + LayerNorm on the GPU (kernels/layernorm.h), one warp per row: the mean and then
// the variance (two-pass, biased) by lane-strided sums and a shuffle reduction, then the
// normalization. fused = one kernel that forms h = x + residual, writes it and normalizes it
// while the row is in cache; unfused = an add kernel writing h, then a LayerNorm kernel reading
// it back.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

constexpr int kWarps = 8;  // rows per 256-thread block

// kAdd: h = x + residual is formed here and stored; otherwise x already is h (residual unused).
template <bool kAdd>
__global__ void layernorm_rows(const float* x, const float* residual, const float* gamma,
                               const float* beta, float* h, float* y, int rows, int cols,
                               float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const std::size_t base = std::size_t(row) * cols;
  const float* hr = kAdd ? h + base : x + base;  // read back by the lane that wrote it
  float sum = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    float v;
    if constexpr (kAdd) {
      v = x[base + j] + residual[base + j];
      h[base + j] = v;
    } else {
      v = hr[j];
    }
    sum += v;
  }
  const float mean = warp_sum(sum) / float(cols);
  float sq = 0.0f;
  for (int j = lane; j < cols; j += 32) {
    const float dv = hr[j] - mean;
    sq += dv * dv;
  }
  const float rstd = 1.0f / sqrtf(warp_sum(sq) / float(cols) + eps);
  for (int j = lane; j < cols; j += 32) y[base + j] = (hr[j] - mean) * rstd * gamma[j] + beta[j];
}

__global__ void add_kernel(const float* x, const float* residual, float* h, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    h[i] = x[i] + residual[i];
}

void run(Form f, const float* x, const float* residual, const float* gamma, const float* beta,
         float* h, float* y, LayerNormShape s) {
  const int grid = (s.rows + kWarps - 1) / kWarps;
  if (f == Form::kFused) {
    layernorm_rows<true>
        <<<grid, 32 * kWarps>>>(x, residual, gamma, beta, h, y, s.rows, s.cols, s.eps);
  } else {
    const std::size_t total = std::size_t(s.rows) * s.cols;
    add_kernel<<<grid_for(total, 256), 256>>>(x, residual, h, total);
    layernorm_rows<false>
        <<<grid, 32 * kWarps>>>(h, nullptr, gamma, beta, nullptr, y, s.rows, s.cols, s.eps);
  }
  check_launch("layernorm");
}

}  // namespace

void add_layernorm_gpu(Form f, std::span<const float> x, std::span<const float> residual,
                       std::span<const float> gamma, std::span<const float> beta,
                       std::span<float> h, std::span<float> y, LayerNormShape s) {
  const DeviceBuffer<float> dx(x), dres(residual), dg(gamma), db(beta), dh(h.size()), dy(y.size());
  run(f, dx.get(), dres.get(), dg.get(), db.get(), dh.get(), dy.get(), s);
  dh.download(h);
  dy.download(y);
}

std::vector<Measurement> bench_layernorm(LayerNormShape s, const Timing& t) {
  const std::string shape =
      shape_text(KernelCase{KernelFamily::kLayerNorm, {s.rows, s.cols, 0, 0}});
  const std::size_t n = std::size_t(s.rows) * s.cols;
  const DeviceBuffer<float> x(n), residual(n), gamma(s.cols), beta(s.cols), hf(n), yf(n), hu(n),
      yu(n);
  fill_uniform(x, 21), fill_uniform(residual, 22), fill_uniform(gamma, 23), fill_uniform(beta, 24);
  run(Form::kFused, x.get(), residual.get(), gamma.get(), beta.get(), hf.get(), yf.get(), s);
  run(Form::kUnfused, x.get(), residual.get(), gamma.get(), beta.get(), hu.get(), yu.get(), s);
  require_forms_agree("layernorm", shape, "h", hf.to_host(), hu.to_host(), layernorm_h_tolerance());
  require_forms_agree("layernorm", shape, "y", yf.to_host(), yu.to_host(),
                      twice(layernorm_y_tolerance(s.cols)));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* h = f == Form::kFused ? hf.get() : hu.get();
    float* y = f == Form::kFused ? yf.get() : yu.get();
    const TimeStats ts = time_on_device(
        [&] { run(f, x.get(), residual.get(), gamma.get(), beta.get(), h, y, s); }, t, "layernorm");
    out.push_back(timed(counted(KernelFamily::kLayerNorm, {s.rows, s.cols, 0, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
