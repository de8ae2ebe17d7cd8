// Internal to kernels/cuda: each family's .cu file exposes, in plain C++ (no CUDA types),
//   <family>_gpu(form, host inputs, host outputs, shape): one form on the current device, for
//       the correctness checks on small shapes (copies in, runs, copies back);
//   bench_<family>(shape, timing): device-filled inputs, both forms run and compared (throws
//       std::runtime_error naming the family beyond its tolerance), then timed; returns the
//       fused and the unfused Measurement, work and shape text as the CPU counts them
//       (kernels/kernel_cases.h, kernel_work; attention's unfused GPU form differs, see there).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/conv_bn_relu.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/image_pipeline.h"
#include "kernels/layernorm.h"
#include "kernels/lstm_cell.h"
#include "kernels/measurement.h"
#include "kernels/softmax.h"

namespace stratasim::kernels::cuda::detail {

enum class Form { kFused, kUnfused };

struct Timing {
  int warmup = 2;    // untimed runs first (clocks ramp up, caches, lazy module loading)
  int repeats = 10;  // timed runs; Measurement::seconds is their median
};

void gemm_bias_gelu_gpu(Form f, std::span<const float> a, std::span<const float> b,
                        std::span<const float> bias, std::span<float> c, GemmShape s);
std::vector<Measurement> bench_gemm_bias_gelu(GemmShape s, const Timing& t);

void bias_dropout_residual_gpu(Form f, std::span<const float> x, std::span<const float> bias,
                               std::span<const float> residual, std::span<float> out, int rows,
                               int cols, DropoutParams d);
std::vector<Measurement> bench_bias_dropout_residual(int rows, int cols, const Timing& t);

void add_layernorm_gpu(Form f, std::span<const float> x, std::span<const float> residual,
                       std::span<const float> gamma, std::span<const float> beta,
                       std::span<float> h, std::span<float> y, LayerNormShape s);
std::vector<Measurement> bench_layernorm(LayerNormShape s, const Timing& t);

void softmax_gpu(Form f, std::span<const float> x, std::span<float> y, SoftmaxShape s);
std::vector<Measurement> bench_softmax(SoftmaxShape s, const Timing& t);

// Head dimensions up to kMaxAttentionHeadDim (the fused kernel keeps a d-wide row per thread
// group in registers).
inline constexpr int kMaxAttentionHeadDim = 128;
void attention_gpu(Form f, std::span<const float> q, std::span<const float> k,
                   std::span<const float> v, std::span<float> o, AttentionShape s);
std::vector<Measurement> bench_attention(AttentionShape s, const Timing& t);

void conv_bn_relu_gpu(Form f, std::span<const float> x, std::span<const float> w,
                      const BatchNorm& bn, std::span<float> y, ConvShape s);
std::vector<Measurement> bench_conv_bn_relu(ConvShape s, const Timing& t);  // square: h == w

void image_pipeline_gpu(Form f, std::span<const float> in, std::span<float> out, ImageShape s);
std::vector<Measurement> bench_image_pipeline(ImageShape s, const Timing& t);

void lstm_cell_gpu(Form f, std::span<const float> gates, std::span<const float> bias,
                   std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                   LstmShape s);
std::vector<Measurement> bench_lstm_cell(LstmShape s, const Timing& t);

// The fused softmax rows of softmax.cu on device pointers (in place allowed), for attention.
void launch_softmax_rows(const float* x, float* y, std::size_t rows, int s, float scale,
                         bool causal);

// Microbenchmarks (microbench.cu).
// copy and triad over arrays of `floats` elements; the shape ends in " cache" when an array
// fits 8 times in the L2 cache (l2_B bytes), " dram" when it is at least twice the L2 (as the
// CPU microbenchmarks tag them, so the calibration fits the DRAM bandwidth on the latter).
std::vector<Measurement> bench_stream(std::size_t floats, double l2_B, const Timing& t);
std::vector<Measurement> bench_gemm_peak(int n, const Timing& t);  // fp32, tf32, fp16, bf16
std::vector<Measurement> bench_launch(const Timing& t);

}  // namespace stratasim::kernels::cuda::detail
