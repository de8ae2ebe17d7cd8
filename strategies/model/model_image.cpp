// The design documents' image pipeline (kernels/image_pipeline.h) as an operator graph: three 3x3
// stencils on a grayscale fp32 frame, each reading one halo row of its input on each side:
//   blur    [1 2 1]^T [1 2 1] / 16             17 FLOP per pixel (9 multiplies, 8 adds)
//   sobel   sqrt(gx^2 + gy^2), gx, gy 3x3      26 FLOP per pixel (2 x 11, magnitude 4)
//   sharpen [0 -1 0; -1 5 -1; 0 -1 0]           5 FLOP per pixel
// The FLOP counts are kernels/kernel_cases.cpp's (the work `kernels` and `calibrate` time), so a
// prediction of this graph and a measurement of the kernels count the same work.
#include <string>

#include "sim/core/kernel_families.h"
#include "strategies/model/model_json.h"

namespace stratasim {

ModelSpec make_image_pipeline(int height, int width) {
  ModelSpec m;
  m.name = "image-pipeline-" + std::to_string(width) + "x" + std::to_string(height);
  m.family = ModelFamily::kOpGraph;
  const double pixels = static_cast<double>(height) * width;
  auto stencil = [&](std::string name, double flops, std::vector<int> inputs) {
    m.graph.ops.push_back(GraphOp{.name = std::move(name), .kind = GraphOpKind::kStencil, .flops = flops * pixels,
                                  .output_elements = pixels, .inputs = std::move(inputs), .height = height,
                                  .halo = 1, .family = kernel_family_index("image_pipeline")});
  };
  stencil("blur", 17, {});
  m.graph.ops[0].input_elements = pixels;
  stencil("sobel", 26, {0});
  stencil("sharpen", 5, {1});
  return m;
}

}  // namespace stratasim
