#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/softmax.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

constexpr int kBr = 32;  // query rows per tile
constexpr int kBc = 64;  // keys per tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void check(std::span<const float> q, std::span<const float> k, std::span<const float> v,
           std::span<const float> o, AttentionShape sh) {
  SS_ASSERT(sh.bh >= 0 && sh.s > 0 && sh.d > 0, "attention needs bh >= 0, s > 0, d > 0");
  const std::size_t n = std::size_t(sh.bh) * sh.s * sh.d;
  SS_ASSERT(q.size() == n && k.size() == n && v.size() == n && o.size() == n,
            "q, k, v and o must hold bh*s*d floats");
}

float scale_of(AttentionShape sh) { return 1.0f / std::sqrt(float(sh.d)); }

// Per-thread scratch of one query tile: K block transposed, scores, output accumulator, stats.
struct FlashTile {
  std::vector<float> kt, scores, acc, m, l;
  explicit FlashTile(int d)
      : kt(std::size_t(d) * kBc), scores(kBr * kBc), acc(std::size_t(kBr) * d), m(kBr), l(kBr) {}
};

// Online-softmax update of rows [r0, r0+nr) with keys [c0, c0+nc). Not cloned (elementwise.h):
// inlined into attention_fused's parallel region it runs the baseline target's code, which
// measured faster than the AVX-512 clone on these 32x64 tiles (bh8 s1024 d64 causal, 2
// threads, alternating runs: 30.8 ms baseline, 34.2 ms x86-64-v4).
void flash_block(const float* q, const float* k, const float* v, FlashTile& t, AttentionShape sh,
                 float scale, int r0, int nr, int c0, int nc) {
  const int d = sh.d;
  for (int c = 0; c < nc; ++c) {  // K block transposed: the score loop then runs along keys
    for (int x = 0; x < d; ++x) t.kt[std::size_t(x) * kBc + c] = k[std::size_t(c0 + c) * d + x];
  }
  for (int r = 0; r < nr; ++r) {
    float* __restrict srow = t.scores.data() + r * kBc;
    std::fill_n(srow, nc, 0.0f);
    for (int x = 0; x < d; ++x) {
      const float qv = q[std::size_t(r0 + r) * d + x] * scale;
      const float* __restrict kt = t.kt.data() + std::size_t(x) * kBc;
      for (int c = 0; c < nc; ++c) srow[c] += qv * kt[c];
    }
    const int valid = sh.causal ? std::clamp(r0 + r - c0 + 1, 0, nc) : nc;
    if (valid == 0) continue;  // the whole block lies above the diagonal for this row
    float m_new = t.m[r];
#pragma omp simd reduction(max : m_new)
    for (int c = 0; c < valid; ++c) m_new = std::max(m_new, srow[c]);
    const float correction = exp_approx(t.m[r] - m_new);  // exp(-inf) = 0 on the first block
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < valid; ++c) {
      srow[c] = exp_approx(srow[c] - m_new);
      sum += srow[c];
    }
    t.l[r] = t.l[r] * correction + sum;
    t.m[r] = m_new;
    float* __restrict arow = t.acc.data() + std::size_t(r) * d;
    for (int x = 0; x < d; ++x) arow[x] *= correction;
    for (int c = 0; c < valid; ++c) {
      const float p = srow[c];
      const float* __restrict vrow = v + std::size_t(c0 + c) * d;
      for (int x = 0; x < d; ++x) arow[x] += p * vrow[x];
    }
  }
}

}  // namespace

void attention_fused(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                     std::span<float> o, AttentionShape sh) {
  check(q, k, v, o, sh);
  const int qblocks = (sh.s + kBr - 1) / kBr;
  const float scale = scale_of(sh);
#pragma omp parallel
  {
    FlashTile t(sh.d);
#pragma omp for collapse(2) schedule(dynamic)
    for (int b = 0; b < sh.bh; ++b) {
      for (int qb = 0; qb < qblocks; ++qb) {
        const std::size_t off = std::size_t(b) * sh.s * sh.d;
        const int r0 = qb * kBr, nr = std::min(kBr, sh.s - r0);
        std::fill(t.m.begin(), t.m.end(), kNegInf);
        std::fill(t.l.begin(), t.l.end(), 0.0f);
        std::fill(t.acc.begin(), t.acc.end(), 0.0f);
        const int key_end = sh.causal ? r0 + nr : sh.s;  // causal: later keys are all masked
        for (int c0 = 0; c0 < key_end; c0 += kBc) {
          flash_block(q.data() + off, k.data() + off, v.data() + off, t, sh, scale, r0, nr, c0,
                      std::min(kBc, key_end - c0));
        }
        for (int r = 0; r < nr; ++r) {
          const float inv = 1.0f / t.l[r];
          float* orow = o.data() + off + std::size_t(r0 + r) * sh.d;
          for (int x = 0; x < sh.d; ++x) orow[x] = t.acc[std::size_t(r) * sh.d + x] * inv;
        }
      }
    }
  }
}

std::size_t attention_unfused_workspace(AttentionShape sh) {
  return std::size_t(sh.bh) * sh.s * sh.s + std::size_t(sh.bh) * sh.s * sh.d;
}

void attention_unfused(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                       std::span<float> o, std::span<float> workspace, AttentionShape sh) {
  check(q, k, v, o, sh);
  SS_ASSERT(workspace.size() >= attention_unfused_workspace(sh), "attention workspace too small");
  const std::size_t ss = std::size_t(sh.s) * sh.s, sd = std::size_t(sh.s) * sh.d;
  float* scores = workspace.data();
  float* kt_all = workspace.data() + std::size_t(sh.bh) * ss;
  const float scale = scale_of(sh);
  const int s = sh.s, d = sh.d;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < sh.bh; ++b) {  // K^T, so the score rows vectorize along keys
    for (int j = 0; j < s; ++j) {
      for (int x = 0; x < d; ++x) kt_all[b * sd + std::size_t(x) * s + j] = k[b * sd + j * d + x];
    }
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < sh.bh; ++b) {  // S = Q K^T, written to memory in full
    for (int i = 0; i < s; ++i) {
      float* __restrict srow = scores + b * ss + std::size_t(i) * s;
      std::fill_n(srow, s, 0.0f);
      for (int x = 0; x < d; ++x) {
        const float qv = q[b * sd + std::size_t(i) * d + x];
        const float* __restrict kt = kt_all + b * sd + std::size_t(x) * s;
        for (int j = 0; j < s; ++j) srow[j] += qv * kt[j];
      }
    }
  }
  const std::span<float> sspan(scores, std::size_t(sh.bh) * ss);
  scaled_masked_softmax_fused(sspan, sspan, SoftmaxShape{sh.bh, s, scale, sh.causal});
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < sh.bh; ++b) {  // O = P V
    for (int i = 0; i < s; ++i) {
      float* __restrict orow = o.data() + b * sd + std::size_t(i) * d;
      std::fill_n(orow, d, 0.0f);
      const float* prow = scores + b * ss + std::size_t(i) * s;
      const int valid = sh.causal ? i + 1 : s;
      for (int j = 0; j < valid; ++j) {
        const float p = prow[j];
        const float* __restrict vrow = v.data() + b * sd + std::size_t(j) * d;
        for (int x = 0; x < d; ++x) orow[x] += p * vrow[x];
      }
    }
  }
}

void attention_reference(std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, std::span<float> o, AttentionShape sh) {
  check(q, k, v, o, sh);
  const std::size_t sd = std::size_t(sh.s) * sh.d;
  const double scale = 1.0 / std::sqrt(double(sh.d));
  std::vector<double> p(sh.s);
  for (int b = 0; b < sh.bh; ++b) {
    for (int i = 0; i < sh.s; ++i) {
      const int valid = sh.causal ? i + 1 : sh.s;
      double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (int j = 0; j < valid; ++j) {
        double dot = 0.0;
        for (int x = 0; x < sh.d; ++x) {
          dot += double(q[b * sd + std::size_t(i) * sh.d + x]) *
                 double(k[b * sd + std::size_t(j) * sh.d + x]);
        }
        p[j] = dot * scale;
        m = std::max(m, p[j]);
      }
      for (int j = 0; j < valid; ++j) sum += (p[j] = std::exp(p[j] - m));
      for (int x = 0; x < sh.d; ++x) {
        double acc = 0.0;
        for (int j = 0; j < valid; ++j) acc += p[j] * double(v[b * sd + std::size_t(j) * sh.d + x]);
        o[b * sd + std::size_t(i) * sh.d + x] = float(acc / sum);
      }
    }
  }
}

}  // namespace stratasim::kernels
