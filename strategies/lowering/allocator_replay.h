// A caching allocator replayed over a tensor trace: how much memory a sequence of allocations
// and frees makes the framework reserve, beyond what its tensors hold at once.
//
// The model is PyTorch's CUDA caching allocator with expandable segments
// (c10/cuda/CUDACachingAllocator.cpp; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, as
// TorchTitan's run_llama_train.sh sets it), for blocks far above its 2 MiB rounding: one
// address range per stream that grows at its top; a request takes the smallest free block
// that holds it (best fit, the lowest address among equals) and splits off the rest; a freed
// block merges with free neighbours; when no free block holds a request, the range grows,
// starting inside its topmost block if that one is free. Nothing is returned to the device
// (no empty_cache), so the reserved peak is the range's largest extent.
#pragma once

#include <span>

namespace stratasim {

// One step of a trace: allocate `bytes` as tensor `id` (bytes > 0), or free tensor `id`
// (bytes == 0). Ids are small non-negative integers, each allocated at most once at a time.
struct AllocatorStep {
  int id = 0;
  double bytes = 0;
};

struct AllocatorPeaks {
  double allocated_B = 0;  // the largest sum of live tensors (max_memory_allocated)
  double reserved_B = 0;   // the largest extent of the address range (max_memory_reserved)
};

// Replays `steps` from an empty allocator. A free of a tensor that is not live is ignored.
AllocatorPeaks replay_caching_allocator(std::span<const AllocatorStep> steps);

}  // namespace stratasim
