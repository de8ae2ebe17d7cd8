// Measurement buffers on huge pages (kernels/huge_pages.h): alignment, contents, and the
// kernel's reported policy.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>

#include "kernels/huge_pages.h"

using namespace stratasim::kernels;

TEST_CASE("huge pages: a buffer of a huge page or more starts on a huge page, smaller ones on a cache line") {
  const BenchVec big(kHugePageBytes / sizeof(float) + 3, 1.5f);  // 2 MiB + 12 B: two huge pages
  CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % kHugePageBytes == 0);
  CHECK(std::accumulate(big.begin(), big.end(), 0.0) == doctest::Approx(1.5 * double(big.size())));
  const BenchVec small(1000, 2.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
  CHECK(small[999] == 2.0f);
  const BenchVecD doubles(kHugePageBytes / sizeof(double), 0.25);
  CHECK(reinterpret_cast<std::uintptr_t>(doubles.data()) % kHugePageBytes == 0);
  BenchVec grown;
  for (int i = 0; i < 700000; ++i) grown.push_back(float(i));  // reallocations free old blocks
  CHECK(grown[699999] == 699999.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(grown.data()) % kHugePageBytes == 0);
}

TEST_CASE("huge pages: the reported policy is the kernel's bracketed choice") {
  const std::string mode = huge_page_mode();
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (f && std::getline(f, line)) {
    // e.g. "always [madvise] never": the bracketed word.
    CHECK(line.find("[" + mode + "]") != std::string::npos);
  } else {
    CHECK(mode == "unavailable");
  }
}
