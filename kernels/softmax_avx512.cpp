#include "kernels/softmax_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define STRATASIM_SOFTMAX_AVX512 1
#endif

namespace stratasim::kernels::avx512 {

#ifdef STRATASIM_SOFTMAX_AVX512
// GCC 12's own masked-load intrinsics start from _mm512_undefined_ps() and trip
// -W(maybe-)uninitialized where they are inlined (GCC bug 105593); the warning is about the
// header's deliberately undefined start value, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace {

#define STRATASIM_AVX512 __attribute__((target("avx512f")))

// exp(x) = 2^n * exp(r), n = round(x log2e), r = x - n ln2 with ln2 split in two (Cody & Waite)
// so that r is exact, exp(r) by exp_approx's degree-7 polynomial (Cephes expf, elementwise.h),
// and 2^n applied by vscalefps, which also gives the subnormal range, 0 and inf. x is first
// clamped at -104 (exp(-104) < 2^-150 rounds to 0), which keeps -inf from becoming NaN in r.
STRATASIM_AVX512 inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// The lanes of the block at j that lie below `end`.
STRATASIM_AVX512 inline __mmask16 lanes_below(int j, int end) {
  const int n = end - j;
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
}

STRATASIM_AVX512 void softmax_row_impl(const float* x, float* y, int cols, int valid, float scale,
                                       const float* next_x, int next_valid) {
  const __m512 s = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-__builtin_inff());
  for (int j = 0; j < valid; j += 16) {
    const __mmask16 k = lanes_below(j, valid);
    vmax = _mm512_mask_max_ps(vmax, k, vmax, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + j), s));
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  // The exponential pass is the compute-heavy one and demands nothing from memory: it spreads
  // prefetches of the next row's valid entries into L2 over its blocks, a few lines each.
  const int blocks = (valid + 15) / 16;
  const int lines_per_block =
      next_x != nullptr && blocks > 0 ? (next_valid + 16 * blocks - 1) / (16 * blocks) : 0;
  int next = 0;  // next row entries prefetched so far
  __m512 vsum = _mm512_setzero_ps();
  for (int j = 0; j < valid; j += 16) {
    const __mmask16 k = lanes_below(j, valid);
    const __m512 e = exp16(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, x + j), s, m));
    _mm512_mask_storeu_ps(y + j, k, e);
    vsum = _mm512_mask_add_ps(vsum, k, vsum, e);
    for (int b = 0; b < lines_per_block && next < next_valid; ++b, next += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(next_x + next), _MM_HINT_T1);
    }
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int j = 0; j < valid; j += 16) {
    const __mmask16 k = lanes_below(j, valid);
    _mm512_mask_storeu_ps(y + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j), inv));
  }
  for (int j = valid; j < cols; ++j) y[j] = 0.0f;
}

STRATASIM_AVX512 void exp_row_impl(float* row, int n, float m) {
  const __m512 mv = _mm512_set1_ps(m);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 k = lanes_below(j, n);
    const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), mv);
    _mm512_mask_storeu_ps(row + j, k, exp16(v));
  }
}

}  // namespace

bool available() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return yes;
}

void softmax_row(const float* x, float* y, int cols, int valid, float scale, const float* next_x,
                 int next_valid) {
  softmax_row_impl(x, y, cols, valid, scale, next_x, next_valid);
}

void exp_row(float* row, int n, float m) { exp_row_impl(row, n, m); }

#pragma GCC diagnostic pop
#else  // not x86-64 GCC/Clang: never available, never called

bool available() { return false; }
void softmax_row(const float*, float*, int, int, float, const float*, int) {}
void exp_row(float*, int, float) {}

#endif

}  // namespace stratasim::kernels::avx512
