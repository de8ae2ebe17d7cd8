// One timed kernel run, as the CPU kernels (kernels/) and the CUDA kernels (kernels/cuda/)
// report it: what the run did (work counted by the same rules on both, so a calibrated
// DeviceSpec can predict it) and how long it took. The calibration (validate/) fits a
// DeviceSpec to microbenchmark Measurements and predicts kernel Measurements with it.
#pragma once

#include <string>

namespace stratasim::kernels {

struct Measurement {
  std::string family;   // "gemm_bias_gelu", "layernorm", "copy", "gemm_peak", "launch", ...
  std::string form;     // "fused" | "unfused" | "" for microbenchmarks
  std::string dtype = "fp32";  // arithmetic type ("fp32", "fp64", "fp16", "bf16", "tf32")
  std::string shape;    // human-readable, e.g. "4096x1024"
  double matmul_flop = 0;  // FLOP in matrix-multiply inner loops (GEMM units / tensor cores)
  double vector_flop = 0;  // other arithmetic (elementwise, reductions, exp counted as 1 each)
  double bytes = 0;        // bytes the form must move to/from memory (each pass counted)
  int launches = 1;        // kernels / parallel regions the form starts
  double seconds = 0;      // median of the timed repeats
  double min_seconds = 0;  // fastest repeat
  int repeats = 0;
};

}  // namespace stratasim::kernels
