// The kernel families (kernels/*.h) as timed cases: each case is a family at one shape, run in
// its fused and unfused form alternately (warm-up, then repeats; load from other processes
// falls on both alike) and reported as two Measurements with the work each form does, counted
// by these rules (fp32, 4 B per element; per-channel/per-column vectors such as bias, gamma
// and the BN statistics are too small to count):
//   bytes       every pass's reads of its inputs plus writes of its outputs, each pass counted
//               (a fused form: compulsory traffic only; caches are assumed to hold rows/tiles,
//               never whole tensors); write-allocate traffic not counted, as in STREAM.
//   matmul_flop 2 per multiply-add of a matrix product or convolution (causal attention counts
//               the unmasked half of Q K^T and P V only where the form skips the masked half).
//   vector_flop elementwise arithmetic, one per add/multiply/compare, exp/erf/sqrt/divide as 1.
//   launches    OpenMP parallel regions the form starts.
// Two disjoint shape sets: kCalibration (what `calibrate` fits per-family factors on) and
// kValidation (what `validate` predicts and `kernels` reports); no shape is in both.
// Memory-bound families use working sets of 100-600 MiB so every size is beyond the last-level
// cache, like the DRAM bandwidth they are predicted with. A family's shapes in both sets lie on
// the same side of the streaming-store threshold (streaming_store.h: dropout's outputs all
// below 64 MiB, LayerNorm's all above): the model has one factor per family and form, and
// streamed outputs skip the read for ownership (measured with dropout's calibration shapes on
// both sides: validation errors of -11..-18% for its cached shapes).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/measurement.h"
#include "kernels/microbench.h"

namespace stratasim::kernels {

enum class KernelFamily {
  kGemmBiasGelu,         // dims m, n, k
  kBiasDropoutResidual,  // dims rows, cols
  kLayerNorm,            // dims rows, cols
  kSoftmax,              // dims batch, s (causal)
  kAttention,            // dims bh, s, d (causal)
  kConvBnRelu,           // dims n, c, k, hw (square image)
  kImagePipeline,        // dims h, w
  kLstmCell,             // dims batch, hidden
};
inline constexpr int kNumKernelFamilies = 8;

std::string_view family_name(KernelFamily f);  // "gemm_bias_gelu", "layernorm", ...

struct KernelCase {
  KernelFamily family = KernelFamily::kGemmBiasGelu;
  std::array<int, 4> dims{};  // meaning per family (above); unused trailing dims are 0
  bool operator==(const KernelCase&) const = default;
};

std::string shape_text(const KernelCase& c);  // "512x512x640", "bh8 s1024 d64", ...

// The work of one form by the rules above (seconds, repeats left 0).
Measurement kernel_work(const KernelCase& c, bool fused);

enum class CaseSet { kCalibration, kValidation };
// Every family once or twice per set; quick: smaller shapes (for tests; cache-resident).
std::vector<KernelCase> kernel_cases(CaseSet set, bool quick);

// Runs both forms of one case (fused first in each round) and returns {fused, unfused}.
std::pair<Measurement, Measurement> run_kernel_case(const KernelCase& c, RepeatPolicy policy);

// Rounds over the kernel cases. The 2-core development VM runs compute-bound kernels in two
// speed regimes that alternate in phases of about one to ten seconds: conv_bn_relu, the GEMM
// and attention measured ~25-28 GFLOP/s in one phase and ~14-18 GFLOP/s in the next, all of
// them together, at the same shape, with the same data, whatever the buffers' placement (page
// offsets of x and y, heap or mmap blocks). Which phase a case's few visits fell into decided its
// time: with 3 visits of ~0.5 s per case a calibrate could see conv_bn_relu only in slow phases
// and the validate after it only in fast ones (+60..+77% prediction errors). Twice as many,
// shorter visits per case, spread over the run, give each case more chances to be timed in a
// fast phase in both commands, for about the same total time.
inline constexpr int kKernelRounds = 6;
RepeatPolicy kernel_rounds_policy(bool quick);

// Every case of the set, in order, kKernelRounds rounds over (quick: one), the fastest kept;
// progress after each case, after_round (if set) after each round (validate's machine check
// runs there, so that it samples the machine's phases as the cases do).
std::vector<Measurement> run_kernel_cases(CaseSet set, bool quick, const Progress& progress,
                                          const std::function<void()>& after_round = {});

}  // namespace stratasim::kernels
