// An LSTM language model (Hochreiter & Schmidhuber 1997; sizes of Zaremba et al. 2014) as an
// operator graph. One time step is the block; it repeats `steps` times per sample with the
// same weights. Gates: [i f g o] = W x + U h + b, a matmul of 2 * (in + H) * 4H FLOP.
#include <string>

#include "sim/core/kernel_families.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

int push(OpGraphSpec& g, std::string name, GraphOpKind kind, double flops, double out,
         double params, std::vector<int> inputs) {
  g.ops.push_back(GraphOp{.name = std::move(name), .kind = kind, .flops = flops,
                          .output_elements = out, .params = params, .inputs = std::move(inputs)});
  return static_cast<int>(g.ops.size()) - 1;
}

// One LSTM cell step; returns the op producing h_t.
int lstm_cell(OpGraphSpec& g, const std::string& p, int input, double in, double h) {
  int gates = push(g, p + ".gates", GraphOpKind::kMatmul, 2.0 * (in + h) * 4 * h, 4 * h,
                   4 * h * (in + h) + 4 * h, {input});
  int sig = push(g, p + ".sigmoid_ifo", GraphOpKind::kElementwise, 4 * 3 * h, 3 * h, 0, {gates});
  int tanh_g = push(g, p + ".tanh_g", GraphOpKind::kElementwise, 4 * h, h, 0, {gates});
  int cell = push(g, p + ".cell", GraphOpKind::kElementwise, 3 * h, h, 0, {sig, tanh_g});
  int tanh_c = push(g, p + ".tanh_c", GraphOpKind::kElementwise, 4 * h, h, 0, {cell});
  const int hidden = push(g, p + ".hidden", GraphOpKind::kElementwise, h, h, 0, {sig, tanh_c});
  // The gate nonlinearities and the state update are the kernel family `calibrate` times as
  // lstm_cell (kernels/lstm_cell.h).
  for (int i = sig; i <= hidden; ++i) g.ops[i].family = kernel_family_index("lstm_cell");
  return hidden;
}

}  // namespace

ModelSpec make_lstm_lm(int layers, int hidden, int vocab, int steps) {
  ModelSpec m;
  m.name = "lstm-" + std::to_string(layers) + "layer";
  m.family = ModelFamily::kOpGraph;
  OpGraphSpec& g = m.graph;
  g.repeat = steps;
  const double h = hidden;
  int x = push(g, "embedding", GraphOpKind::kElementwise, 0, h, static_cast<double>(vocab) * h, {});
  g.ops[0].input_elements = 1;
  for (int l = 0; l < layers; ++l) x = lstm_cell(g, "lstm" + std::to_string(l), x, h, h);
  x = push(g, "proj", GraphOpKind::kMatmul, 2.0 * h * vocab, vocab, h * vocab + vocab, {x});
  push(g, "loss", GraphOpKind::kLoss, 5.0 * vocab, 1, 0, {x});
  return m;
}

}  // namespace stratasim
