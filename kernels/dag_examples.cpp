#include "kernels/dag_examples.h"

#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

// One LSTM cell step reading `previous` (the last step's h', or none): returns its h'.
int lstm_step(DagGraph& g, const std::string& prefix, int previous, double flop) {
  const int x = g.add(prefix + "x,h matmul", previous >= 0 ? std::vector<int>{previous} : std::vector<int>{}, flop);
  std::vector<int> gates;
  for (const char* gate : {"input gate", "forget gate", "cell gate", "output gate"}) {
    gates.push_back(g.add(prefix + gate, {x}, flop));
  }
  const int c = g.add(prefix + "c' = f*c + i*g", {gates[0], gates[1], gates[2]}, 0.2 * flop);
  return g.add(prefix + "h' = o*tanh(c')", {c, gates[3]}, 0.2 * flop);
}

}  // namespace

std::vector<std::string> dag_example_names() { return {"resnet", "lstm", "lstm_sequence", "attention"}; }

DagGraph dag_example(const std::string& name, double flop, int steps) {
  DagGraph g;
  if (name == "resnet") {
    const int in = g.add("input", {}, 0.1 * flop);
    const int c1 = g.add("conv1x1 reduce", {in}, flop);
    const int c2 = g.add("conv3x3", {c1}, 2 * flop);
    const int c3 = g.add("conv1x1 expand", {c2}, flop);
    const int sc = g.add("shortcut conv1x1", {in}, flop);
    g.add("add+relu", {c3, sc}, 0.1 * flop);
  } else if (name == "lstm") {
    lstm_step(g, "", -1, flop);
  } else if (name == "lstm_sequence") {
    int h = -1;
    for (int t = 0; t < steps; ++t) h = lstm_step(g, "t" + std::to_string(t) + " ", h, flop);
  } else if (name == "attention") {
    const int qkv = g.add("qkv projection", {}, 2 * flop);
    std::vector<int> heads;
    for (int h = 0; h < 8; ++h) heads.push_back(g.add("head " + std::to_string(h), {qkv}, flop));
    const int cat = g.add("concat", heads, 0.1 * flop);
    g.add("output projection", {cat}, 2 * flop);
  } else {
    throw InputError("command line", "--dag", "\"" + name + "\"", "must be resnet, lstm, lstm_sequence or attention");
  }
  return g;
}

}  // namespace stratasim::kernels
