// Non-temporal ("streaming") stores for kernel outputs larger than the caches.
//
// An ordinary store to a line that is not in cache first reads the line from memory (read for
// ownership) and later writes it back, so a kernel that reads two arrays and writes one moves
// four arrays' worth of bytes, and each outstanding line fill holds one of the core's few miss
// buffers. A non-temporal store goes through a write-combining buffer straight to memory: no
// read, no cache pollution. That only pays when the output will not be read back from cache
// soon, i.e. when it is larger than the caches; for smaller outputs it would evict data that the
// next kernel wants. Kernels therefore compute a tile into an L1-resident scratch buffer with
// their ordinary (vectorized, cloned) code and copy it out with stream_floats.
#pragma once

#include <cstddef>

namespace stratasim::kernels {

// How a kernel stores its outputs: automatic streams them when they reach
// kStreamingStoreMinBytes; cached and streaming force one way (tests check that both give the
// same bits, and benchmarks may compare them).
enum class StoreMode { automatic, cached, streaming };

// Bytes written by one kernel call from which it stores with non-temporal stores: well above
// the last-level cache slice a few cores share on current servers (32 MiB per Zen 4 CCD, about
// 2 MiB per core on Xeons), so only outputs that could not stay in cache are streamed.
inline constexpr std::size_t kStreamingStoreMinBytes = std::size_t(64) << 20;

inline bool use_streaming_stores(StoreMode mode, std::size_t bytes_written) {
  return mode == StoreMode::streaming ||
         (mode == StoreMode::automatic && bytes_written >= kStreamingStoreMinBytes);
}

// Elements per scratch tile in the streamed forms: 1 KiB, 16 cache lines per stream. The tile
// alternates a phase that loads the inputs with one that streams the output out; short phases
// let the out-of-order window and the prefetchers overlap the two. Measured on a Zen 4 VM
// (fused dropout, 1 GiB, 2 threads, same rounds): 2048 floats 37-42 GB/s, 512 37-41,
// 256 44-47, 128 38-39, 64 34-36.
inline constexpr std::size_t kStreamTileFloats = 256;

// The end of the tile that starts at index j0 of an output dst[0..n): at most kStreamTileFloats
// after j0, on a 64-byte line boundary of dst (or n). Tiles cut this way leave no line of dst
// shared by two tiles, only the partial lines at the two ends of dst, so each line is written
// either whole by non-temporal stores or by ordinary stores; a line written partly each way, or
// by ordinary stores from two tiles, costs a read from memory (measured: with dst 16 bytes off a
// line and tiles cut every 256 floats, the fused LayerNorm ran at 60% of its aligned rate).
std::size_t stream_tile_end(const float* dst, std::size_t j0, std::size_t n);

// The largest index j <= i at which dst + j starts a 64-byte line (0 if there is none).
std::size_t line_start_at_or_before(const float* dst, std::size_t i);

// Which stores stream_floats uses: the widest the CPU has (AVX-512 or SSE2, chosen once), or
// the x86-64 baseline's SSE2 whatever the CPU (the tests cover that path with it).
enum class StreamIsa { best, baseline };

// dst[0..n) = src[0..n), with non-temporal stores for the whole 64-byte lines of dst (ordinary
// stores for a partial line at either end); a plain copy on other architectures.
void stream_floats(float* dst, const float* src, std::size_t n, StreamIsa isa = StreamIsa::best);

// Writes the output row dst[0..n) tile by tile: produce(j0, count, tile) fills tile[0..count)
// with dst[j0..j0+count), which is then streamed out. produce should call a cloned (vectorized)
// function: code inlined into it is compiled for the baseline target.
template <class Produce>
void stream_row(float* dst, std::size_t n, float* tile, Produce&& produce) {
  for (std::size_t j0 = 0, j1; j0 < n; j0 = j1) {
    j1 = stream_tile_end(dst, j0, n);
    produce(j0, j1 - j0, tile);
    stream_floats(dst + j0, tile, j1 - j0);
  }
}

// Asks for the cache lines of p[0..n) to be brought into L2 (prefetcht2 on x86; a hint, no
// fault on any address, nothing on targets without prefetch).
inline void prefetch_to_l2(const float* p, std::size_t n) {
  for (std::size_t k = 0; k < n; k += 16) __builtin_prefetch(p + k, 0, 1);
}

// Orders the calling thread's earlier non-temporal stores before its later stores, so that
// another thread that synchronizes with it afterwards sees the data. Call once per thread after
// its last stream_floats of a kernel call.
void streaming_store_fence();

}  // namespace stratasim::kernels
