#include "strategies/lowering/allocator_replay.h"

#include <algorithm>
#include <vector>

namespace stratasim {
namespace {

struct Segment {
  double start = 0, size = 0;
  int id = -1;  // -1: free
};

// Sizes in a trace are sums of a few tensor sizes; a relative slack keeps an exact fit a fit.
bool holds(double block, double request) { return block >= request * (1 - 1e-12); }

class Allocator {
 public:
  void allocate(int id, double bytes) {
    int best = -1;
    for (int i = 0; i < int(blocks_.size()); ++i) {
      const Segment& b = blocks_[i];
      if (b.id >= 0 || !holds(b.size, bytes)) continue;
      if (best < 0 || b.size < blocks_[best].size) best = i;  // ties: the lower address (first)
    }
    if (best < 0) best = grow(bytes);
    Segment& b = blocks_[best];
    if (b.size > bytes * (1 + 1e-12)) {
      const Segment rest{b.start + bytes, b.size - bytes, -1};
      b.size = bytes;
      blocks_.insert(blocks_.begin() + best + 1, rest);
    }
    blocks_[best].id = id;
    live_ += bytes;
    peaks_.allocated_B = std::max(peaks_.allocated_B, live_);
    peaks_.reserved_B = std::max(peaks_.reserved_B, top());
  }

  void release(int id) {
    auto it = std::find_if(blocks_.begin(), blocks_.end(), [&](const Segment& b) { return b.id == id; });
    if (it == blocks_.end()) return;
    live_ -= it->size;
    it->id = -1;
    size_t i = size_t(it - blocks_.begin());
    if (i + 1 < blocks_.size() && blocks_[i + 1].id < 0) {
      blocks_[i].size += blocks_[i + 1].size;
      blocks_.erase(blocks_.begin() + long(i) + 1);
    }
    if (i > 0 && blocks_[i - 1].id < 0) {
      blocks_[i - 1].size += blocks_[i].size;
      blocks_.erase(blocks_.begin() + long(i));
    }
  }

  AllocatorPeaks peaks() const { return peaks_; }

 private:
  double top() const { return blocks_.empty() ? 0 : blocks_.back().start + blocks_.back().size; }

  // Maps more of the range: the topmost block grows if it is free, else a new one starts at
  // the top. Returns the index of a free block that holds `bytes`.
  int grow(double bytes) {
    if (!blocks_.empty() && blocks_.back().id < 0) {
      blocks_.back().size = std::max(blocks_.back().size, bytes);
    } else {
      blocks_.push_back(Segment{top(), bytes, -1});
    }
    return int(blocks_.size()) - 1;
  }

  std::vector<Segment> blocks_;  // in address order, covering [0, top())
  double live_ = 0;
  AllocatorPeaks peaks_;
};

}  // namespace

AllocatorPeaks replay_caching_allocator(std::span<const AllocatorStep> steps) {
  Allocator a;
  for (const AllocatorStep& s : steps) {
    if (s.bytes > 0) {
      a.allocate(s.id, s.bytes);
    } else {
      a.release(s.id);
    }
  }
  return a.peaks();
}

}  // namespace stratasim
