// AmoebaNet-D (Real et al. 2019, "Regularized Evolution for Image Classifier Architecture
// Search"; the (L, D) = (18, 256) network GPipe trains, Huang et al. 2019 Table 1) as an operator
// graph per 224x224x3 sample, cell by cell as torchgpipe's benchmarks build it
// (kakaobrain/torchgpipe benchmarks/models/amoebanet: the genotype with TensorFlow's
// normal_concat [0, 3, 4, 6], which reproduces GPipe's parameter count; its "max_pool_3x3" is an
// average pool there, kept so). Layers in torchgpipe's nn.Sequential order: a stem, two
// reduction cells, L/3 normal cells, a reduction cell, L/3 normal, a reduction, L/3 normal, the
// classifier. Op names start with the layer's name ("cell1_normal2.reduce1.conv"), so a split
// of the Sequential's layers maps onto ops.
// FLOPs: a convolution 2 * H_out * W_out * C_in * C_out * k_h * k_w; a pool one FLOP per window
// element; batch norm, ReLU and adds a few per element, as in model_resnet.cpp.
#include <string>
#include <vector>

#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

struct Tensor {
  int op = -1;       // producer (-1: the model input)
  int channels = 0;
  int hw = 0;        // spatial size (square)
  double elements() const { return double(channels) * hw * hw; }
};

enum class CellOp { kConv1x1, kPool3x3, kNone, kConv1x7x7x1, kMaxPool2x2, kConv3x3 };

struct Pair {
  int state;
  CellOp op;
};

// torchgpipe benchmarks/models/amoebanet/genotype.py.
const std::vector<Pair> kNormal = {{1, CellOp::kConv1x1}, {1, CellOp::kPool3x3}, {1, CellOp::kNone},
                                   {0, CellOp::kConv1x7x7x1}, {0, CellOp::kConv1x1}, {0, CellOp::kConv1x7x7x1},
                                   {2, CellOp::kPool3x3}, {2, CellOp::kNone}, {1, CellOp::kPool3x3},
                                   {5, CellOp::kConv1x1}};
const std::vector<int> kNormalConcat = {0, 3, 4, 6};
const std::vector<Pair> kReduction = {{0, CellOp::kMaxPool2x2}, {0, CellOp::kPool3x3}, {2, CellOp::kNone},
                                      {1, CellOp::kConv3x3}, {2, CellOp::kConv1x7x7x1}, {2, CellOp::kPool3x3},
                                      {3, CellOp::kNone}, {1, CellOp::kMaxPool2x2}, {2, CellOp::kPool3x3},
                                      {3, CellOp::kConv1x1}};
const std::vector<int> kReductionConcat = {4, 5, 6};

class AmoebaBuilder {
 public:
  explicit AmoebaBuilder(ModelSpec& m) : ops_(m.graph.ops) {}

  Tensor add(const std::string& name, GraphOpKind kind, double flops, Tensor out, double params,
             std::vector<int> inputs) {
    GraphOp op{.name = name, .kind = kind, .flops = flops, .output_elements = out.elements(),
               .params = params};
    for (int in : inputs) {
      if (in >= 0) op.inputs.push_back(in);
    }
    if (op.inputs.empty()) op.input_elements = 224.0 * 224.0 * 3.0;
    ops_.push_back(std::move(op));
    out.op = static_cast<int>(ops_.size()) - 1;
    return out;
  }

  Tensor relu(const std::string& name, Tensor x) {
    return add(name + ".relu", GraphOpKind::kElementwise, x.elements(), x, 0, {x.op});
  }
  // A k_h x k_w convolution without bias (stride on each axis), then batch norm.
  Tensor conv_bn(const std::string& name, Tensor x, int c_out, int kh, int kw, int stride) {
    Tensor y{-1, c_out, (x.hw + stride - 1) / stride};
    y = add(name + ".conv", GraphOpKind::kConv, 2.0 * y.elements() * x.channels * kh * kw, y,
            double(x.channels) * c_out * kh * kw, {x.op});
    return add(name + ".bn", GraphOpKind::kNorm, 5.0 * y.elements(), y, 2.0 * c_out, {y.op});
  }
  Tensor relu_conv_bn(const std::string& name, Tensor x, int c_out, int k = 1, int stride = 1) {
    return conv_bn(name, relu(name, x), c_out, k, k, stride);
  }
  // ReLU, two 1x1 stride-2 convolutions of C/2 (the second on the input shifted by one pixel),
  // concatenated, batch norm (operations.py FactorizedReduce).
  Tensor factorized_reduce(const std::string& name, Tensor x, int c_out) {
    const Tensor r = relu(name, x);
    const Tensor shifted = add(name + ".pad", GraphOpKind::kElementwise, 0, r, 0, {r.op});
    Tensor half{-1, c_out / 2, (x.hw + 1) / 2};
    const double flops = 2.0 * half.elements() * x.channels;
    const double params = double(x.channels) * (c_out / 2);
    const Tensor a = add(name + ".conv1", GraphOpKind::kConv, flops, half, params, {r.op});
    const Tensor b = add(name + ".conv2", GraphOpKind::kConv, flops, half, params, {shifted.op});
    Tensor cat{-1, 2 * half.channels, half.hw};
    cat = add(name + ".cat", GraphOpKind::kElementwise, 0, cat, 0, {a.op, b.op});
    return add(name + ".bn", GraphOpKind::kNorm, 5.0 * cat.elements(), cat, 2.0 * cat.channels, {cat.op});
  }
  Tensor pool(const std::string& name, Tensor x, int k, int stride) {
    const Tensor y{-1, x.channels, (x.hw + stride - 1) / stride};
    return add(name, GraphOpKind::kPool, double(k) * k * y.elements(), y, 0, {x.op});
  }
  Tensor cell_op(const std::string& name, CellOp op, Tensor x, int c, int stride) {
    switch (op) {
      case CellOp::kConv1x1: return relu_conv_bn(name, x, c, 1, stride);
      case CellOp::kPool3x3: return pool(name + ".avgpool3x3", x, 3, stride);
      case CellOp::kMaxPool2x2: return pool(name + ".maxpool2x2", x, 2, stride);
      case CellOp::kNone: return stride == 1 ? x : factorized_reduce(name, x, c);
      case CellOp::kConv1x7x7x1: {
        Tensor y = relu_conv_bn(name + ".a", x, c / 4);
        y = conv_bn(name + ".b", relu(name + ".b", y), c / 4, 1, 7, stride);
        // The 7x1 convolution strides the other axis: the square size stays hw / stride.
        y = conv_bn(name + ".c", relu(name + ".c", y), c / 4, 7, 1, 1);
        return relu_conv_bn(name + ".d", y, c);
      }
      case CellOp::kConv3x3: {
        Tensor y = relu_conv_bn(name + ".a", x, c / 4);
        y = relu_conv_bn(name + ".b", y, c / 4, 3, stride);
        return relu_conv_bn(name + ".c", y, c);
      }
    }
    return x;
  }

  // One cell (models/amoebanet/__init__.py Cell.forward): states s1 (the previous layer's
  // output) and s2 (the one before it), five pairs of operations added, the concatenation.
  Tensor cell(const std::string& name, Tensor s1, Tensor s2, int c, bool reduction, bool reduction_prev) {
    std::vector<Tensor> states{relu_conv_bn(name + ".reduce1", s1, c)};
    if (reduction_prev) {
      states.push_back(factorized_reduce(name + ".reduce2", s2, c));
    } else if (s2.channels != c) {
      states.push_back(relu_conv_bn(name + ".reduce2", s2, c));
    } else {
      states.push_back(s2);
    }
    const std::vector<Pair>& genotype = reduction ? kReduction : kNormal;
    for (size_t i = 0; i < genotype.size(); i += 2) {
      Tensor h[2];
      for (int j = 0; j < 2; ++j) {
        const Pair& p = genotype[i + j];
        const int stride = reduction && p.state < 2 ? 2 : 1;
        h[j] = cell_op(name + ".op" + std::to_string(i + j), p.op, states[p.state], c, stride);
      }
      states.push_back(add(name + ".add" + std::to_string(i / 2), GraphOpKind::kElementwise,
                           h[0].elements(), h[0], 0, {h[0].op, h[1].op}));
    }
    // torch.cat of the concat states: chained two at a time (an op reads at most three tensors).
    const std::vector<int>& concat = reduction ? kReductionConcat : kNormalConcat;
    Tensor out = states[concat[0]];
    for (size_t i = 1; i < concat.size(); ++i) {
      const Tensor& next = states[concat[i]];
      Tensor joined{-1, out.channels + next.channels, next.hw};
      out = add(name + ".cat" + std::to_string(i), GraphOpKind::kElementwise, 0, joined, 0, {out.op, next.op});
    }
    return out;
  }

 private:
  std::vector<GraphOp>& ops_;
};

}  // namespace

ModelSpec make_amoebanet_d(int num_layers, int num_filters, int classes) {
  ModelSpec m;
  m.name = "amoebanet-d-" + std::to_string(num_layers) + "-" + std::to_string(num_filters);
  m.family = ModelFamily::kOpGraph;
  AmoebaBuilder b(m);
  int c = num_filters / 4;
  const Tensor image{-1, 3, 224};
  // Stem: ReLU, 3x3 stride-2 convolution to c channels, batch norm.
  Tensor x = b.conv_bn("stem1", b.relu("stem1", image), c, 3, 3, 2);
  Tensor prev = x, prev_prev = x;
  bool reduction_prev = false;
  auto next_cell = [&](const std::string& name, bool reduction) {
    const Tensor out = b.cell(name, prev, prev_prev, c, reduction, reduction_prev);
    prev_prev = prev;
    prev = out;
    reduction_prev = reduction;
  };
  c *= 2, next_cell("stem2", true);
  c *= 2, next_cell("stem3", true);
  const int normal = num_layers / 3;
  for (int i = 0; i < normal; ++i) next_cell("cell1_normal" + std::to_string(i + 1), false);
  c *= 2, next_cell("cell2_reduction", true);
  for (int i = 0; i < normal; ++i) next_cell("cell3_normal" + std::to_string(i + 1), false);
  c *= 2, next_cell("cell4_reduction", true);
  for (int i = 0; i < normal; ++i) next_cell("cell5_normal" + std::to_string(i + 1), false);
  // Classifier: 7x7 average pool, linear layer with bias, loss.
  const Tensor pooled = b.pool("classify.avgpool", prev, prev.hw, prev.hw);
  const Tensor logits = b.add("classify.fc", GraphOpKind::kMatmul, 2.0 * pooled.channels * classes,
                              Tensor{-1, classes, 1}, double(pooled.channels) * classes + classes, {pooled.op});
  b.add("classify.loss", GraphOpKind::kLoss, 5.0 * classes, Tensor{-1, 1, 1}, 0, {logits.op});
  return m;
}

}  // namespace stratasim
