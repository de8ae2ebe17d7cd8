#include "sim/cost/kernel_cost.h"

#include <algorithm>
#include <cmath>

namespace stratasim {
namespace {

struct Tile {
  double m, n, relative_efficiency;
};

// Tensor-core GEMM tiles cuBLAS/CUTLASS choose between on NVIDIA GPUs (and their analogues on
// AMD). The smaller tile quantizes more finely but keeps less data per SM; 0.93 of the large
// tiles' per-SM throughput is a modelling estimate.
constexpr Tile kTiles[] = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.93}};

// Time of a GEMM of `flops` producing an m x n output `batch` times, in `rounds` launches one
// after another (per-expert GEMMs on concurrent streams). The size curve plateau x f / (f + h)
// is a fixed cost h / (peak x plateau) per launch on top of the FLOP at the plateau rate; wave
// quantization (tiles over the SMs) stretches only the FLOP part: a launch's fixed cost is the
// same whether its last wave is full or not. The curve's h was fitted to whole square GEMMs
// (H100 fp8 1024^3: 274 TFLOPS, 2048^3: 1011 TFLOPS, hardware_models/catalog): with 128 x 128
// tiles (64 of 132 SMs busy, 0.45) and 128 x 256 tiles (128 of 132) both give h = 5.8-6.1 GFLOP
// in this form, the catalog's 6 GFLOP, where stretching the fixed cost too predicted 164
// TFLOPS at 1024^3. A skinny GEMM (an MoE router's n = 8 experts) then costs its FLOP through
// its few useful tile columns plus one fixed cost, not 1/wave fixed costs.
double gemm_s(double flops, double m, double n, double batch, const DeviceSpec& d, double peak,
              const EfficiencyCurve& curve, double rounds = 1) {
  const double rate = peak * curve.max_fraction;
  return flops / (rate * wave_efficiency(m, n, batch, d.compute_units)) + rounds * curve.half_size / rate;
}

double matmul_s(const Kernel& k, const DeviceSpec& d, double peak, const EfficiencyCurve& curve) {
  if (k.gemm_m <= 0) return k.matmul_flops / (peak * curve.at(k.matmul_flops / k.launches));
  const double r = k.gemm_rounds;
  if (k.phase != Phase::kBackward) {
    return gemm_s(k.matmul_flops, k.gemm_m, k.gemm_n, k.gemm_batch, d, peak, curve, r);
  }
  // Backward of C = A B: dA = dC B^T (an m x k output) and dB = A^T dC (k x n), half each.
  const double half = k.matmul_flops / 2;
  return gemm_s(half, k.gemm_m, k.gemm_k, k.gemm_batch, d, peak, curve, r) +
         gemm_s(half, k.gemm_k, k.gemm_n, k.gemm_batch, d, peak, curve, r);
}

// A fused attention kernel at the device's measured efficiency of the kernel the strategy names
// (cuDNN's where the device has its curve, else FlashAttention-3's; FlashAttention-3's where the
// device has it; else FlashAttention-2's; else the GEMM curve) for the keys its query rows
// attend, its masking and its head dim (hardware_model.h AttentionPass).
const AttentionCurves& attention_curves(const DeviceSpec& d, AttentionKernel kernel) {
  if (kernel == AttentionKernel::kCudnn && d.cudnn.present()) return d.cudnn;
  const bool fa3_or_newer = kernel == AttentionKernel::kFlash3 || kernel == AttentionKernel::kCudnn;
  if (fa3_or_newer && d.flash3.present()) return d.flash3;
  return d.flash2;
}

const AttentionPass* attention_pass(const Kernel& k, const DeviceSpec& d, AttentionKernel kernel) {
  const AttentionCurves& a = attention_curves(d, kernel);
  if (!a.present()) return nullptr;
  // Recomputation reruns the forward kernel.
  return k.phase == Phase::kBackward ? &a.backward : &a.forward;
}

// An older kernel against FlashAttention-2 on the same device, for rows attending `keys` keys
// (<= 0: long sequences) with this mask and head dim. Where the catalog device has the
// side-by-side benchmark (DeviceSpec::flash1 / flash_triton: the FA2 paper's Figure 4, forward
// + backward, as flash-attn's README reproduces it for A100, with FA1 on H100 too), its ratio,
// for both passes: FA1 is 0.55-0.69 of FA2 at head dim 64 and 0.41-0.56 at 128, not a flat
// half; the Triton version 0.42-0.67 on A100. Elsewhere the paper's central figure: "around 2x
// speedup compared to FlashAttention" (Dao 2023, arXiv 2307.08691, abstract), FA2's curve at
// half speed, for the Triton version too ("overall Triton forward + backward is slightly slower
// than CUDA forward + backward": flash_attn_triton.py's docstring).
constexpr double kOlderOverFlash2 = 0.5;

double generation_speed(AttentionKernel kernel, const DeviceSpec& d, double keys, bool causal,
                        double head_dim) {
  const AttentionRatio* measured = kernel == AttentionKernel::kFlash1       ? &d.flash1
                                   : kernel == AttentionKernel::kFlashTriton ? &d.flash_triton
                                                                             : nullptr;
  if (measured == nullptr) return 1.0;
  return measured->present() ? measured->at(keys, causal, head_dim) : kOlderOverFlash2;
}

// The head dim the kernel computes for a head of head_dim: FlashAttention-1 (flash-attn
// 0.2-1.0, csrc/flash_attn/fmha_api.cpp at 4a6eaa9f: run_fmha_fwd_hdim32 / hdim64 / hdim128, the
// same three for the backward, "head_size % 8 == 0 && head_size <= 128") runs a head dim
// between them on the next kernel up, its tiles as wide as that kernel's: a head of 96 costs
// what one of 128 does. FlashAttention's Triton version pads the head to a power of two
// (flash_attn/flash_attn_triton.py: BLOCK_HEADDIM = max(triton.next_power_of_2(d), 16), d <=
// 128). FlashAttention-2 has kernels of 32, 64, 96, 128, 160, 192 and 256
// (csrc/flash_attn/src/static_switch.h HEADDIM_SWITCH at v2.6.3; PyTorch's SDPA flash backend
// vendors the same): a head of 80 runs the 96-wide one. The other kernels take the head dim as
// it is (cuDNN takes any multiple of 8).
double kernel_head_dim(AttentionKernel kernel, double head_dim) {
  if (head_dim <= 0) return head_dim;
  if (kernel == AttentionKernel::kFlashTriton) return std::max(16.0, std::exp2(std::ceil(std::log2(head_dim))));
  auto next_width = [&](std::initializer_list<double> widths) {
    for (double dim : widths) {
      if (head_dim <= dim) return dim;
    }
    return head_dim;
  };
  if (kernel == AttentionKernel::kFlash1) return next_width({32, 64, 128});
  if (kernel == AttentionKernel::kFlash2) return next_width({32, 64, 96, 128, 160, 192, 256});
  return head_dim;
}

// The attention curves are short benchmark loops; a training run holds the device at its
// sustained clock (DeviceSpec::sustained_clock). The GEMM curves are sustained figures already.
double attention_speed(const DeviceSpec& d, AttentionKernel kernel, double keys, bool causal,
                       double head_dim) {
  return d.sustained_clock * generation_speed(kernel, d, keys, causal, head_dim);
}

// The kernel's share of the peak for rows of `keys` keys, counted in the FLOP of a head of
// head_dim when it runs on a wider kernel (kernel_head_dim): the padding is work done.
double attention_fraction(const Kernel& k, const DeviceSpec& d, AttentionKernel kernel, double flops,
                          double keys, bool causal, bool plateau) {
  const double dim = kernel_head_dim(kernel, k.attention_head_dim);
  const double padding = dim > k.attention_head_dim && k.attention_head_dim > 0 ? k.attention_head_dim / dim : 1;
  const AttentionPass* a = attention_pass(k, d, kernel);
  if (a == nullptr) {
    const double curve = plateau ? d.matmul.max_fraction : d.matmul.at(flops / k.launches);
    return padding * generation_speed(kernel, d, plateau ? 0 : keys, causal, dim) * curve;
  }
  if (plateau) return padding * attention_speed(d, kernel, 0, causal, dim) * a->plateau(causal, dim);
  return padding * attention_speed(d, kernel, keys, causal, dim) * a->at(keys, causal, dim);
}

// Sliding-window layers (Kernel::attention_band_share of the FLOP) walk unmasked-tile rows of
// attention_band_keys keys at the kernel's non-causal rate for that many keys; the rest runs at
// the rate of its own keys and masking.
double attention_s(const Kernel& k, const DeviceSpec& d, double peak, AttentionKernel kernel, bool plateau) {
  const double band = k.matmul_flops * k.attention_band_share;
  double s = (k.matmul_flops - band) / (peak * attention_fraction(k, d, kernel, k.matmul_flops, k.attention_keys,
                                                                   k.attention_causal, plateau));
  if (band > 0) {
    s += band / (peak * attention_fraction(k, d, kernel, band, k.attention_band_keys, false, plateau));
  }
  return s;
}

// FP8 training casts each linear layer's operands: per torchao's tensorwise recipe (pytorch/ao
// torchao/testing/training/roofline_utils.py) an amax pass and a cast that writes row- and
// column-major fp8 copies: about 6 B per element of the input (forward) and of the output
// gradient (backward), and 8 B per weight element (amax and forward cast 5, backward cast 3).
// Each pass is a memory-bound kernel of its own (two per tensor).
//
// Rowwise scaling (torchao's rowwise recipe) casts each operand twice, along dim0 for one GEMM
// and along dim1 for another, through a transposed 16-bit copy: per the same roofline 8 B per
// input and output-gradient element (forward: read, fp8 dim0 and bf16 dim1 written, 5 B;
// backward: dim1 to fp8, 3 B) and 10 B per weight element (forward 3, backward 7), in 2, 3 and
// 2 kernels. The kernels torch.compile generates for it (per-row amax, transposes) move those
// bytes slower than a stream: fitted to torchao's published rowwise microbenchmark
// (docs/static/fp8-rowwise-perf.png, LayerNorm -> Linear -> Sigmoid forward + backward against
// bf16 on H100 for M, K, N from 1024 to 32768: 216 shapes, PyTorch 2.8.0a0) with this model's
// bf16 GEMM and memory kernels, they cost 3.125x, 1.8x and 1.25x the roofline's bytes (25, 18
// and 10 B per element) beside GEMMs on the device's matmul_fp8_rowwise curve (rms error of
// the 216 speedups 6.4%, worst 19%: bench/fp8_rowwise_fit.py).
constexpr double kRowwiseInputForwardB = 5 * 3.125, kRowwiseInputBackwardB = 3 * 3.125;
constexpr double kRowwiseWeightForwardB = 3 * 1.8, kRowwiseWeightBackwardB = 7 * 1.8;
constexpr double kRowwiseGradOutputB = 8 * 1.25;

//
// Transformer Engine (DelayedScaling, Float8CurrentScaling) casts an activation and an output
// gradient with one fused cast-transpose kernel (transformer_engine/common/transpose/
// cast_transpose.cu: read 2 B, write the fp8 copy and its transpose, 1 B each: 4 B per element;
// Hopper's fp8 GEMMs take only the TN layout, so the weight gradient needs the transposes);
// current scaling runs an amax pass over the tensor first (2 B more) and a scale kernel between
// the two (fp8_cast_launches). Weights are cast once per iteration
// (IterOpKind::kFp8WeightCast), not per GEMM.
double fp8_cast_bytes(const Kernel& k, Fp8Scaling scaling) {
  if (k.gemm_m <= 0) return 0;
  const double m = k.gemm_m * k.gemm_batch, n = k.gemm_n, kk = k.gemm_k;
  const bool forward = k.phase != Phase::kBackward;  // recomputation casts as the forward does
  if (scaling == Fp8Scaling::kDelayed || scaling == Fp8Scaling::kCurrent) {
    const double per_element = scaling == Fp8Scaling::kCurrent ? 6 : 4;
    return per_element * (forward ? m * kk : m * n);
  }
  if (scaling == Fp8Scaling::kRowwise) {
    return forward ? kRowwiseInputForwardB * m * kk + kRowwiseWeightForwardB * kk * n
                   : kRowwiseInputBackwardB * m * kk + kRowwiseWeightBackwardB * kk * n +
                         kRowwiseGradOutputB * m * n;
  }
  // An input cast before the tensor-parallel all-gather (Kernel::fp8_input_precast) is not
  // cast again: the forward casts only the weight. Its gathered copy is row-major only, so the
  // weight gradient's GEMM makes the column-major copy torch._scaled_mm wants (torchao
  // float8_ops.py preprocess_addmm: b_data.t().contiguous().t(); read and write 1 B).
  // An output gradient gathered in FP8 (Kernel::fp8_grad_shard: torchao's Float8RowwiseParallel
  // casts it after the reduce-scatter's backward-facing redistribute, i.e. on the rank's shard,
  // before the all-gather) costs its amax and cast on that shard (5 B an element of it) and the
  // row-major copy the weight gradient's transposed operand needs (a_data.contiguous(): 2 B).
  // A weight gathered in FP8 (Kernel::fp8_weight_precast: cast on the FSDP shard before the
  // all-gather) needs no cast; the input gradient's GEMM reads it transposed, which
  // preprocess_addmm copies column-major (read and write 1 B) where the 16-bit weight's
  // backward cast wrote 3 B.
  const double input = k.fp8_input_precast ? 0 : 6 * m * kk;
  const double input_transpose = k.fp8_input_precast ? 2 * m * kk : 0;
  const double grad = k.fp8_grad_shard > 0 ? (5 * k.fp8_grad_shard + 2) * m * n : 6 * m * n;
  const double weight_forward = k.fp8_weight_precast ? 0 : 5 * kk * n;
  const double weight_backward = k.fp8_weight_precast ? 2 * kk * n : 3 * kk * n;
  return forward ? input + weight_forward : grad + input_transpose + weight_backward;
}

// Transformer Engine quantizes the input (forward) and the output gradient (backward) of a
// GEMM once per call, and a grouped GEMM's per expert: GroupedLinear splits them by expert and
// quantizes each split with its own quantizer (grouped_linear.py: tex.split_quantize in forward
// and backward, TE v2.5 to 2.18). Delayed scaling casts all the splits in one fused kernel
// (nvte_multi_cast_transpose); current scaling has none ("Currently only have fused kernel for
// FP8 delayed scaling", csrc/extensions/cast.cpp multi_tensor_quantize_impl) and runs
// Float8CurrentScalingQuantizer::quantize on each split: nvte_compute_amax,
// nvte_compute_scale_from_amax and nvte_quantize_v2, three kernels (csrc/quantizer.cpp).
int quantized_splits(const Kernel& k) {
  return std::max(1, static_cast<int>(std::lround(k.gemm_batch)));
}

int fp8_cast_launches(const Kernel& k, Fp8Scaling scaling) {
  switch (scaling) {
    case Fp8Scaling::kTensorwise:
      if (k.phase != Phase::kBackward) {
        return (k.fp8_input_precast ? 0 : 2) + (k.fp8_weight_precast ? 0 : 2);
      }
      return 4 + (k.fp8_input_precast ? 1 : 0) + (k.fp8_grad_shard > 0 ? 1 : 0);
    case Fp8Scaling::kRowwise: return k.phase != Phase::kBackward ? 2 : 5;
    case Fp8Scaling::kDelayed: return 1;
    case Fp8Scaling::kCurrent: return 3 * quantized_splits(k);
  }
  return 4;
}

double fp8_cast_s(const Kernel& k, const DeviceSpec& d, Fp8Scaling scaling) {
  if (k.gemm_m <= 0) return 0;
  const double bytes = fp8_cast_bytes(k, scaling);
  const double launches = fp8_cast_launches(k, scaling) * d.kernel_overhead_s;
  if (bytes <= 0) return launches;  // nothing to cast (input and weight arrive in FP8)
  return bytes / (d.memory_bandwidth_Bps * d.memory.at(bytes)) + launches;
}

const EfficiencyCurve& gemm_curve(const DeviceSpec& d, bool fp8, Fp8Scaling scaling) {
  if (!fp8) return d.matmul;
  if (scaling == Fp8Scaling::kRowwise && d.matmul_fp8_rowwise.max_fraction > 0) {
    return d.matmul_fp8_rowwise;
  }
  return d.matmul_fp8.max_fraction > 0 ? d.matmul_fp8 : d.matmul;
}

}  // namespace

double wave_efficiency(double m, double n, double batch, int compute_units) {
  if (compute_units <= 0 || m <= 0 || n <= 0) return 1.0;
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles = batch * std::ceil(m / t.m) * std::ceil(n / t.n);
    const double waves = std::ceil(tiles / compute_units);
    // Partial tiles at the matrix edge do wasted work too.
    const double useful = (batch * m * n) / (tiles * t.m * t.n);
    best = std::max(best, t.relative_efficiency * useful * tiles / (waves * compute_units));
  }
  return best;
}

KernelTime kernel_time(const Kernel& k, const DeviceSpec& d, DType dtype, AttentionKernel attention,
                       double compute_slowdown, Fp8Scaling scaling) {
  KernelTime t;
  if (k.task && d.task_flops > 0) {
    // A single-threaded task: its FLOP at one core's rate plus its fixed cost, keeping one of
    // the device's cores busy (the plateau share concurrent_kernels reads).
    t.compute_s = (k.matmul_flops + k.other_flops) / d.task_flops * compute_slowdown;
    t.total_s = t.compute_s + d.task_overhead_s;
    t.plateau_s = t.total_s / std::max(1, d.cores);
    return t;
  }
  const DType storage = storage_dtype(dtype);
  const bool fp8 = dtype == DType::kFp8 && k.fp8_eligible;
  const double peak = d.peak_flops[static_cast<int>(fp8 ? dtype : storage)];
  const EfficiencyCurve& curve = gemm_curve(d, fp8, scaling);
  double plateau_compute = 0, plateau_memory = 0;
  const bool attention_measured =
      k.cls == OpClass::kFlashAttention && k.matmul_flops > 0 && attention_pass(k, d, attention) != nullptr;
  if (k.cls == OpClass::kFlashAttention && k.matmul_flops > 0) {
    t.compute_s += attention_s(k, d, peak, attention, false);
    plateau_compute += attention_s(k, d, peak, attention, true);
  } else if (k.matmul_flops > 0) {
    t.compute_s += matmul_s(k, d, peak, curve);
    plateau_compute += k.matmul_flops / (peak * curve.max_fraction);
  }
  // A fused attention kernel's softmax (its exponentials, row maxima and sums) runs inside the
  // kernel whose time the device's attention curve measured: the curves are the published
  // TFLOPS, the matmul FLOP over the whole kernel's time (FlashAttention-2/3 papers, cuDNN's
  // benchmarks), so that work is not timed again on the vector units. Without a curve the
  // attention runs at the GEMM curve, which has no softmax in it, and pays it here.
  if (k.other_flops > 0 && d.vector_flops > 0 && !attention_measured) {
    t.compute_s += k.other_flops / d.vector_flops;
    plateau_compute += k.other_flops / d.vector_flops;
  }
  t.compute_s *= compute_slowdown;
  plateau_compute *= compute_slowdown;
  if (k.bytes > 0) {
    t.memory_s = k.bytes / (d.memory_bandwidth_Bps * d.memory.at(k.bytes));
    plateau_memory = k.bytes / (d.memory_bandwidth_Bps * d.memory.max_fraction);
  }
  // A calibrated device's measured factor of the kernel's family and form (fused: more than one
  // op in the kernel) over the roofline, beyond the launches (validate/calibration.h).
  if (k.family >= 0 && k.family < kNumKernelFamilies) {
    const double f = d.family_factors[k.family][k.fused_ops > 1 ? 0 : 1];
    t.compute_s *= f, t.memory_s *= f;
    plateau_compute *= f, plateau_memory *= f;
  }
  // A kernel whose input arrives fused from its predecessor adds no launch of its own.
  const double launches = k.reads_input_fused ? 0 : k.launches;
  t.total_s = std::max(t.compute_s, t.memory_s) + d.kernel_overhead_s * launches;
  t.plateau_s = std::max(plateau_compute, plateau_memory);
  if (fp8) {
    t.cast_s = fp8_cast_s(k, d, scaling);
    t.total_s += t.cast_s;
    t.plateau_s += fp8_cast_bytes(k, scaling) / (d.memory_bandwidth_Bps * d.memory.max_fraction);
  }
  t.plateau_s = std::min(t.plateau_s, t.total_s);
  return t;
}

}  // namespace stratasim
