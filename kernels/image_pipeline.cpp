#include "kernels/image_pipeline.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/elementwise.h"
#include "sim/core/error.h"

namespace stratasim::kernels {
namespace {

// Rows per fused strip. Each strip recomputes a halo of 4 blur rows and 2 Sobel rows (the
// neighbouring strips compute them too): 64 rows cost ~5% extra on two of the three stages and
// give each thread many strips to balance.
constexpr int kStripRows = 64;

void check(std::span<const float> in, std::span<const float> out, ImageShape s) {
  SS_ASSERT(s.h > 0 && s.w > 0, "image must be at least 1 x 1");
  const std::size_t n = std::size_t(s.h) * s.w;
  SS_ASSERT(in.size() == n && out.size() == n, "in and out must hold h*w floats");
}

// One pixel of each stage from rows up/mid/down at columns jl, j, jr (already clamped).
struct Blur {
  [[gnu::always_inline]] static float at(const float* u, const float* m, const float* d, int jl,
                                         int j, int jr) {
    return ((u[jl] + 2.0f * u[j] + u[jr]) + 2.0f * (m[jl] + 2.0f * m[j] + m[jr]) +
            (d[jl] + 2.0f * d[j] + d[jr])) *
           0.0625f;
  }
};
struct Sobel {
  [[gnu::always_inline]] static float at(const float* u, const float* m, const float* d, int jl,
                                         int j, int jr) {
    const float gx = (u[jr] + 2.0f * m[jr] + d[jr]) - (u[jl] + 2.0f * m[jl] + d[jl]);
    const float gy = (d[jl] + 2.0f * d[j] + d[jr]) - (u[jl] + 2.0f * u[j] + u[jr]);
    return std::sqrt(gx * gx + gy * gy);
  }
};
struct Sharpen {
  [[gnu::always_inline]] static float at(const float* u, const float* m, const float* d, int jl,
                                         int j, int jr) {
    return 5.0f * m[j] - u[j] - d[j] - m[jl] - m[jr];
  }
};

// One output row of a stage; edge columns clamp, the interior loop vectorizes. Always inlined
// (with Stage::at and stencil_rows) into the cloned stage functions below, so that each clone
// compiles the loop for its own instruction set.
template <class Stage>
[[gnu::always_inline]] inline void stencil_row(const float* __restrict u, const float* __restrict m,
                                               const float* __restrict d, float* __restrict out,
                                               int w) {
  out[0] = Stage::at(u, m, d, 0, 0, std::min(1, w - 1));
  for (int j = 1; j < w - 1; ++j) out[j] = Stage::at(u, m, d, j - 1, j, j + 1);
  if (w > 1) out[w - 1] = Stage::at(u, m, d, w - 2, w - 1, w - 1);
}

// Rows [lo, hi) of a stage into dst (whose first row is dst_first); source row rr is clamped to
// the image and read from src (whose first row is src_first).
template <class Stage>
[[gnu::always_inline]] inline void stencil_rows(const float* src, int src_first, float* dst,
                                                int dst_first, int lo, int hi, ImageShape s) {
  for (int r = lo; r < hi; ++r) {
    const auto row = [&](int rr) {
      return src + std::size_t(std::clamp(rr, 0, s.h - 1) - src_first) * s.w;
    };
    stencil_row<Stage>(row(r - 1), row(r), row(r + 1), dst + std::size_t(r - dst_first) * s.w, s.w);
  }
}

// The three stages as cloned functions, called by both forms (so they stay bitwise equal): row
// ranges of a whole image (the unfused passes) and single rows from explicit neighbours (the
// fused line buffers).
STRATASIM_KERNEL_CLONES
void blur_rows(const float* src, int src_first, float* dst, int dst_first, int lo, int hi,
               ImageShape s) {
  stencil_rows<Blur>(src, src_first, dst, dst_first, lo, hi, s);
}
STRATASIM_KERNEL_CLONES
void sobel_rows(const float* src, int src_first, float* dst, int dst_first, int lo, int hi,
                ImageShape s) {
  stencil_rows<Sobel>(src, src_first, dst, dst_first, lo, hi, s);
}
STRATASIM_KERNEL_CLONES
void sharpen_rows(const float* src, int src_first, float* dst, int dst_first, int lo, int hi,
                  ImageShape s) {
  stencil_rows<Sharpen>(src, src_first, dst, dst_first, lo, hi, s);
}
STRATASIM_KERNEL_CLONES
void blur_row(const float* u, const float* m, const float* d, float* out, int w) {
  stencil_row<Blur>(u, m, d, out, w);
}
STRATASIM_KERNEL_CLONES
void sobel_row(const float* u, const float* m, const float* d, float* out, int w) {
  stencil_row<Sobel>(u, m, d, out, w);
}
STRATASIM_KERNEL_CLONES
void sharpen_row(const float* u, const float* m, const float* d, float* out, int w) {
  stencil_row<Sharpen>(u, m, d, out, w);
}

// The fused pass over output rows [y0, y1) with rolling line buffers (Halide's sliding window):
// the last three blur rows and the last three Sobel rows, each kept in slot `row mod 3`, 6 rows
// per thread (192 KiB at width 8192) that stay in L2 whatever the image height. Each stage
// computes a row as soon as the next stage needs it; rows outside the image clamp to its edge,
// as in the unfused passes.
class LineBufferedStrip {
 public:
  LineBufferedStrip(const float* in, float* out, ImageShape s, std::vector<float>& buffers)
      : in_(in), out_(out), s_(s), buf_(buffers.data()) {}

  void run(int y0, int y1) {
    next_b_ = std::max(0, y0 - 2);
    next_e_ = std::max(0, y0 - 1);
    for (int r = y0; r < y1; ++r) {
      while (next_e_ <= clamp_row(r + 1)) compute_e(next_e_++);
      sharpen_row(e_row(clamp_row(r - 1)), e_row(r), e_row(clamp_row(r + 1)),
                  out_ + std::size_t(r) * s_.w, s_.w);
    }
  }

 private:
  int clamp_row(int r) const { return std::clamp(r, 0, s_.h - 1); }
  float* b_row(int r) const { return buf_ + std::size_t(r % 3) * s_.w; }
  float* e_row(int r) const { return buf_ + std::size_t(3 + r % 3) * s_.w; }
  const float* in_row(int r) const { return in_ + std::size_t(clamp_row(r)) * s_.w; }

  void compute_e(int k) {
    while (next_b_ <= clamp_row(k + 1)) {
      const int b = next_b_++;
      blur_row(in_row(b - 1), in_row(b), in_row(b + 1), b_row(b), s_.w);
    }
    sobel_row(b_row(clamp_row(k - 1)), b_row(k), b_row(clamp_row(k + 1)), e_row(k), s_.w);
  }

  const float* in_;
  float* out_;
  ImageShape s_;
  float* buf_;  // 3 blur rows, then 3 Sobel rows
  int next_b_ = 0, next_e_ = 0;
};

}  // namespace

void image_pipeline_fused(std::span<const float> in, std::span<float> out, ImageShape s) {
  check(in, out, s);
  const int strips = (s.h + kStripRows - 1) / kStripRows;
#pragma omp parallel
  {
    std::vector<float> buffers(6 * std::size_t(s.w));
#pragma omp for schedule(static)
    for (int strip = 0; strip < strips; ++strip) {
      const int y0 = strip * kStripRows, y1 = std::min(s.h, y0 + kStripRows);
      LineBufferedStrip(in.data(), out.data(), s, buffers).run(y0, y1);
    }
  }
}

std::size_t image_pipeline_unfused_workspace(ImageShape s) { return 2 * std::size_t(s.h) * s.w; }

void image_pipeline_unfused(std::span<const float> in, std::span<float> out,
                            std::span<float> workspace, ImageShape s) {
  check(in, out, s);
  SS_ASSERT(workspace.size() >= image_pipeline_unfused_workspace(s), "image workspace too small");
  float* b = workspace.data();
  float* e = workspace.data() + std::size_t(s.h) * s.w;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < s.h; ++r) blur_rows(in.data(), 0, b, 0, r, r + 1, s);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < s.h; ++r) sobel_rows(b, 0, e, 0, r, r + 1, s);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < s.h; ++r) sharpen_rows(e, 0, out.data(), 0, r, r + 1, s);
}

void image_pipeline_reference(std::span<const float> in, std::span<float> out, ImageShape s) {
  check(in, out, s);
  const auto stage = [&](const std::vector<double>& src, auto weights_at) {
    std::vector<double> dst(src.size());
    for (int r = 0; r < s.h; ++r) {
      for (int c = 0; c < s.w; ++c) {
        const auto px = [&](int dr, int dc) {
          return src[std::size_t(std::clamp(r + dr, 0, s.h - 1)) * s.w +
                     std::clamp(c + dc, 0, s.w - 1)];
        };
        dst[std::size_t(r) * s.w + c] = weights_at(px);
      }
    }
    return dst;
  };
  const std::vector<double> x(in.begin(), in.end());
  const auto b = stage(x, [](auto px) {
    double acc = 0.0;
    const double g[3] = {1.0, 2.0, 1.0};
    for (int dr = -1; dr <= 1; ++dr) {
      for (int dc = -1; dc <= 1; ++dc) acc += g[dr + 1] * g[dc + 1] * px(dr, dc);
    }
    return acc / 16.0;
  });
  const auto e = stage(b, [](auto px) {
    const double gx = px(-1, 1) + 2 * px(0, 1) + px(1, 1) - px(-1, -1) - 2 * px(0, -1) - px(1, -1);
    const double gy = px(1, -1) + 2 * px(1, 0) + px(1, 1) - px(-1, -1) - 2 * px(-1, 0) - px(-1, 1);
    return std::sqrt(gx * gx + gy * gy);
  });
  const auto o =
      stage(e, [](auto px) { return 5 * px(0, 0) - px(-1, 0) - px(1, 0) - px(0, -1) - px(0, 1); });
  std::copy(o.begin(), o.end(), out.begin());
}

}  // namespace stratasim::kernels
