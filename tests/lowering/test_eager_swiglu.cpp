// SwiGLU as eager PyTorch model code runs it, F.silu(w1(x)) * w3(x) (TorchTitan's and Hugging
// Face's Llama FeedForward), where the model's other elementwise ops are eager too (no
// FusionPlan::fused_norm); a fused stack runs one kernel. Worked by hand on a small Llama-style
// layer: hidden 1024, ffn 2816, micro-batch 1 x seq 512, tp 1, bf16, so the activation's output
// r = 512 x 2816 x 2 B = 2,883,584 B and its input (gate | up) 2r.
#include <doctest/doctest.h>

#include "tests/support/small_plans.h"

namespace stratasim {
namespace {

using testing::kernel;

ModelSpec small_llama() {
  ModelSpec m = testing::small_gpt(2);
  TransformerSpec& t = m.transformer;
  t.norm = NormKind::kRMSNorm;
  t.activation = Activation::kSwiGLU;
  t.ffn_hidden = 2816;
  t.rotary = true, t.learned_positions = false;
  return m;
}

Strategy stack(bool fused_norm) {
  Strategy s = testing::all_fused();
  s.fusion.fused_norm = fused_norm;
  s.fusion.elementwise_epilogue = false;  // the activation a kernel of its own either way
  return s;
}

}  // namespace

TEST_CASE("eager swiglu: silu and mul as two kernels, three in the backward, silu's output kept") {
  const double r = 512.0 * 2816 * 2;
  const Plan fused = testing::lower_on_dgx_a100(small_llama(), stack(true), 8);
  const Plan eager = testing::lower_on_dgx_a100(small_llama(), stack(false), 8);
  // One phase's swiglu kernel, fused and eager: bytes in units of r, and kernels.
  auto expect = [&](const std::vector<Kernel> Block::*phase, double fused_r, double eager_r,
                    int eager_launches) {
    const Kernel& f = kernel(fused.layer.get()->*phase, *fused.layer, "swiglu");
    const Kernel& e = kernel(eager.layer.get()->*phase, *eager.layer, "swiglu");
    CHECK(f.bytes == doctest::Approx(fused_r * r));
    CHECK(e.bytes == doctest::Approx(eager_r * r));
    CHECK(f.launches == 1);
    CHECK(e.launches == eager_launches);
  };
  // Forward. Fused: read gate | up (2r), write the output (r). Eager: silu writes its output
  // and mul reads it back, 2r more; one kernel more.
  expect(&Block::forward, 3, 5, 2);
  // Backward: fused 2x the forward's traffic (6r); eager mul's two gradients and silu's, 3r
  // each (9r), three kernels.
  expect(&Block::backward, 6, 9, 3);
  // Without recomputation autograd keeps silu's output for mul's backward: r more a layer. The
  // eager norms and rotary keep nothing more than their fused kernels (their intermediates are
  // freed), so the layers differ by r exactly.
  CHECK(eager.layer->saved_activation_B - fused.layer->saved_activation_B == doctest::Approx(r));
  // Full recomputation keeps only the layer input: nothing of silu's.
  Strategy full_f = stack(true), full_e = stack(false);
  full_f.recompute = full_e.recompute = Recompute::kFull;
  const Plan ff_full = testing::lower_on_dgx_a100(small_llama(), full_f, 8);
  const Plan fe_full = testing::lower_on_dgx_a100(small_llama(), full_e, 8);
  CHECK(fe_full.layer->saved_activation_B == doctest::Approx(ff_full.layer->saved_activation_B));
}

}  // namespace stratasim
