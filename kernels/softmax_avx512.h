// AVX-512 versions of the softmax row functions (softmax.cpp), chosen at run time where the CPU
// has AVX-512F. Their exponential scales by 2^n with one vscalefps instead of building 2^n in
// the exponent bits, clamping and selecting: 0.48 instead of 0.70 cycles per element on the
// development VM's Zen 4 (one core, in L1), with the same polynomial and accuracy (<= 2 ulp
// from -87 to 88; below, the exact result rounds to a subnormal or 0, also for -inf). The
// portable functions remain for other CPUs; target_clones cannot hold these intrinsics.
#pragma once

namespace stratasim::kernels::avx512 {

// True when this build has the functions below and the CPU runs them (checked once).
bool available();

// y = softmax(scale * x) over the first `valid` of `cols` entries, 0 after; x and y may be the
// same row. As softmax_row, prefetching next_x's first next_valid entries (if next_x is set).
void softmax_row(const float* x, float* y, int cols, int valid, float scale, const float* next_x,
                 int next_valid);

// row[j] = exp(row[j] - m) for j < n (the unfused softmax's exp pass).
void exp_row(float* row, int n, float m);

}  // namespace stratasim::kernels::avx512
