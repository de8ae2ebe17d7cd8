// Bias + dropout + residual on the GPU (kernels/bias_dropout_residual.h): fused = one
// elementwise kernel; unfused = out = x + bias, out *= mask * scale, out += residual. The mask is
// elementwise.h's counter-based hash, so both forms (and the CPU) drop the same elements.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

struct Drop {
  std::uint64_t key;  // mix64(seed)
  std::uint32_t threshold;
  float scale;
};

Drop drop_of(DropoutParams d) { return {mix64(d.seed), d.threshold(), d.scale()}; }

__global__ void fused_kernel(const float* x, const float* bias, const float* residual, float* out,
                             std::size_t total, int cols, Drop d) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float kept = dropout_keep_d(d.key, i, d.threshold) ? d.scale : 0.0f;
    out[i] = residual[i] + (x[i] + bias[i % cols]) * kept;
  }
}

__global__ void bias_kernel(const float* x, const float* bias, float* out, std::size_t total,
                            int cols) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = x[i] + bias[i % cols];
}

__global__ void dropout_kernel(float* out, std::size_t total, Drop d) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = out[i] * (dropout_keep_d(d.key, i, d.threshold) ? d.scale : 0.0f);
}

__global__ void residual_kernel(const float* residual, float* out, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = residual[i] + out[i];
}

void run(Form f, const float* x, const float* bias, const float* residual, float* out, int rows,
         int cols, DropoutParams p) {
  const std::size_t total = std::size_t(rows) * cols;
  const int grid = grid_for(total, 256);
  const Drop d = drop_of(p);
  if (f == Form::kFused) {
    fused_kernel<<<grid, 256>>>(x, bias, residual, out, total, cols, d);
  } else {
    bias_kernel<<<grid, 256>>>(x, bias, out, total, cols);
    dropout_kernel<<<grid, 256>>>(out, total, d);
    residual_kernel<<<grid, 256>>>(residual, out, total);
  }
  check_launch("bias_dropout_residual");
}

}  // namespace

void bias_dropout_residual_gpu(Form f, std::span<const float> x, std::span<const float> bias,
                               std::span<const float> residual, std::span<float> out, int rows,
                               int cols, DropoutParams d) {
  const DeviceBuffer<float> dx(x), dbias(bias), dres(residual), dout(out.size());
  run(f, dx.get(), dbias.get(), dres.get(), dout.get(), rows, cols, d);
  dout.download(out);
}

std::vector<Measurement> bench_bias_dropout_residual(int rows, int cols, const Timing& t) {
  const std::string shape =
      shape_text(KernelCase{KernelFamily::kBiasDropoutResidual, {rows, cols, 0, 0}});
  const std::size_t n = std::size_t(rows) * cols;
  const DropoutParams d{0.1f, 1};
  const DeviceBuffer<float> x(n), bias(cols), residual(n), fused(n), unfused(n);
  fill_uniform(x, 11), fill_uniform(bias, 12), fill_uniform(residual, 13);
  run(Form::kFused, x.get(), bias.get(), residual.get(), fused.get(), rows, cols, d);
  run(Form::kUnfused, x.get(), bias.get(), residual.get(), unfused.get(), rows, cols, d);
  require_forms_agree("bias_dropout_residual", shape, "out", fused.to_host(), unfused.to_host(),
                      bias_dropout_residual_tolerance());
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* o = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts =
        time_on_device([&] { run(f, x.get(), bias.get(), residual.get(), o, rows, cols, d); }, t,
                       "bias_dropout_residual");
    out.push_back(timed(counted(KernelFamily::kBiasDropoutResidual, {rows, cols, 0, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
