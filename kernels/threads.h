// How many threads the kernels run on (OpenMP's team size, 1 in a build without OpenMP).
#pragma once

namespace stratasim::kernels {

int kernel_threads();

}  // namespace stratasim::kernels
