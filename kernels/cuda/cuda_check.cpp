// check_kernels(): every CUDA family in both forms on small odd shapes, against the CPU's
// double-precision references (kernels/*.h) and against each other.
#include "kernels/cuda/cuda_check.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/bias_dropout_residual.h"
#include "kernels/conv_bn_relu.h"
#include "kernels/cuda/cuda_families.h"
#include "kernels/cuda/cuda_tolerance.h"
#include "kernels/gemm.h"
#include "kernels/image_pipeline.h"
#include "kernels/layernorm.h"
#include "kernels/lstm_cell.h"
#include "kernels/softmax.h"

namespace stratasim::kernels::cuda {

namespace {

using detail::Form;

std::vector<float> random_tensor(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                 float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::string dims(std::initializer_list<int> ds) {
  std::string s;
  for (int d : ds) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

KernelCheck compare(std::string family, std::string shape, std::string output,
                    const std::vector<float>& fused, const std::vector<float>& unfused,
                    const std::vector<float>& ref, Tolerance tol) {
  return {std::move(family),
          std::move(shape),
          std::move(output),
          worst_ratio(fused, ref, tol),
          worst_ratio(unfused, ref, tol),
          worst_ratio(fused, unfused, twice(tol))};
}

void check_gemm(std::vector<KernelCheck>& out) {
  for (int m : {1, 17, 130}) {
    for (int n : {1, 33, 129}) {
      for (int k : {1, 9, 300}) {
        const GemmShape s{m, n, k};
        const auto a = random_tensor(std::size_t(m) * k, 1),
                   b = random_tensor(std::size_t(k) * n, 2);
        const auto bias = random_tensor(n, 3);
        std::vector<float> f(std::size_t(m) * n), u(f.size()), r(f.size());
        detail::gemm_bias_gelu_gpu(Form::kFused, a, b, bias, f, s);
        detail::gemm_bias_gelu_gpu(Form::kUnfused, a, b, bias, u, s);
        gemm_bias_gelu_reference(a, b, bias, r, s);
        out.push_back(compare("gemm_bias_gelu", dims({m, n, k}), "C", f, u, r, gemm_tolerance(k)));
      }
    }
  }
}

void check_bias_dropout_residual(std::vector<KernelCheck>& out) {
  for (int rows : {1, 3, 33}) {
    for (int cols : {1, 17, 127}) {
      const std::size_t n = std::size_t(rows) * cols;
      const auto x = random_tensor(n, 11), res = random_tensor(n, 12),
                 bias = random_tensor(cols, 13);
      const DropoutParams d{0.25f, 42};
      std::vector<float> f(n), u(n), r(n);
      detail::bias_dropout_residual_gpu(Form::kFused, x, bias, res, f, rows, cols, d);
      detail::bias_dropout_residual_gpu(Form::kUnfused, x, bias, res, u, rows, cols, d);
      bias_dropout_residual_reference(x, bias, res, r, rows, cols, d);
      out.push_back(compare("bias_dropout_residual", dims({rows, cols}), "out", f, u, r,
                            bias_dropout_residual_tolerance()));
    }
  }
}

void check_layernorm(std::vector<KernelCheck>& out) {
  for (int rows : {1, 9}) {
    for (int cols : {1, 31, 33, 1000}) {
      const LayerNormShape s{rows, cols, 1e-5f};
      const std::size_t n = std::size_t(rows) * cols;
      const auto x = random_tensor(n, 21), res = random_tensor(n, 22);
      const auto g = random_tensor(cols, 23), b = random_tensor(cols, 24);
      std::vector<float> hf(n), yf(n), hu(n), yu(n), hr(n), yr(n);
      detail::add_layernorm_gpu(Form::kFused, x, res, g, b, hf, yf, s);
      detail::add_layernorm_gpu(Form::kUnfused, x, res, g, b, hu, yu, s);
      add_layernorm_reference(x, res, g, b, hr, yr, s);
      out.push_back(
          compare("layernorm", dims({rows, cols}), "h", hf, hu, hr, layernorm_h_tolerance()));
      out.push_back(
          compare("layernorm", dims({rows, cols}), "y", yf, yu, yr, layernorm_y_tolerance(cols)));
    }
  }
}

void check_softmax(std::vector<KernelCheck>& out) {
  for (bool causal : {true, false}) {
    for (int batch : {1, 2}) {
      for (int s : {1, 17, 65}) {
        const SoftmaxShape sh{batch, s, 0.35f, causal};
        const std::size_t n = std::size_t(batch) * s * s;
        const auto x = random_tensor(n, 31, -8.0f, 8.0f);
        std::vector<float> f(n), u(n), r(n);
        detail::softmax_gpu(Form::kFused, x, f, sh);
        detail::softmax_gpu(Form::kUnfused, x, u, sh);
        scaled_masked_softmax_reference(x, r, sh);
        out.push_back(compare("softmax", dims({batch, s, s}) + (causal ? " causal" : ""), "y", f, u,
                              r, softmax_tolerance(s)));
      }
    }
  }
}

void check_attention(std::vector<KernelCheck>& out) {
  for (bool causal : {true, false}) {
    for (int s : {1, 33, 70}) {
      for (int d : {1, 17, 64, 100}) {
        const AttentionShape sh{3, s, d, causal};
        const std::size_t n = std::size_t(sh.bh) * s * d;
        const auto q = random_tensor(n, 41), k = random_tensor(n, 42), v = random_tensor(n, 43);
        std::vector<float> f(n), u(n), r(n);
        detail::attention_gpu(Form::kFused, q, k, v, f, sh);
        detail::attention_gpu(Form::kUnfused, q, k, v, u, sh);
        attention_reference(q, k, v, r, sh);
        out.push_back(compare(
            "attention",
            "bh3 s" + std::to_string(s) + " d" + std::to_string(d) + (causal ? " causal" : ""), "O",
            f, u, r, attention_tolerance(s, d)));
      }
    }
  }
}

void check_conv(std::vector<KernelCheck>& out) {
  for (int c : {1, 3, 9}) {
    for (int k : {1, 17}) {
      for (auto [h, w] : {std::pair{1, 1}, std::pair{17, 33}}) {
        const ConvShape s{2, c, k, h, w};
        const auto x = random_tensor(std::size_t(s.n) * c * h * w, 51);
        const auto wt = random_tensor(9 * std::size_t(c) * k, 52);
        const auto g = random_tensor(k, 53), b = random_tensor(k, 54), m = random_tensor(k, 55);
        const auto var = random_tensor(k, 56, 0.5f, 2.0f);
        const BatchNorm bn{g, b, m, var, 1e-5f};
        std::vector<float> f(std::size_t(s.n) * k * h * w), u(f.size()), r(f.size());
        detail::conv_bn_relu_gpu(Form::kFused, x, wt, bn, f, s);
        detail::conv_bn_relu_gpu(Form::kUnfused, x, wt, bn, u, s);
        conv_bn_relu_reference(x, wt, bn, r, s);
        out.push_back(
            compare("conv_bn_relu", dims({s.n, c, k, h, w}), "y", f, u, r, conv_tolerance(c)));
      }
    }
  }
}

void check_image(std::vector<KernelCheck>& out) {
  for (auto [h, w] : {std::pair{1, 1}, std::pair{5, 40}, std::pair{33, 65}, std::pair{70, 31}}) {
    const ImageShape s{h, w};
    const auto in = random_tensor(std::size_t(h) * w, 61, 0.0f, 1.0f);
    std::vector<float> f(in.size()), u(in.size()), r(in.size());
    detail::image_pipeline_gpu(Form::kFused, in, f, s);
    detail::image_pipeline_gpu(Form::kUnfused, in, u, s);
    image_pipeline_reference(in, r, s);
    out.push_back(
        compare("image_pipeline", dims({h, w}), "out", f, u, r, image_pipeline_tolerance()));
  }
}

void check_lstm(std::vector<KernelCheck>& out) {
  for (int batch : {1, 3}) {
    for (int hidden : {1, 33, 257}) {
      const LstmShape s{batch, hidden};
      const std::size_t n = std::size_t(batch) * hidden;
      const auto gates = random_tensor(4 * n, 71, -4.0f, 4.0f);
      const auto bias = random_tensor(4 * std::size_t(hidden), 72), c = random_tensor(n, 73);
      std::vector<float> cf(n), hf(n), cu(n), hu(n), cr(n), hr(n);
      detail::lstm_cell_gpu(Form::kFused, gates, bias, c, cf, hf, s);
      detail::lstm_cell_gpu(Form::kUnfused, gates, bias, c, cu, hu, s);
      lstm_cell_reference(gates, bias, c, cr, hr, s);
      out.push_back(
          compare("lstm_cell", dims({batch, hidden}), "c_out", cf, cu, cr, lstm_c_tolerance()));
      out.push_back(
          compare("lstm_cell", dims({batch, hidden}), "h_out", hf, hu, hr, lstm_h_tolerance()));
    }
  }
}

}  // namespace

std::vector<KernelCheck> check_kernels(int index, const Progress& progress) {
  open_device(index);
  std::vector<KernelCheck> out;
  const auto step = [&](const char* name, void (*fn)(std::vector<KernelCheck>&)) {
    if (progress) progress(name);
    fn(out);
  };
  step("gemm_bias_gelu", check_gemm);
  step("bias_dropout_residual", check_bias_dropout_residual);
  step("layernorm", check_layernorm);
  step("softmax", check_softmax);
  step("attention", check_attention);
  step("conv_bn_relu", check_conv);
  step("image_pipeline", check_image);
  step("lstm_cell", check_lstm);
  return out;
}

}  // namespace stratasim::kernels::cuda
