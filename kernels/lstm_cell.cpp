#include "kernels/lstm_cell.h"

#include <cmath>
#include <cstdint>

#include "kernels/elementwise.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

void check(std::span<const float> gates, std::span<const float> bias, std::span<const float> c,
           std::span<const float> c_out, std::span<const float> h_out, LstmShape s) {
  SS_ASSERT(s.batch >= 0 && s.hidden > 0, "LSTM needs batch >= 0 and hidden > 0");
  const std::size_t n = std::size_t(s.batch) * s.hidden;
  SS_ASSERT(gates.size() == 4 * n, "gates must hold batch*4*hidden floats");
  SS_ASSERT(bias.size() == 4 * std::size_t(s.hidden), "bias must hold 4*hidden floats");
  SS_ASSERT(c.size() == n && c_out.size() == n && h_out.size() == n,
            "c, c_out and h_out must hold batch*hidden floats");
}

// Applies `op(row_of_4h, row_index)` to every batch row in parallel.
template <class Op>
void for_rows(int batch, Op op) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < batch; ++r) op(r);
}

// One batch row of the fused cell: the gates, c' and h' while the row is in registers.
STRATASIM_KERNEL_CLONES
void fused_row(const float* __restrict g, const float* __restrict b, const float* __restrict cr,
               float* __restrict co, float* __restrict ho, int hd) {
#pragma omp simd
  for (int j = 0; j < hd; ++j) {
    const float ig = sigmoid(g[j] + b[j]);
    const float fg = sigmoid(g[hd + j] + b[hd + j]);
    const float gg = tanh_approx(g[2 * hd + j] + b[2 * hd + j]);
    const float og = sigmoid(g[3 * hd + j] + b[3 * hd + j]);
    const float cn = fg * cr[j] + ig * gg;
    co[j] = cn;
    ho[j] = og * tanh_approx(cn);
  }
}

// The unfused form's activation passes over one gate of one row, cloned like the fused row.
STRATASIM_KERNEL_CLONES
void sigmoid_row(float* __restrict a, int n) {
#pragma omp simd
  for (int j = 0; j < n; ++j) a[j] = sigmoid(a[j]);
}
STRATASIM_KERNEL_CLONES
void tanh_row(const float* in, float* out, int n) {  // may run in place
#pragma omp simd
  for (int j = 0; j < n; ++j) out[j] = tanh_approx(in[j]);
}

}  // namespace

void lstm_cell_fused(std::span<const float> gates, std::span<const float> bias,
                     std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                     LstmShape s) {
  check(gates, bias, c, c_out, h_out, s);
  const int hd = s.hidden;
  for_rows(s.batch, [&](int r) {
    const float* __restrict g = gates.data() + std::size_t(r) * 4 * hd;
    const float* __restrict b = bias.data();
    const float* __restrict cr = c.data() + std::size_t(r) * hd;
    float* __restrict co = c_out.data() + std::size_t(r) * hd;
    float* __restrict ho = h_out.data() + std::size_t(r) * hd;
    fused_row(g, b, cr, co, ho, hd);
  });
}

std::size_t lstm_cell_unfused_workspace(LstmShape s) { return std::size_t(s.batch) * 4 * s.hidden; }

void lstm_cell_unfused(std::span<const float> gates, std::span<const float> bias,
                       std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                       std::span<float> workspace, LstmShape s) {
  check(gates, bias, c, c_out, h_out, s);
  SS_ASSERT(workspace.size() >= lstm_cell_unfused_workspace(s), "LSTM workspace too small");
  const int hd = s.hidden;
  float* act = workspace.data();
  const auto row = [&](float* base, int r, int stride) { return base + std::size_t(r) * stride; };
  for_rows(s.batch, [&](int r) {  // pass 1: bias add over all four gates
    const float* __restrict g = gates.data() + std::size_t(r) * 4 * hd;
    float* __restrict a = row(act, r, 4 * hd);
    for (int j = 0; j < 4 * hd; ++j) a[j] = g[j] + bias[j];
  });
  for (int gate : {0, 1, 3}) {  // passes 2-4: sigmoid of i, f and o
    for_rows(s.batch, [&](int r) {
      sigmoid_row(row(act, r, 4 * hd) + gate * hd, hd);
    });
  }
  for_rows(s.batch, [&](int r) {  // pass 5: tanh of g
    float* a = row(act, r, 4 * hd) + 2 * hd;
    tanh_row(a, a, hd);
  });
  for_rows(s.batch, [&](int r) {  // pass 6: c' = f * c
    const float* __restrict f = row(act, r, 4 * hd) + hd;
    const float* __restrict cr = c.data() + std::size_t(r) * hd;
    float* __restrict co = row(c_out.data(), r, hd);
    for (int j = 0; j < hd; ++j) co[j] = f[j] * cr[j];
  });
  for_rows(s.batch, [&](int r) {  // pass 7: c' += i * g
    const float* __restrict a = row(act, r, 4 * hd);
    float* __restrict co = row(c_out.data(), r, hd);
    for (int j = 0; j < hd; ++j) co[j] += a[j] * a[2 * hd + j];
  });
  for_rows(s.batch, [&](int r) {  // pass 8: h' = tanh(c')
    tanh_row(row(c_out.data(), r, hd), row(h_out.data(), r, hd), hd);
  });
  for_rows(s.batch, [&](int r) {  // pass 9: h' *= o
    const float* __restrict o = row(act, r, 4 * hd) + 3 * hd;
    float* __restrict ho = row(h_out.data(), r, hd);
    for (int j = 0; j < hd; ++j) ho[j] *= o[j];
  });
}

void lstm_cell_reference(std::span<const float> gates, std::span<const float> bias,
                         std::span<const float> c, std::span<float> c_out, std::span<float> h_out,
                         LstmShape s) {
  check(gates, bias, c, c_out, h_out, s);
  const int hd = s.hidden;
  const auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  for (int r = 0; r < s.batch; ++r) {
    const auto pre = [&](int gate, int j) {
      return double(gates[std::size_t(r) * 4 * hd + gate * hd + j]) + double(bias[gate * hd + j]);
    };
    for (int j = 0; j < hd; ++j) {
      const double cn = sig(pre(1, j)) * double(c[std::size_t(r) * hd + j]) +
                        sig(pre(0, j)) * std::tanh(pre(2, j));
      c_out[std::size_t(r) * hd + j] = float(cn);
      h_out[std::size_t(r) * hd + j] = float(sig(pre(3, j)) * std::tanh(cn));
    }
  }
}

}  // namespace stratasim::kernels
