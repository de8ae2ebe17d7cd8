// LSTM cell gates on the GPU (kernels/lstm_cell.h), gate order i, f, g, o in [batch x 4*hidden].
// fused: one elementwise kernel per (row, unit): reads the four pre-activations, the bias and c,
//   writes c' and h'. unfused: the framework's nine kernels: bias add into a workspace, sigmoid
//   of i, f and o, tanh of g (in place), c' = f * c, c' += i * g, h' = tanh(c'), h' *= o.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_util.cuh"

namespace stratasim::kernels::cuda::detail {

namespace {

#define STRATASIM_GRID_STRIDE(i, total)                                                 \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (total); \
       i += std::size_t(gridDim.x) * blockDim.x)

__global__ void fused_kernel(const float* gates, const float* bias, const float* c, float* c_out,
                             float* h_out, std::size_t total, int hidden) {
  STRATASIM_GRID_STRIDE(e, total) {
    const std::size_t row = e / hidden;
    const int j = int(e % hidden);
    const float* g = gates + row * 4 * hidden;
    const float ig = sigmoid_d(g[j] + bias[j]);
    const float fg = sigmoid_d(g[hidden + j] + bias[hidden + j]);
    const float gg = tanh_d(g[2 * hidden + j] + bias[2 * hidden + j]);
    const float og = sigmoid_d(g[3 * hidden + j] + bias[3 * hidden + j]);
    const float cn = fg * c[e] + ig * gg;
    c_out[e] = cn;
    h_out[e] = og * tanh_d(cn);
  }
}

__global__ void bias_kernel(const float* gates, const float* bias, float* ws, std::size_t total,
                            int width) {
  STRATASIM_GRID_STRIDE(e, total) { ws[e] = gates[e] + bias[e % width]; }
}

// In place on gate `gate` of the workspace (total = batch * hidden elements).
template <bool kSigmoid>
__global__ void activate_kernel(float* ws, std::size_t total, int hidden, int gate) {
  STRATASIM_GRID_STRIDE(e, total) {
    float& v = ws[(e / hidden) * 4 * hidden + gate * hidden + e % hidden];
    v = kSigmoid ? sigmoid_d(v) : tanh_d(v);
  }
}

__global__ void fc_kernel(const float* ws, const float* c, float* c_out, std::size_t total,
                          int hidden) {
  STRATASIM_GRID_STRIDE(e, total) {
    c_out[e] = ws[(e / hidden) * 4 * hidden + hidden + e % hidden] * c[e];
  }
}

__global__ void add_ig_kernel(const float* ws, float* c_out, std::size_t total, int hidden) {
  STRATASIM_GRID_STRIDE(e, total) {
    const float* g = ws + (e / hidden) * 4 * hidden + e % hidden;
    c_out[e] = c_out[e] + g[0] * g[2 * hidden];
  }
}

__global__ void tanh_kernel(const float* c_out, float* h_out, std::size_t total) {
  STRATASIM_GRID_STRIDE(e, total) { h_out[e] = tanh_d(c_out[e]); }
}

__global__ void mul_o_kernel(const float* ws, float* h_out, std::size_t total, int hidden) {
  STRATASIM_GRID_STRIDE(e, total) {
    h_out[e] = ws[(e / hidden) * 4 * hidden + 3 * hidden + e % hidden] * h_out[e];
  }
}

#undef STRATASIM_GRID_STRIDE

// workspace: batch * 4 * hidden floats, unfused only.
void run(Form f, const float* gates, const float* bias, const float* c, float* c_out, float* h_out,
         float* ws, LstmShape s) {
  const std::size_t n = std::size_t(s.batch) * s.hidden;
  const int grid = grid_for(n, 256);
  if (f == Form::kFused) {
    fused_kernel<<<grid, 256>>>(gates, bias, c, c_out, h_out, n, s.hidden);
  } else {
    bias_kernel<<<grid_for(4 * n, 256), 256>>>(gates, bias, ws, 4 * n, 4 * s.hidden);
    activate_kernel<true><<<grid, 256>>>(ws, n, s.hidden, 0);
    activate_kernel<true><<<grid, 256>>>(ws, n, s.hidden, 1);
    activate_kernel<false><<<grid, 256>>>(ws, n, s.hidden, 2);
    activate_kernel<true><<<grid, 256>>>(ws, n, s.hidden, 3);
    fc_kernel<<<grid, 256>>>(ws, c, c_out, n, s.hidden);
    add_ig_kernel<<<grid, 256>>>(ws, c_out, n, s.hidden);
    tanh_kernel<<<grid, 256>>>(c_out, h_out, n);
    mul_o_kernel<<<grid, 256>>>(ws, h_out, n, s.hidden);
  }
  check_launch("lstm_cell");
}

}  // namespace

void lstm_cell_gpu(Form f, std::span<const float> gates, std::span<const float> bias,
                   std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                   LstmShape s) {
  const DeviceBuffer<float> dg(gates), db(bias), dc(c), dco(c_out.size()), dho(h_out.size()),
      ws(gates.size());
  run(f, dg.get(), db.get(), dc.get(), dco.get(), dho.get(), ws.get(), s);
  dco.download(c_out);
  dho.download(h_out);
}

std::vector<Measurement> bench_lstm_cell(LstmShape s, const Timing& t) {
  const std::string shape =
      shape_text(KernelCase{KernelFamily::kLstmCell, {s.batch, s.hidden, 0, 0}});
  const std::size_t n = std::size_t(s.batch) * s.hidden;
  const DeviceBuffer<float> gates(4 * n), bias(4 * std::size_t(s.hidden)), c(n), cf(n), hf(n),
      cu(n), hu(n), ws(4 * n);
  fill_uniform(gates, 71, -4.0f, 4.0f), fill_uniform(bias, 72), fill_uniform(c, 73);
  run(Form::kFused, gates.get(), bias.get(), c.get(), cf.get(), hf.get(), nullptr, s);
  run(Form::kUnfused, gates.get(), bias.get(), c.get(), cu.get(), hu.get(), ws.get(), s);
  require_forms_agree("lstm_cell", shape, "c_out", cf.to_host(), cu.to_host(),
                      twice(lstm_c_tolerance()));
  require_forms_agree("lstm_cell", shape, "h_out", hf.to_host(), hu.to_host(),
                      twice(lstm_h_tolerance()));
  std::vector<Measurement> out;
  for (Form f : {Form::kFused, Form::kUnfused}) {
    float* co = f == Form::kFused ? cf.get() : cu.get();
    float* ho = f == Form::kFused ? hf.get() : hu.get();
    const TimeStats ts = time_on_device(
        [&] { run(f, gates.get(), bias.get(), c.get(), co, ho, ws.get(), s); }, t, "lstm_cell");
    out.push_back(timed(counted(KernelFamily::kLstmCell, {s.batch, s.hidden, 0, 0}, f), ts));
  }
  return out;
}

}  // namespace stratasim::kernels::cuda::detail
