// GEMM + bias + GeLU on the GPU (kernels/gemm.h): fused = the tiled GEMM with the bias and GeLU
// applied to the accumulators before the one store of C; unfused = the same GEMM storing C,
// then a bias kernel and a GeLU kernel (C crosses memory three more times).
#include <string>
#include <vector>

#include "kernels/cuda/gemm_tile.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

__global__ void bias_add_kernel(float* c, const float* bias, std::size_t total, int n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    c[i] = c[i] + bias[i % n];
}

__global__ void gelu_kernel(float* c, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x)
    c[i] = gelu_d(c[i]);
}

void run(Form f, const float* a, const float* b, const float* bias, float* c, GemmShape s) {
  GemmArgs g;
  g.a = a, g.b = b, g.bias = bias, g.c = c, g.m = s.m, g.n = s.n, g.k = s.k;
  if (f == Form::kFused) {
    launch_gemm<Epilogue::kBiasGelu, false>(g, 1);
  } else {
    launch_gemm<Epilogue::kNone, false>(g, 1);
    const std::size_t total = std::size_t(s.m) * s.n;
    bias_add_kernel<<<grid_for(total, 256), 256>>>(c, bias, total, s.n);
    gelu_kernel<<<grid_for(total, 256), 256>>>(c, total);
  }
  check_launch("gemm_bias_gelu");
}

}  // namespace

void gemm_bias_gelu_gpu(Form f, std::span<const float> a, std::span<const float> b,
                        std::span<const float> bias, std::span<float> c, GemmShape s) {
  const DeviceBuffer<float> da(a), db(b), dbias(bias), dc(c.size());
  run(f, da.get(), db.get(), dbias.get(), dc.get(), s);
  dc.download(c);
}

std::vector<Measurement> bench_gemm_bias_gelu(GemmShape s, const Timing& t) {
  const std::string shape = shape_text(KernelCase{KernelFamily::kGemmBiasGelu, {s.m, s.n, s.k, 0}});
  const std::size_t mn = std::size_t(s.m) * s.n;
  const DeviceBuffer<float> a(std::size_t(s.m) * s.k), b(std::size_t(s.k) * s.n), bias(s.n),
      fused(mn), unfused(mn);
  fill_uniform(a, 1), fill_uniform(b, 2), fill_uniform(bias, 3);
  run(Form::kFused, a.get(), b.get(), bias.get(), fused.get(), s);
  run(Form::kUnfused, a.get(), b.get(), bias.get(), unfused.get(), s);
  require_forms_agree("gemm_bias_gelu", shape, "C", fused.to_host(), unfused.to_host(),
                      twice(gemm_tolerance(s.k)));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* c = f == Form::kFused ? fused.get() : unfused.get();
    const TimeStats ts =
        time_on_device([&] { run(f, a.get(), b.get(), bias.get(), c, s); }, t, "gemm_bias_gelu");
    out.push_back(timed(counted(KernelFamily::kGemmBiasGelu, {s.m, s.n, s.k, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
