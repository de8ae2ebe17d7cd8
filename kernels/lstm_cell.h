// LSTM cell elementwise part (Hochreiter & Schmidhuber 1997; gate order i, f, g, o as in
// cuDNN/PyTorch), fp32, given the gate pre-activations G = x W^T + h U^T [batch x 4*hidden]:
//   i = sigmoid(G_i + b_i)  f = sigmoid(G_f + b_f)  g = tanh(G_g + b_g)  o = sigmoid(G_o + b_o)
//   c' = f * c + i * g      h' = o * tanh(c')
// fused:     one pass per batch row (reads G and c, writes c' and h').
// unfused:   the framework's separate ops: bias add, three sigmoids, tanh, f*c, += i*g,
//            tanh(c'), *o, each a pass over memory (gates in a caller-provided workspace).
// reference: double precision.
#pragma once

#include <cstddef>
#include <span>

namespace stratasim::kernels {

struct LstmShape {
  int batch = 0, hidden = 0;
};

void lstm_cell_fused(std::span<const float> gates, std::span<const float> bias,
                     std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                     LstmShape s);
// Floats of workspace lstm_cell_unfused needs: batch * 4 * hidden.
std::size_t lstm_cell_unfused_workspace(LstmShape s);
void lstm_cell_unfused(std::span<const float> gates, std::span<const float> bias,
                       std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                       std::span<float> workspace, LstmShape s);
void lstm_cell_reference(std::span<const float> gates, std::span<const float> bias,
                         std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                         LstmShape s);

}  // namespace stratasim::kernels
