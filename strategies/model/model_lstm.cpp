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

int concat(OpGraphSpec& g, const std::string& name, std::vector<int> inputs, double width) {
  return push(g, name, GraphOpKind::kElementwise, 0, width, 0, std::move(inputs));
}

}  // namespace

// GNMT (Wu et al. 2016, Sec. 3) as PipeDream (SOSP'19) and MLPerf train it, one time step per
// block, `steps` of them per sentence pair (source and target padded to the same length):
//   encoder: embedding; layer 0 bidirectional (two cells, outputs concatenated), layer 1 on
//     the 2H concatenation, the others on H with residual connections from layer 2 on;
//   attention (Bahdanau, normalized): the first decoder layer's output is the query; a
//     projection of the source states (one per step: 2 H^2, as the encoder produces them),
//     scores against all `steps` source states (2 steps H) and their softmax, the context
//     (2 steps H);
//   decoder: embedding; layer 0 on it, layers 1.. on [previous output, context] (2H), residual
//     from layer 2 on; the classifier over the vocabulary and the loss.
// Separate source and target embeddings (GNMT's vocabularies may differ; MLPerf shares one).
ModelSpec make_gnmt(int encoder_layers, int decoder_layers, int hidden, int vocab, int steps) {
  ModelSpec m;
  m.name = "gnmt-" + std::to_string(encoder_layers + decoder_layers);
  m.family = ModelFamily::kOpGraph;
  OpGraphSpec& g = m.graph;
  g.repeat = steps;
  const double h = hidden, S = steps;
  const int src = push(g, "encoder.embedding", GraphOpKind::kElementwise, 0, h, double(vocab) * h, {});
  g.ops[src].input_elements = 1;
  int x = concat(g, "encoder.l0.concat",
                 {lstm_cell(g, "encoder.l0.fwd", src, h, h), lstm_cell(g, "encoder.l0.bwd", src, h, h)},
                 2 * h);
  for (int l = 1; l < encoder_layers; ++l) {
    const int y = lstm_cell(g, "encoder.l" + std::to_string(l), x, l == 1 ? 2 * h : h, h);
    x = l >= 2 ? concat(g, "encoder.l" + std::to_string(l) + ".residual", {x, y}, h) : y;
  }
  const int keys = push(g, "attention.keys", GraphOpKind::kMatmul, 2 * h * h, h, h * h, {x});
  const int tgt = push(g, "decoder.embedding", GraphOpKind::kElementwise, 0, h, double(vocab) * h, {});
  g.ops[tgt].input_elements = 1;
  int y = lstm_cell(g, "decoder.l0", tgt, h, h);
  const int query = push(g, "attention.query", GraphOpKind::kMatmul, 2 * h * h, h, h * h + h, {y});
  const int scores = push(g, "attention.scores", GraphOpKind::kMatmul, 2 * S * h, S, h, {query, keys});
  const int weights = push(g, "attention.softmax", GraphOpKind::kElementwise, 5 * S, S, 0, {scores});
  const int context = push(g, "attention.context", GraphOpKind::kMatmul, 2 * S * h, h, 0, {weights, x});
  for (int l = 1; l < decoder_layers; ++l) {
    const std::string p = "decoder.l" + std::to_string(l);
    const int in = concat(g, p + ".input", {y, context}, 2 * h);
    const int out = lstm_cell(g, p, in, 2 * h, h);
    y = l >= 2 ? concat(g, p + ".residual", {y, out}, h) : out;
  }
  const int logits = push(g, "classifier", GraphOpKind::kMatmul, 2.0 * h * vocab, vocab, h * vocab + vocab, {y});
  push(g, "loss", GraphOpKind::kLoss, 5.0 * vocab, 1, 0, {logits});
  return m;
}

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
