#include "kernels/huge_pages.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace stratasim::kernels {

// Every block comes from aligned_alloc (so release_huge frees them all with free): a cache
// line's alignment below one huge page, a huge page's from one up, sizes rounded to a multiple
// of the alignment as aligned_alloc requires.
void* allocate_huge(std::size_t bytes) {
  const std::size_t align = bytes >= kHugePageBytes ? kHugePageBytes : 64;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHugePageBytes) (void)madvise(p, rounded, MADV_HUGEPAGE);  // advisory
#endif
  return p;
}

void release_huge(void* p) noexcept { std::free(p); }

std::string huge_page_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!f || !std::getline(f, line)) return "unavailable";
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unavailable";
  return line.substr(open + 1, close - open - 1);
}

}  // namespace stratasim::kernels
