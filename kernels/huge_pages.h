#pragma once
// Measurement buffers on 2 MiB pages, so that a kernel's timing does not depend on which
// physical pages a process happens to get.
//
// Why: a frame or a stream array on 4 KiB pages is scattered over physical memory, and the L2
// (physically indexed) and the TLB see a different layout in each process. On the development
// machine (2 cores, THP "madvise") the fused image pipeline on a 2048 x 7168 frame, the fastest
// of 8 repeats in each of 6 fresh processes, took 11.2 to 13.7 ms on 4 KiB pages and 9.2 to
// 10.1 ms on 2 MiB pages (4096 x 5120: 16.7-17.4 vs 13.8-14.9 ms). Calibration and validation
// measure different shapes in different processes, so that spread went straight into the
// validation error: `validate --hardware` had the 2048 x 7168 fused frame +18.5% and +20.5%
// off in 2 of 4 runs before, -4.1% to +8.9% in 9 runs over 3 calibrations after.
//
// Transparent huge pages are asked for with madvise(MADV_HUGEPAGE) before the first touch,
// which works in the kernel's "madvise" and "always" modes; in "never" mode (or elsewhere than
// Linux) the buffers fall back to ordinary pages and huge_page_mode() says so.
#include <cstddef>
#include <new>
#include <string>
#include <vector>

namespace stratasim::kernels {

inline constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

// Memory for `bytes`, 2 MiB-aligned and advised to use huge pages when it spans at least one
// (smaller buffers gain nothing: they live in the caches); never null (throws bad_alloc).
void* allocate_huge(std::size_t bytes);
void release_huge(void* p) noexcept;

// The system's transparent huge page policy as /sys/kernel/mm/transparent_hugepage/enabled
// names it ("always", "madvise", "never"), or "unavailable".
std::string huge_page_mode();

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: allocator rebind
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_huge(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { release_huge(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A float array for timed kernels (every kernel case, stream and GEMM microbenchmark).
using BenchVec = std::vector<float, HugePageAllocator<float>>;
using BenchVecD = std::vector<double, HugePageAllocator<double>>;

}  // namespace stratasim::kernels
