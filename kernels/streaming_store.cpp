#include "kernels/streaming_store.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define STRATASIM_X86_STREAMING 1
#endif

namespace stratasim::kernels {
namespace {

// memcpy of n floats; n == 0 may come with null pointers (an empty vector's data()), which
// memcpy itself may not be given.
void copy_floats(float* dst, const float* src, std::size_t n) {
  if (n > 0) std::memcpy(dst, src, n * sizeof(float));
}

#ifdef STRATASIM_X86_STREAMING

// Ordinary stores up to the first `align`-byte boundary of dst; returns how many floats that was.
std::size_t head_to_alignment(float* dst, const float* src, std::size_t n, std::size_t align) {
  const auto address = reinterpret_cast<std::uintptr_t>(dst);
  std::size_t head = ((align - address % align) % align) / sizeof(float);
  if (address % sizeof(float) != 0 || head > n) head = n;  // misaligned floats: no streaming
  copy_floats(dst, src, head);
  return head;
}

__attribute__((target("avx512f"))) void stream_avx512(float* dst, const float* src, std::size_t n) {
  std::size_t i = head_to_alignment(dst, src, n, 64);
  for (; i + 16 <= n; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
  copy_floats(dst + i, src + i, n - i);
}

// Whole lines only, as four 16-byte stores each (a line written partly by non-temporal stores
// is flushed from its write-combining buffer as a partial write, a read-modify-write in memory).
void stream_sse2(float* dst, const float* src, std::size_t n) {
  std::size_t i = head_to_alignment(dst, src, n, 64);
  for (; i + 16 <= n; i += 16) {
    for (std::size_t k = 0; k < 16; k += 4) _mm_stream_ps(dst + i + k, _mm_loadu_ps(src + i + k));
  }
  copy_floats(dst + i, src + i, n - i);
}

using StreamFn = void (*)(float*, const float*, std::size_t);

StreamFn pick_stream_fn() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") ? stream_avx512 : stream_sse2;
}

#endif

}  // namespace

std::size_t line_start_at_or_before(const float* dst, std::size_t i) {
  const auto base = reinterpret_cast<std::uintptr_t>(dst);
  const std::uintptr_t line = (base + i * sizeof(float)) & ~std::uintptr_t(63);
  if (line <= base) return 0;
  return (line - base) / sizeof(float);  // floats are 4-byte aligned: exact
}

std::size_t stream_tile_end(const float* dst, std::size_t j0, std::size_t n) {
  const std::size_t end = line_start_at_or_before(dst, j0 + kStreamTileFloats);
  return std::min(n, end > j0 ? end : j0 + kStreamTileFloats);
}

void stream_floats(float* dst, const float* src, std::size_t n, StreamIsa isa) {
#ifdef STRATASIM_X86_STREAMING
  static const StreamFn best = pick_stream_fn();
  (isa == StreamIsa::best ? best : stream_sse2)(dst, src, n);
#else
  (void)isa;
  copy_floats(dst, src, n);
#endif
}

void streaming_store_fence() {
#ifdef STRATASIM_X86_STREAMING
  _mm_sfence();
#endif
}

}  // namespace stratasim::kernels
