#include "kernels/stream.h"

#include <cstdint>

#include "sim/core/error.h"

namespace stratasim::kernels {

void stream_copy(std::span<const float> a, std::span<float> b) {
  SS_ASSERT(a.size() == b.size(), "stream_copy: a and b must have the same size");
  const float* __restrict ap = a.data();
  float* __restrict bp = b.data();
  const std::int64_t n = std::int64_t(a.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) bp[i] = ap[i];
}

void stream_triad(std::span<float> a, std::span<const float> b, std::span<const float> c, float q) {
  SS_ASSERT(a.size() == b.size() && a.size() == c.size(), "stream_triad: sizes must agree");
  float* __restrict ap = a.data();
  const float* __restrict bp = b.data();
  const float* __restrict cp = c.data();
  const std::int64_t n = std::int64_t(a.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) ap[i] = bp[i] + q * cp[i];
}

}  // namespace stratasim::kernels
