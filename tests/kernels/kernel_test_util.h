// Helpers of the kernel tests: seeded random tensors and an elementwise closeness check that
// reports the first offending index.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace stratasim::kernels::test {

// fp32 unit roundoff, u = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms", 2.2).
constexpr double kUnitRoundoff = 5.9604644775390625e-8;

inline std::vector<float> random_tensor(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Largest |a[i] - b[i]| / (abs_tol + rel_tol * |b[i]|); <= 1 means every element is close.
inline double worst_ratio(std::span<const float> a, std::span<const float> b, double abs_tol,
                          double rel_tol, std::size_t* where = nullptr) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double err = std::fabs(double(a[i]) - double(b[i]));
    if (err == 0.0) continue;  // exact, also when both tolerances are 0
    const double ratio = err / (abs_tol + rel_tol * std::fabs(double(b[i])));
    if (!(ratio <= worst)) {  // also catches NaN
      worst = ratio;
      if (where) *where = i;
    }
  }
  return worst;
}

inline void check_close(std::span<const float> got, std::span<const float> want, double abs_tol,
                        double rel_tol, const char* what) {
  std::size_t where = 0;
  const double ratio = worst_ratio(got, want, abs_tol, rel_tol, &where);
  INFO(std::string(what) << ": worst at index " << where << ", got " << got[where] << ", want "
                         << want[where] << " (error / tolerance = " << ratio << ")");
  CHECK(ratio <= 1.0);
}

// The odd sizes of issue 4: 1, below and just above the SSE/AVX vector widths (4, 8, 16) and the
// kernels' tiles (32, 64, 256).
inline constexpr int kOddSizes[] = {1, 3, 17, 33, 65, 127};

}  // namespace stratasim::kernels::test
