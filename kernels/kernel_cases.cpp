#include "kernels/kernel_cases.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/attention.h"
#include "kernels/bias_dropout_residual.h"
#include "kernels/conv_bn_relu.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/huge_pages.h"
#include "kernels/image_pipeline.h"
#include "kernels/layernorm.h"
#include "kernels/lstm_cell.h"
#include "kernels/softmax.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

constexpr double kF = 4.0;  // bytes per fp32 element

using Vec = BenchVec;  // on huge pages: kernels/huge_pages.h

// Uniform values in [lo, hi) from a counter hash: fast enough for 100M-element fills.
Vec values(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Vec v(n);
  const float scale = (hi - lo) / 16777216.0f;  // 24-bit mantissa draws
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = lo + scale * static_cast<float>(
                            hash32(static_cast<std::uint32_t>(i) ^ (seed * 0x9E3779B9u)) >> 8);
  }
  return v;
}

struct Forms {
  std::function<void()> fused, unfused;
};

// The buffers of one case; the forms' closures hold spans into them, so Buffers outlives them.
struct Buffers {
  std::vector<Vec> v;
  Vec& add(Vec x) {
    v.push_back(std::move(x));
    return v.back();
  }
};

Forms make_forms(const KernelCase& c, Buffers& b) {
  b.v.reserve(12);
  const auto& d = c.dims;
  switch (c.family) {
    case KernelFamily::kGemmBiasGelu: {
      const GemmShape s{d[0], d[1], d[2]};
      const std::span<float> a = b.add(values(std::size_t(s.m) * s.k, 1));
      const std::span<float> w = b.add(values(std::size_t(s.k) * s.n, 2));
      const std::span<float> bias = b.add(values(s.n, 3));
      const std::span<float> out = b.add(Vec(std::size_t(s.m) * s.n));
      return {[=] { gemm_bias_gelu_fused(a, w, bias, out, s); },
              [=] { gemm_bias_gelu_unfused(a, w, bias, out, s); }};
    }
    case KernelFamily::kBiasDropoutResidual: {
      const int rows = d[0], cols = d[1];
      const std::size_t n = std::size_t(rows) * cols;
      const std::span<float> x = b.add(values(n, 4));
      const std::span<float> res = b.add(values(n, 5));
      const std::span<float> bias = b.add(values(cols, 6));
      const std::span<float> out = b.add(Vec(n));
      const DropoutParams dp{0.1f, 7};
      return {[=] { bias_dropout_residual_fused(x, bias, res, out, rows, cols, dp); },
              [=] { bias_dropout_residual_unfused(x, bias, res, out, rows, cols, dp); }};
    }
    case KernelFamily::kLayerNorm: {
      const LayerNormShape s{d[0], d[1], 1e-5f};
      const std::size_t n = std::size_t(s.rows) * s.cols;
      const std::span<float> x = b.add(values(n, 8));
      const std::span<float> r = b.add(values(n, 9));
      const std::span<float> g = b.add(values(s.cols, 10));
      const std::span<float> be = b.add(values(s.cols, 11));
      const std::span<float> h = b.add(Vec(n));
      const std::span<float> y = b.add(Vec(n));
      return {[=] { add_layernorm_fused(x, r, g, be, h, y, s); },
              [=] { add_layernorm_unfused(x, r, g, be, h, y, s); }};
    }
    case KernelFamily::kSoftmax: {
      const SoftmaxShape s{d[0], d[1], 0.125f, true};
      const std::size_t n = std::size_t(s.batch) * s.s * s.s;
      const std::span<float> x = b.add(values(n, 12, -8.0f, 8.0f));
      const std::span<float> y = b.add(Vec(n));
      return {[=] { scaled_masked_softmax_fused(x, y, s); },
              [=] { scaled_masked_softmax_unfused(x, y, s); }};
    }
    case KernelFamily::kAttention: {
      const AttentionShape s{d[0], d[1], d[2], true};
      const std::size_t n = std::size_t(s.bh) * s.s * s.d;
      const std::span<float> q = b.add(values(n, 13));
      const std::span<float> k = b.add(values(n, 14));
      const std::span<float> v = b.add(values(n, 15));
      const std::span<float> o = b.add(Vec(n));
      const std::span<float> ws = b.add(Vec(attention_unfused_workspace(s)));
      return {[=] { attention_fused(q, k, v, o, s); },
              [=] { attention_unfused(q, k, v, o, ws, s); }};
    }
    case KernelFamily::kConvBnRelu: {
      const ConvShape s{d[0], d[1], d[2], d[3], d[3]};
      const std::span<float> x = b.add(values(std::size_t(s.n) * s.c * s.h * s.w, 16));
      const std::span<float> w = b.add(values(std::size_t(s.k) * s.c * 9, 17, -0.1f, 0.1f));
      const std::span<float> g = b.add(values(s.k, 18));
      const std::span<float> be = b.add(values(s.k, 19));
      const std::span<float> mean = b.add(values(s.k, 20));
      const std::span<float> var = b.add(values(s.k, 21, 0.5f, 2.0f));
      const std::span<float> y = b.add(Vec(std::size_t(s.n) * s.k * s.h * s.w));
      return {[=] {
                conv_bn_relu_fused(x, w, BatchNorm{g, be, mean, var, 1e-5f}, y, s);
              },
              [=] {
                conv_bn_relu_unfused(x, w, BatchNorm{g, be, mean, var, 1e-5f}, y, s);
              }};
    }
    case KernelFamily::kImagePipeline: {
      const ImageShape s{d[0], d[1]};
      const std::size_t n = std::size_t(s.h) * s.w;
      const std::span<float> in = b.add(values(n, 22, 0.0f, 1.0f));
      const std::span<float> out = b.add(Vec(n));
      const std::span<float> ws = b.add(Vec(image_pipeline_unfused_workspace(s)));
      return {[=] { image_pipeline_fused(in, out, s); },
              [=] { image_pipeline_unfused(in, out, ws, s); }};
    }
    case KernelFamily::kLstmCell: {
      const LstmShape s{d[0], d[1]};
      const std::size_t n = std::size_t(s.batch) * s.hidden;
      const std::span<float> gates = b.add(values(4 * n, 23, -4.0f, 4.0f));
      const std::span<float> bias = b.add(values(4 * std::size_t(s.hidden), 24));
      const std::span<float> cc = b.add(values(n, 25));
      const std::span<float> co = b.add(Vec(n));
      const std::span<float> ho = b.add(Vec(n));
      const std::span<float> ws = b.add(Vec(lstm_cell_unfused_workspace(s)));
      return {[=] { lstm_cell_fused(gates, bias, cc, co, ho, s); },
              [=] { lstm_cell_unfused(gates, bias, cc, co, ho, ws, s); }};
    }
  }
  SS_ASSERT(false, "every kernel family has forms");
  return {};
}

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void finish(Measurement& m, std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  m.seconds = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  m.min_seconds = t.front();
  m.repeats = static_cast<int>(n);
}

}  // namespace

std::string_view family_name(KernelFamily f) {
  switch (f) {
    case KernelFamily::kGemmBiasGelu:
      return "gemm_bias_gelu";
    case KernelFamily::kBiasDropoutResidual:
      return "bias_dropout_residual";
    case KernelFamily::kLayerNorm:
      return "layernorm";
    case KernelFamily::kSoftmax:
      return "softmax";
    case KernelFamily::kAttention:
      return "attention";
    case KernelFamily::kConvBnRelu:
      return "conv_bn_relu";
    case KernelFamily::kImagePipeline:
      return "image_pipeline";
    case KernelFamily::kLstmCell:
      return "lstm_cell";
  }
  return "?";
}

std::string shape_text(const KernelCase& c) {
  const auto& d = c.dims;
  const auto s = [](int x) { return std::to_string(x); };
  switch (c.family) {
    case KernelFamily::kGemmBiasGelu:
      return s(d[0]) + "x" + s(d[1]) + "x" + s(d[2]);
    case KernelFamily::kSoftmax:
      return s(d[0]) + "x" + s(d[1]) + "x" + s(d[1]) + " causal";
    case KernelFamily::kAttention:
      return "bh" + s(d[0]) + " s" + s(d[1]) + " d" + s(d[2]) + " causal";
    case KernelFamily::kConvBnRelu:
      return s(d[0]) + "x" + s(d[1]) + "->" + s(d[2]) + "x" + s(d[3]) + "x" + s(d[3]);
    default:
      return s(d[0]) + "x" + s(d[1]);
  }
}

Measurement kernel_work(const KernelCase& c, bool fused) {
  Measurement m;
  m.family = std::string(family_name(c.family));
  m.form = fused ? "fused" : "unfused";
  m.shape = shape_text(c);
  const auto& d = c.dims;
  const double a = d[0], b = d[1];
  switch (c.family) {
    case KernelFamily::kGemmBiasGelu: {  // bias 1 + GeLU 5 (2 mul, add, erf, mul) per output
      const double mn = a * b, k = d[2];
      m.matmul_flop = 2 * mn * k;
      m.vector_flop = 6 * mn;
      m.bytes = kF * (a * k + k * b + mn) + (fused ? 0 : kF * (2 * mn + 2 * mn));
      m.launches = fused ? 1 : 3;  // unfused: GEMM, bias pass, GeLU pass
      break;
    }
    case KernelFamily::kBiasDropoutResidual: {  // bias add, keep test, scale, residual add
      const double n = a * b;
      m.vector_flop = 4 * n;
      m.bytes = fused ? kF * 3 * n : kF * (2 * n + 2 * n + 3 * n);
      m.launches = fused ? 1 : 3;
      break;
    }
    case KernelFamily::kLayerNorm: {  // add 1, mean 1, variance 3, normalize+affine 4
      const double n = a * b;
      m.vector_flop = 9 * n;
      m.bytes = fused ? kF * 4 * n : kF * (3 * n + 2 * n);  // unfused: h = x + r, then LN(h)
      m.launches = fused ? 1 : 2;
      break;
    }
    case KernelFamily::kSoftmax: {
      const double n = a * b * b, valid = a * b * (b + 1) / 2;
      if (fused) {  // reads the unmasked triangle, writes every entry; 6 FLOP per valid entry
        m.vector_flop = 6 * valid;
        m.bytes = kF * (valid + n);
        m.launches = 1;
      } else {  // scale, mask fill, max, exp, sum, divide: full passes
        m.vector_flop = 6 * n;
        m.bytes = kF * (2 * n + (n - valid) + n + 2 * n + n + 2 * n);
        m.launches = 6;
      }
      break;
    }
    case KernelFamily::kAttention: {
      const double bh = a, s = b, hd = d[2];
      const double valid = bh * s * (s + 1) / 2, full = bh * s * s, io = bh * s * hd;
      if (fused) {  // causal blocks skipped: Q K^T and P V over the unmasked half
        m.matmul_flop = 2 * 2 * hd * valid;
        m.vector_flop = 6 * valid;  // online softmax: scale, max, sub, exp, sum, rescale
        m.bytes = kF * 4 * io;
        m.launches = 1;
      } else {  // K^T; full S = Q K^T; softmax (fused kernel) on S; causal P V
        m.matmul_flop = 2 * hd * full + 2 * hd * valid;
        m.vector_flop = 6 * valid;
        m.bytes = kF * (2 * io + (2 * io + full) + (valid + full) + (valid + 2 * io));
        m.launches = 4;
      }
      break;
    }
    case KernelFamily::kConvBnRelu: {  // BN folded to scale + shift, ReLU 1
      const double n = a, ch = b, k = d[2], hw = double(d[3]) * d[3];
      const double out = n * k * hw;
      m.matmul_flop = 2 * 9 * ch * out;
      m.vector_flop = 3 * out;
      m.bytes = kF * (n * ch * hw + out) + (fused ? 0 : kF * (2 * out + 2 * out));
      m.launches = fused ? 1 : 3;
      break;
    }
    case KernelFamily::kImagePipeline: {  // blur 17, Sobel 26 (2 x 11 + magnitude 4), sharpen 5
      const double n = a * b;
      m.vector_flop = 48 * n;
      m.bytes = fused ? kF * 2 * n : kF * 6 * n;
      m.launches = fused ? 1 : 3;
      break;
    }
    case KernelFamily::kLstmCell: {  // bias 4, 3 sigmoids x 4, 2 tanh x 5, c' 3, h' 1
      const double n = a * b;
      m.vector_flop = 30 * n;
      // unfused passes: bias (4n in, 4n out), 3 sigmoids, tanh(g), f*c, += i*g, tanh(c'), *o
      m.bytes =
          fused ? kF * 7 * n : kF * (8 * n + 3 * 2 * n + 2 * n + 3 * n + 4 * n + 2 * n + 3 * n);
      m.launches = fused ? 1 : 9;
      break;
    }
  }
  return m;
}

std::vector<KernelCase> kernel_cases(CaseSet set, bool quick) {
  using F = KernelFamily;
  const bool cal = set == CaseSet::kCalibration;
  if (quick) {  // small, cache-resident: for tests of the machinery only
    if (cal) {
      return {{F::kGemmBiasGelu, {96, 96, 128}}, {F::kBiasDropoutResidual, {256, 1024}},
              {F::kLayerNorm, {256, 1024}},      {F::kSoftmax, {2, 256}},
              {F::kAttention, {2, 256, 32}},     {F::kConvBnRelu, {1, 8, 8, 32}},
              {F::kImagePipeline, {256, 512}},   {F::kLstmCell, {128, 512}}};
    }
    return {{F::kGemmBiasGelu, {128, 96, 96}}, {F::kBiasDropoutResidual, {512, 768}},
            {F::kLayerNorm, {384, 1024}},      {F::kSoftmax, {3, 256}},
            {F::kAttention, {3, 256, 32}},     {F::kConvBnRelu, {1, 8, 16, 32}},
            {F::kImagePipeline, {384, 512}},   {F::kLstmCell, {192, 512}}};
  }
  if (cal) {
    return {{F::kGemmBiasGelu, {384, 384, 512}},
            {F::kGemmBiasGelu, {640, 640, 768}},
            {F::kBiasDropoutResidual, {4096, 2048}},
            {F::kBiasDropoutResidual, {6144, 2048}},
            {F::kLayerNorm, {8192, 1024}},
            {F::kLayerNorm, {4096, 4096}},
            {F::kSoftmax, {8, 1024}},
            {F::kSoftmax, {4, 2048}},
            {F::kAttention, {4, 1024, 64}},
            {F::kAttention, {16, 512, 64}},
            {F::kConvBnRelu, {1, 32, 32, 128}},
            {F::kConvBnRelu, {1, 64, 64, 96}},
            {F::kImagePipeline, {3072, 4096}},
            {F::kImagePipeline, {4096, 5120}},
            {F::kLstmCell, {2048, 2048}},
            {F::kLstmCell, {4096, 2048}}};
  }
  return {{F::kGemmBiasGelu, {512, 512, 512}},
          {F::kGemmBiasGelu, {768, 640, 576}},
          {F::kBiasDropoutResidual, {2560, 4096}},
          {F::kBiasDropoutResidual, {12288, 1024}},
          {F::kLayerNorm, {12288, 1024}},
          {F::kLayerNorm, {2560, 4096}},
          {F::kSoftmax, {10, 1024}},
          {F::kSoftmax, {3, 2048}},
          {F::kAttention, {6, 1024, 64}},
          {F::kAttention, {2, 1536, 64}},
          {F::kConvBnRelu, {1, 48, 48, 128}},
          {F::kConvBnRelu, {2, 32, 64, 96}},
          {F::kImagePipeline, {4096, 4096}},
          {F::kImagePipeline, {2048, 7168}},
          {F::kLstmCell, {1536, 4096}},
          {F::kLstmCell, {2560, 2048}}};
}

std::pair<Measurement, Measurement> run_kernel_case(const KernelCase& c, RepeatPolicy policy) {
  Buffers buffers;
  const Forms forms = make_forms(c, buffers);
  forms.fused();  // warm-up: page faults, caches
  forms.unfused();
  std::vector<double> tf, tu;
  double total = 0;
  while (static_cast<int>(tf.size()) < policy.max_repeats &&
         (static_cast<int>(tf.size()) < policy.min_repeats || total < policy.min_total_s)) {
    tf.push_back(seconds_of(forms.fused));
    tu.push_back(seconds_of(forms.unfused));
    total += tf.back() + tu.back();
  }
  std::pair<Measurement, Measurement> out{kernel_work(c, true), kernel_work(c, false)};
  finish(out.first, tf);
  finish(out.second, tu);
  return out;
}

RepeatPolicy kernel_rounds_policy(bool quick) {
  return quick ? RepeatPolicy{3, 3, 0.02} : RepeatPolicy{2, 5, 0.12};
}

std::vector<Measurement> run_kernel_cases(CaseSet set, bool quick, const Progress& progress,
                                          const std::function<void()>& after_round) {
  const RepeatPolicy policy = kernel_rounds_policy(quick);
  const int rounds = quick ? 1 : kKernelRounds;
  std::vector<Measurement> best;
  for (int r = 0; r < rounds; ++r) {
    std::vector<Measurement> out;
    for (const KernelCase& c : kernel_cases(set, quick)) {
      auto [fused, unfused] = run_kernel_case(c, policy);
      if (progress) {
        progress("round " + std::to_string(r + 1) + "/" + std::to_string(rounds) + ": " +
                 std::string(family_name(c.family)) + " " + shape_text(c));
      }
      out.push_back(std::move(fused));
      out.push_back(std::move(unfused));
    }
    keep_fastest(best, out);
    if (after_round) after_round();
  }
  return best;
}

}  // namespace stratasim::kernels
