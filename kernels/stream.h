// STREAM-style memory bandwidth kernels (McCalpin 1995): copy b = a and triad a = b + q*c,
// multi-threaded like the other kernels so their bandwidth is the ceiling the memory-bound
// fused kernels are measured against. Bytes moved: copy 2 x 4 B, triad 3 x 4 B per element
// (write-allocate traffic not counted, as in STREAM).
#pragma once

#include <span>

namespace stratasim::kernels {

void stream_copy(std::span<const float> a, std::span<float> b);
void stream_triad(std::span<float> a, std::span<const float> b, std::span<const float> c, float q);

}  // namespace stratasim::kernels
