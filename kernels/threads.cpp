#include "kernels/threads.h"

#ifdef STRATASIM_KERNELS_OPENMP
#include <omp.h>
#endif

namespace stratasim::kernels {

int kernel_threads() {
#ifdef STRATASIM_KERNELS_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace stratasim::kernels
