// VGG-16 (Simonyan & Zisserman 2015, configuration D) as an operator graph per 224x224x3
// sample, as torchvision builds it (no batch norm): thirteen 3x3 convolutions with biases and
// ReLUs in five blocks (64, 128, 256, 512, 512 channels) each ending in a 2x2 max pool, a 7x7
// average pool (adaptive, a no-op at 224), and the classifier 25088 -> 4096 -> 4096 -> 1000
// with ReLU and dropout. FLOPs: a convolution 2 * H_out * W_out * C_in * C_out * 9; the
// linear layers 2 * in * out. Expected: torchvision's 138,357,544 parameters and 15.47 G
// multiply-adds (30.9 GFLOP), which tests check.
#include <string>

#include "strategies/model/model_json.h"

namespace stratasim {

ModelSpec make_vgg16(int classes) {
  ModelSpec m;
  m.name = "vgg16";
  m.family = ModelFamily::kOpGraph;
  std::vector<GraphOp>& ops = m.graph.ops;
  auto add = [&](std::string name, GraphOpKind kind, double flops, double out, double params) {
    GraphOp op{.name = std::move(name), .kind = kind, .flops = flops, .output_elements = out, .params = params};
    if (ops.empty()) {
      op.input_elements = 224.0 * 224.0 * 3.0;
    } else {
      op.inputs.push_back(static_cast<int>(ops.size()) - 1);
    }
    ops.push_back(std::move(op));
  };
  const int blocks[5][2] = {{2, 64}, {2, 128}, {3, 256}, {3, 512}, {3, 512}};
  int hw = 224, c_in = 3;
  for (int b = 0; b < 5; ++b) {
    for (int i = 0; i < blocks[b][0]; ++i) {
      const int c = blocks[b][1];
      const double out = double(hw) * hw * c;
      const std::string name = "features.block" + std::to_string(b + 1) + ".conv" + std::to_string(i + 1);
      add(name, GraphOpKind::kConv, 2.0 * out * c_in * 9, out, double(c_in) * c * 9 + c);
      add(name + ".relu", GraphOpKind::kElementwise, out, out, 0);
      c_in = c;
    }
    hw /= 2;
    const double pooled = double(hw) * hw * c_in;
    add("features.block" + std::to_string(b + 1) + ".maxpool", GraphOpKind::kPool, 4 * pooled, pooled, 0);
  }
  const double features = double(hw) * hw * c_in;  // 7 x 7 x 512 = 25088
  double in = features;
  for (int i = 0; i < 3; ++i) {
    const double out = i < 2 ? 4096 : classes;
    const std::string name = "classifier.fc" + std::to_string(i + 1);
    add(name, GraphOpKind::kMatmul, 2.0 * in * out, out, in * out + out);
    if (i < 2) {
      add(name + ".relu", GraphOpKind::kElementwise, out, out, 0);
      add(name + ".dropout", GraphOpKind::kElementwise, 2 * out, out, 0);
    }
    in = out;
  }
  add("loss", GraphOpKind::kLoss, 5.0 * classes, 1, 0);
  return m;
}

}  // namespace stratasim
