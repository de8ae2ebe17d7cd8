// Image pipeline of the design documents, a chain of three 3x3 stencils on a grayscale fp32
// image (h x w, row-major), each stage clamping reads to the image edge:
//   b   = Gaussian blur, [1 2 1]^T [1 2 1] / 16
//   e   = Sobel magnitude of b, sqrt(gx^2 + gy^2) with gx = [-1 0 1; -2 0 2; -1 0 1], gy = gx^T
//   out = sharpen of e, [0 -1 0; -1 5 -1; 0 -1 0]
// fused:     one pass over the image in strips of rows, each streamed through rolling line
//            buffers (Halide's sliding window): the last 3 blur and the last 3 Sobel rows per
//            thread, in cache at any image size, so only the input is read and only out is
//            written (a strip recomputes the 2-row blur and 1-row Sobel halo of its neighbour).
// unfused:   three full-image passes, b and e going through memory (caller's workspace).
// reference: double precision, pixel by pixel.
#pragma once

#include <cstddef>
#include <span>

namespace stratasim::kernels {

struct ImageShape {
  int h = 0, w = 0;
};

void image_pipeline_fused(std::span<const float> in, std::span<float> out, ImageShape s);
// Floats of workspace image_pipeline_unfused needs (b and e): 2 * h * w.
std::size_t image_pipeline_unfused_workspace(ImageShape s);
void image_pipeline_unfused(std::span<const float> in, std::span<float> out,
                            std::span<float> workspace, ImageShape s);
void image_pipeline_reference(std::span<const float> in, std::span<float> out, ImageShape s);

}  // namespace stratasim::kernels
