// Blur -> Sobel -> sharpen: one line-buffered fused pass vs three passes vs double precision.
#include "kernels/image_pipeline.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

using test::check_close;
using test::kOddSizes;
using test::random_tensor;

TEST_CASE("image_pipeline: fused equals unfused and the double reference on odd shapes") {
  for (int h : kOddSizes) {  // 33, 65 and 127 rows span one to two 64-row strips
    for (int w : kOddSizes) {
      CAPTURE(h);
      CAPTURE(w);
      const ImageShape s{h, w};
      const auto in = random_tensor(std::size_t(h) * w, 61, 0.0f, 1.0f);
      std::vector<float> fused(in.size()), unfused(in.size()), ref(in.size());
      std::vector<float> workspace(image_pipeline_unfused_workspace(s));
      image_pipeline_fused(in, fused, s);
      image_pipeline_unfused(in, unfused, workspace, s);
      image_pipeline_reference(in, ref, s);
      // Every pixel of every stage is computed by the same expression in both forms (the
      // strip halos recompute, they do not approximate): bitwise equal.
      check_close(fused, unfused, 0.0, 0.0, "fused vs unfused");
      // Input in [0, 1]. Blur: 9 terms, weights summing to 1, ~10 roundings of values <= 1:
      // 10 u. Sobel: weights of total magnitude 8 on that error plus 6 roundings of |g| <= 4
      // (~64 u), sqrt of two squares keeps it within sqrt(2) (~90 u). Sharpen: weights of total
      // magnitude 9 on that (~810 u) plus 5 roundings of values <= 28 (~140 u): 1000 u.
      check_close(fused, ref, 1000 * test::kUnitRoundoff, 0.0, "fused vs reference");
    }
  }
}

TEST_CASE("image_pipeline: a constant image has no edges") {
  // Blur of a constant c is c (weights sum to 1), Sobel of a constant is 0, sharpen of 0 is 0.
  const ImageShape s{40, 9};
  const std::vector<float> in(std::size_t(s.h) * s.w, 0.5f);
  std::vector<float> out(in.size(), 1.0f);
  image_pipeline_fused(in, out, s);
  for (float v : out) CHECK(v == 0.0f);
}

TEST_CASE("image_pipeline: a vertical step edge, worked by hand") {
  // 1 x 4 image [0, 0, 1, 1]; rows clamp, so every 3x3 window repeats the row three times.
  // Blur along the row (clamped): [0, 1/4, 3/4, 1] (vertical weights sum to 1).
  // Sobel: gy = 0; gx = 4 * (b[j+1] - b[j-1]): [1, 3, 3, 1]; magnitude = |gx|.
  // Sharpen with rows clamped: 5e - e - e - e[j-1] - e[j+1] = 3e - e[j-1] - e[j+1]:
  // [3 - 1 - 3, 9 - 1 - 3, 9 - 3 - 1, 3 - 3 - 1] = [-1, 5, 5, -1].
  const std::vector<float> in = {0, 0, 1, 1};
  std::vector<float> out(4);
  image_pipeline_fused(in, out, ImageShape{1, 4});
  const std::vector<float> want = {-1, 5, 5, -1};
  for (int i = 0; i < 4; ++i) CHECK(out[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

}  // namespace
}  // namespace stratasim::kernels
