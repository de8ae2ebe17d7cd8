// Scalar building blocks shared by the fused and unfused kernels, so that both forms apply the
// very same arithmetic and differ only in how often they touch memory.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "sim/core/error.h"

// Function multi-versioning for the hot loops: in a default build (baseline x86-64, SSE2) GCC
// compiles a function marked STRATASIM_KERNEL_CLONES three times, for AVX-512 (x86-64-v4),
// AVX2 + FMA (x86-64-v3) and the baseline, and the loader picks the best one the CPU supports
// (an ifunc, resolved once). The kernels are built with -ffp-contract=fast, so the v3 and v4
// clones contract a*b+c into one FMA (exp_approx's polynomial and range reduction: a third
// fewer vector instructions, softmax 1.3x faster); the fused and unfused forms may then round a
// few operations differently, which the tests' tolerances bound (stages that both forms
// compute through the same cloned function, e.g. the image pipeline's, stay bitwise equal).
// Mark only functions that run no OpenMP region themselves: GCC outlines a parallel region
// into a function of its own, which would not be cloned; the kernels therefore call a cloned
// per-row (or per-chunk) function from inside their parallel loops. Off where the compiler
// already targets AVX2 (STRATASIM_KERNELS_ARCH) or lacks the attribute.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX2__) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define STRATASIM_KERNEL_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef STRATASIM_KERNEL_CLONES
#define STRATASIM_KERNEL_CLONES
#endif

namespace stratasim::kernels {

// Exact GeLU, x * Phi(x) (Hendrycks & Gimpel 2016, eq. 1).
inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

// exp(x) in fp32 without a libm call, so loops over it vectorize (libm's expf does not, short
// of -ffast-math). Cephes expf (Moshier 1992): x = n ln2 + r with |r| <= ln2 / 2, ln2 split in
// two parts for an exact reduction, a degree-7 polynomial for exp(r), 2^n built in the
// exponent bits. Relative error <= 2 ulp on [-87, 88]; exp(-inf) and underflow give 0.
inline float exp_approx(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float xc = std::min(std::max(x, -87.0f), 88.0f);
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  const std::int32_t ni = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kRound);
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float e = p * std::bit_cast<float>((ni + 127) << 23);
  return x < -87.0f ? 0.0f : e;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// tanh(x) = 1 - 2 / (1 + exp(2x)); absolute error a few ulp of 1 (the LSTM uses it on values
// that are added to O(1) quantities, so absolute accuracy is what matters).
inline float tanh_approx(float x) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * x)); }

// SplitMix64 finalizer (Steele, Lea & Flood 2014), used once per call to spread the seed.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// lowbias32 (C. Wellons, "Prospecting for hash functions", 2018): a 32-bit integer permutation
// with 32-bit multiplies only, so a loop of them vectorizes (64-bit multiplies do not, on SSE2).
[[gnu::always_inline]] inline std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Dropout with probability p keeps an element when its 32-bit hash is >= p * 2^32.
struct DropoutParams {
  float p = 0.1f;          // drop probability, 0 <= p < 1
  std::uint64_t seed = 0;  // same seed, same mask

  std::uint32_t threshold() const {
    SS_ASSERT(p >= 0.0f && p < 1.0f, "dropout probability must lie in [0, 1)");
    return static_cast<std::uint32_t>(static_cast<double>(p) * 4294967296.0);  // p * 2^32
  }
  float scale() const { return 1.0f / (1.0f - p); }  // inverted dropout keeps E[out] = in
};

// A counter-based draw: the decision for element `index` depends only on (seed, index), never
// on the pass or the thread order. The index's upper 32 bits select a run, whose 64-bit key is a
// SplitMix64 mix of the seed and the run number (computed once per run); an element of the run
// draws one lowbias32 of its lower 32 bits, with the key's halves xored in before and after:
//   key = mix64(mix64(seed) + (index >> 32)),  draw = hash32(lo ^ key_lo) ^ key_hi.
// One 32-bit hash per element (two multiplies): the draw is cheap enough that the fused kernel
// stays memory-bound. The output xor keeps two seeds' masks from being permutations of each
// other (with the input xor alone, seed 2's mask would be seed 1's with indices xor-shuffled).
struct DropoutRun {
  std::uint32_t key_lo, key_hi;
  DropoutRun(std::uint64_t seed, std::uint32_t hi) {
    const std::uint64_t key = mix64(mix64(seed) + hi);
    key_lo = static_cast<std::uint32_t>(key);
    key_hi = static_cast<std::uint32_t>(key >> 32);
  }
  [[gnu::always_inline]] bool keep(std::uint32_t lo, std::uint32_t threshold) const {
    return (hash32(lo ^ key_lo) ^ key_hi) >= threshold;
  }
};

inline bool dropout_keep(std::uint64_t seed, std::uint64_t index, std::uint32_t threshold) {
  const DropoutRun run(seed, static_cast<std::uint32_t>(index >> 32));
  return run.keep(static_cast<std::uint32_t>(index), threshold);
}

// How many of the n indices from `at` on share at's upper 32 bits (n unless the range crosses a
// multiple of 2^32): the length of one DropoutRun.
inline std::uint64_t dropout_run_length(std::uint64_t at, std::uint64_t n) {
  return std::min(n, ((at >> 32) + 1) * (std::uint64_t(1) << 32) - at);
}

}  // namespace stratasim::kernels
