// ResNet-50 and ResNet-101 (He et al. 2016, Table 1: bottleneck blocks [3, 4, 6, 3] and
// [3, 4, 23, 3]) as operator graphs, per 224x224x3 sample.
// FLOPs of a convolution: 2 * H_out * W_out * C_in * C_out * k^2 (multiply-add = 2 FLOP).
// Batch norm and ReLU: a few FLOP per element. Expected totals: ~25.6 M parameters and
// ~8.2 GFLOP forward per sample (4.1 G multiply-adds) for ResNet-50, 44.5 M and ~15.7 GFLOP
// for ResNet-101 (torchvision's counts), which tests check.
#include <string>

#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

class ResNetBuilder {
 public:
  explicit ResNetBuilder(ModelSpec& m) : ops_(m.graph.ops) {}

  // conv(k x k, stride) + batch norm + ReLU (optional); returns the last op index.
  int conv_bn(const std::string& name, int input, int c_in, int c_out, int k, int stride,
              bool relu) {
    out_hw_ = (hw_ + stride - 1) / stride;
    const double out_elements = static_cast<double>(out_hw_) * out_hw_ * c_out;
    int conv = add(name + ".conv", GraphOpKind::kConv,
                   2.0 * out_elements * c_in * k * k, out_elements,
                   static_cast<double>(c_in) * c_out * k * k, input);
    // Rows for a spatial split: the output's, and the k / 2 input rows a k x k filter reads
    // beyond them on each side (batch norm and ReLU inherit the rows).
    ops_[conv].height = out_hw_;
    ops_[conv].halo = k / 2;
    int last = add(name + ".bn", GraphOpKind::kNorm, 5.0 * out_elements, out_elements,
                   2.0 * c_out, conv);
    if (relu) last = add(name + ".relu", GraphOpKind::kElementwise, out_elements, out_elements,
                         0, last);
    return last;
  }

  int bottleneck(const std::string& name, int input, int c_in, int width, int stride) {
    const int c_out = 4 * width;
    const int in_hw = hw_;
    int a = conv_bn(name + ".a", input, c_in, width, 1, 1, true);
    int b = conv_bn(name + ".b", a, width, width, 3, stride, true);
    hw_ = out_hw_;
    int c = conv_bn(name + ".c", b, width, c_out, 1, 1, false);
    int shortcut = input;
    if (stride != 1 || c_in != c_out) {
      const int saved = hw_;
      hw_ = in_hw;
      shortcut = conv_bn(name + ".down", input, c_in, c_out, 1, stride, false);
      hw_ = saved;
    }
    const double elements = static_cast<double>(hw_) * hw_ * c_out;
    int add_op = add(name + ".add", GraphOpKind::kElementwise, elements, elements, 0, c);
    ops_[add_op].inputs.push_back(shortcut);
    return add(name + ".relu", GraphOpKind::kElementwise, elements, elements, 0, add_op);
  }

  int add(std::string name, GraphOpKind kind, double flops, double out, double params,
          int input) {
    GraphOp op{.name = std::move(name), .kind = kind, .flops = flops, .output_elements = out,
               .params = params};
    if (input >= 0) op.inputs.push_back(input);
    ops_.push_back(std::move(op));
    return static_cast<int>(ops_.size()) - 1;
  }

  int hw_ = 224;
  int out_hw_ = 224;

 private:
  std::vector<GraphOp>& ops_;
};

}  // namespace

namespace {

ModelSpec make_resnet(const std::string& name, const int (&blocks)[4]) {
  ModelSpec m;
  m.name = name;
  m.family = ModelFamily::kOpGraph;
  ResNetBuilder b(m);
  int x = b.conv_bn("stem", -1, 3, 64, 7, 2, true);
  m.graph.ops[0].input_elements = 224.0 * 224.0 * 3.0;
  m.graph.ops[0].input_height = 224;
  b.hw_ = b.out_hw_;  // 112
  b.hw_ = 56;         // 3x3 max pool, stride 2
  x = b.add("stem.maxpool", GraphOpKind::kPool, 9.0 * 56 * 56 * 64, 56.0 * 56 * 64, 0, x);
  m.graph.ops[x].height = 56, m.graph.ops[x].halo = 1;  // 3x3, stride 2
  const int widths[4] = {64, 128, 256, 512};
  int c_in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < blocks[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = b.bottleneck("layer" + std::to_string(stage + 1) + "." + std::to_string(i), x, c_in,
                       widths[stage], stride);
      c_in = 4 * widths[stage];
    }
  }
  const double features = 7.0 * 7.0 * 2048.0;
  x = b.add("avgpool", GraphOpKind::kPool, features, 2048, 0, x);
  x = b.add("fc", GraphOpKind::kMatmul, 2.0 * 2048 * 1000, 1000, 2048.0 * 1000 + 1000, x);
  b.add("loss", GraphOpKind::kLoss, 5.0 * 1000, 1, 0, x);
  return m;
}

}  // namespace

ModelSpec make_resnet50() { return make_resnet("resnet50", {3, 4, 6, 3}); }
ModelSpec make_resnet101() { return make_resnet("resnet101", {3, 4, 23, 3}); }

}  // namespace stratasim
