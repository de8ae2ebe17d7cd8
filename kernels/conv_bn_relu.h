// 3x3 convolution (stride 1, zero padding 1) + batch norm (inference: given running mean and
// variance) + ReLU, the CNN block of ResNet (He et al. 2016), fp32, NCHW:
//   y[n, k, r, c] = relu((conv(x, w)[n, k, r, c] - mean[k]) / sqrt(var[k] + eps) * gamma[k]
//                        + beta[k])
// (Ioffe & Szegedy 2015, Alg. 1 with population statistics).
// fused:     direct convolution, one output row at a time; batch norm and ReLU are applied to the
//            row while it is in L1 (one write of y).
// unfused:   the convolution writes y, then a batch-norm pass and a ReLU pass over y.
// reference: naive seven-deep loop in double.
#pragma once

#include <span>

namespace stratasim::kernels {

struct ConvShape {
  int n = 0, c = 0, k = 0;  // batch, input channels, output channels
  int h = 0, w = 0;         // spatial size (output is the same size)
};

struct BatchNorm {
  std::span<const float> gamma, beta, mean, var;  // k floats each
  float eps = 1e-5f;
};

void conv3x3(std::span<const float> x, std::span<const float> w, std::span<float> y, ConvShape s);
void batchnorm_inplace(std::span<float> y, const BatchNorm& bn, ConvShape s);
void relu_inplace(std::span<float> y);

void conv_bn_relu_fused(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                        std::span<float> y, ConvShape s);
void conv_bn_relu_unfused(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                          std::span<float> y, ConvShape s);
void conv_bn_relu_reference(std::span<const float> x, std::span<const float> w, const BatchNorm& bn,
                            std::span<float> y, ConvShape s);

}  // namespace stratasim::kernels
