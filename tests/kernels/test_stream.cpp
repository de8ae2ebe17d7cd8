// STREAM copy and triad: exact element values (one rounding at most).
#include "kernels/stream.h"
#include "tests/kernels/kernel_test_util.h"

namespace stratasim::kernels {
namespace {

TEST_CASE("stream: copy is exact and triad computes b + q*c") {
  for (int n : test::kOddSizes) {
    CAPTURE(n);
    const auto a = test::random_tensor(n, 81), c = test::random_tensor(n, 82);
    std::vector<float> b(n, 0.0f), t(n, 0.0f);
    stream_copy(a, b);
    CHECK(b == a);
    stream_triad(t, a, c, 3.0f);
    for (int i = 0; i < n; ++i) CHECK(t[i] == a[i] + 3.0f * c[i]);
  }
}

}  // namespace
}  // namespace stratasim::kernels
