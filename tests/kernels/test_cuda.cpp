// The CUDA kernels' interface (kernels/cuda): how the binary was built, the clear refusal when
// there is no usable device (this CI machine has none: without nvcc, or with nvcc and no
// driver), and, only where a GPU is present, fused vs unfused vs the CPU double references on
// odd shapes, and the timed runs' work counts.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "sim/core/error.h"

using namespace stratasim;
using namespace stratasim::kernels;

namespace {

#ifndef STRATASIM_KERNELS_CUDA
#error "stratasim_kernels_cuda defines STRATASIM_KERNELS_CUDA for the code that links it"
#endif
constexpr bool kBuiltWithCuda = STRATASIM_KERNELS_CUDA == 1;

// The rule open_device gives when no device can be used in this build.
doctest::Contains no_device_reason() {
  return doctest::Contains(kBuiltWithCuda
                               ? "command line: --device: cuda:0 cannot be used: no CUDA device: "
                                 "cudaGetDeviceCount returned "
                               : "command line: --device: cuda:0 cannot be used: this stratasim "
                                 "was built without CUDA (STRATASIM_WITH_CUDA=OFF: ");
}

bool skip_without_gpu() {
  if (cuda::device_count() > 0) return false;
  MESSAGE("skipped: no CUDA device on this machine (built with CUDA: " << kBuiltWithCuda << ")");
  return true;
}

}  // namespace

TEST_CASE("cuda: compiled_with_cuda() says how this binary was built") {
  CHECK(cuda::compiled_with_cuda() == kBuiltWithCuda);
  if (!kBuiltWithCuda) CHECK(cuda::device_count() == 0);
}

TEST_CASE("cuda: asking for a device where none can be used says why") {
  if (cuda::device_count() > 0) {
    MESSAGE("skipped: this machine has a CUDA device");
    return;
  }
  const cuda::Progress none;
  CHECK_THROWS_WITH_AS(cuda::open_device(0), no_device_reason(), InputError);
  CHECK_THROWS_WITH_AS(cuda::run_kernels(0, true, none), no_device_reason(), InputError);
  CHECK_THROWS_WITH_AS(cuda::run_microbenchmarks(0, true, none), no_device_reason(), InputError);
  CHECK_THROWS_WITH_AS(cuda::check_kernels(0, none), no_device_reason(), InputError);
  if (kBuiltWithCuda) {  // and says where to look
    CHECK_THROWS_WITH_AS(cuda::open_device(0), doctest::Contains("(is the NVIDIA driver loaded?)"),
                         InputError);
  }
  CHECK(cuda::device_count() == 0);  // asking again after the failed calls: still 0, no throw
}

TEST_CASE("cuda: a device index beyond the machine's devices is refused with the count") {
  if (skip_without_gpu()) return;
  const int n = cuda::device_count();
  CHECK_THROWS_WITH_AS(
      cuda::open_device(n),
      doctest::Contains(
          ("is out of range: this machine has " + std::to_string(n) + " CUDA device(s)").c_str()),
      InputError);
  CHECK_THROWS_AS(cuda::open_device(-1), InputError);
  const cuda::DeviceProperties p = cuda::open_device(0);
  CHECK(!p.name.empty());
  CHECK(p.multiprocessors > 0);
  CHECK(p.compute_capability_major >= 7);
  CHECK(p.memory_B > 1e9);
  CHECK(p.memory_bandwidth_Bps > 1e11);
}

TEST_CASE("cuda: every family's fused and unfused forms match the CPU reference on odd shapes") {
  if (skip_without_gpu()) return;
  const auto checks = cuda::check_kernels(0, {});
  std::set<std::string> families;
  for (const auto& c : checks) {
    families.insert(c.family);
    CAPTURE(c.family);
    CAPTURE(c.shape);
    CAPTURE(c.output);
    // error / tolerance: <= 1 within the family's bound (kernels/cuda/cuda_tolerance.h)
    CHECK(c.fused_vs_reference <= 1.0);
    CHECK(c.unfused_vs_reference <= 1.0);
    CHECK(c.fused_vs_unfused <= 1.0);
  }
  CHECK(families == std::set<std::string>{"gemm_bias_gelu", "bias_dropout_residual", "layernorm",
                                          "softmax", "attention", "conv_bn_relu", "image_pipeline",
                                          "lstm_cell"});
}

TEST_CASE("cuda: timed kernels come in both forms, the fused one moving fewer bytes") {
  if (skip_without_gpu()) return;
  const auto ms = cuda::run_kernels(0, true, {});
  std::map<std::string, std::map<std::string, Measurement>> by;
  for (const auto& m : ms) {
    CAPTURE(m.family);
    CAPTURE(m.form);
    CHECK(m.seconds > 0);
    CHECK(m.min_seconds <= m.seconds);
    CHECK(m.repeats == 3);
    CHECK(m.bytes > 0);
    CHECK(m.matmul_flop + m.vector_flop > 0);
    by[m.family][m.form] = m;
  }
  CHECK(by.size() == 8);
  for (const auto& [family, forms] : by) {
    CAPTURE(family);
    REQUIRE(forms.size() == 2);
    const Measurement& f = forms.at("fused");
    const Measurement& u = forms.at("unfused");
    CHECK(f.launches == 1);
    CHECK(u.launches > 1);
    CHECK(f.bytes < u.bytes);
    CHECK(f.shape == u.shape);
  }
}

TEST_CASE("cuda: microbenchmarks cover copy, triad, the four GEMM dtypes and launches") {
  if (skip_without_gpu()) return;
  const cuda::DeviceProperties p = cuda::open_device(0);
  const auto ms = cuda::run_microbenchmarks(0, true, {});
  std::set<std::pair<std::string, std::string>> seen;
  int dram_copies = 0;
  for (const auto& m : ms) {
    CAPTURE(m.family);
    CAPTURE(m.shape);
    seen.insert({m.family, m.dtype});
    CHECK(m.seconds > 0);
    CHECK(m.form.empty());
    // Arrays beyond twice the L2 cache: no faster than the memory's theoretical bandwidth.
    if ((m.family == "copy" || m.family == "triad") && m.shape.ends_with(" dram")) {
      dram_copies += m.family == "copy";
      CHECK(m.bytes / m.seconds < 1.1 * p.memory_bandwidth_Bps);
    }
  }
  for (const char* dt : {"fp32", "tf32", "fp16", "bf16"}) {
    CHECK(seen.count({"gemm_peak", dt}) == 1);
  }
  CHECK(seen.count({"copy", "fp32"}) == 1);
  CHECK(seen.count({"triad", "fp32"}) == 1);
  CHECK(seen.count({"launch", "fp32"}) == 1);
  CHECK(dram_copies >= 1);  // what calibrate fits the DRAM bandwidth on
}
