// Non-temporal output stores: exact copies at every alignment, tiles cut on the output's lines.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/streaming_store.h"

namespace stratasim::kernels {
namespace {

// Index of the 64-byte line that holds p.
std::uintptr_t line_of(const float* p) { return reinterpret_cast<std::uintptr_t>(p) / 64; }

TEST_CASE("stream_floats: copies exactly and writes nothing outside dst, at every alignment") {
  constexpr float kGuard = -7.0f;
  for (const StreamIsa isa : {StreamIsa::best, StreamIsa::baseline}) {
    for (std::size_t offset = 0; offset < 16; ++offset) {  // dst + offset: every float of a line
      for (std::size_t n : {0, 1, 3, 15, 16, 17, 31, 48, 100, 1000}) {
        CAPTURE(isa == StreamIsa::best);
        CAPTURE(offset);
        CAPTURE(n);
        std::vector<float> src(n), buffer(n + 48, kGuard);
        for (std::size_t i = 0; i < n; ++i) src[i] = float(i) + 0.5f;
        float* dst = buffer.data() + 16 + offset;
        stream_floats(dst, src.data(), n, isa);
        streaming_store_fence();
        for (std::size_t i = 0; i < n; ++i) REQUIRE(dst[i] == src[i]);
        for (float* p = buffer.data(); p < dst; ++p) REQUIRE(*p == kGuard);
        for (float* p = dst + n; p < buffer.data() + buffer.size(); ++p) REQUIRE(*p == kGuard);
      }
    }
  }
}

TEST_CASE("line_start_at_or_before: the last 64-byte line start at or below an index") {
  alignas(64) static float row[64];
  CHECK(line_start_at_or_before(row, 0) == 0);
  CHECK(line_start_at_or_before(row, 15) == 0);
  CHECK(line_start_at_or_before(row, 16) == 16);  // 16 floats = 64 bytes
  CHECK(line_start_at_or_before(row, 47) == 32);
  // 3 floats past a line start: the next line starts 13 floats on.
  CHECK(line_start_at_or_before(row + 3, 12) == 0);
  CHECK(line_start_at_or_before(row + 3, 13) == 13);
  CHECK(line_start_at_or_before(row + 3, 40) == 29);
}

TEST_CASE("stream_tile_end: tiles cover the row, at most a tile long, inner cuts on lines") {
  std::vector<float> buffer(5000 + 16);
  for (std::size_t offset : {0, 1, 5, 15}) {
    for (std::size_t n : {1, 255, 256, 257, 1000, 4099}) {
      CAPTURE(offset);
      CAPTURE(n);
      float* dst = buffer.data() + offset;
      std::size_t covered = 0, tiles = 0;
      for (std::size_t j0 = 0, j1; j0 < n; j0 = j1, ++tiles) {
        j1 = stream_tile_end(dst, j0, n);
        REQUIRE(j1 > j0);
        REQUIRE(j1 - j0 <= kStreamTileFloats);
        // An inner cut starts a line, so no line holds the end of one tile and the start of
        // the next.
        if (j1 < n) REQUIRE(line_of(dst + j1) != line_of(dst + j1 - 1));
        covered += j1 - j0;
      }
      CHECK(covered == n);
      // Tiles are as long as the line cuts allow: at most one more than n / (tile - 15).
      CHECK(tiles <= n / (kStreamTileFloats - 15) + 1);
    }
  }
}

TEST_CASE("use_streaming_stores: automatic streams from the threshold, the others force") {
  CHECK_FALSE(use_streaming_stores(StoreMode::automatic, kStreamingStoreMinBytes - 1));
  CHECK(use_streaming_stores(StoreMode::automatic, kStreamingStoreMinBytes));
  CHECK(use_streaming_stores(StoreMode::streaming, 4));
  CHECK_FALSE(use_streaming_stores(StoreMode::cached, kStreamingStoreMinBytes * 4));
}

}  // namespace
}  // namespace stratasim::kernels
