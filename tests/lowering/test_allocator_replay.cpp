// The caching allocator replay (strategies/lowering/allocator_replay.h), worked by hand on
// address diagrams: [a, b) is a block from address a to b; the reserved peak is the top of the
// highest block ever mapped.
#include <doctest/doctest.h>

#include <vector>

#include "strategies/lowering/allocator_replay.h"

using namespace stratasim;

namespace {

AllocatorPeaks replay(std::vector<AllocatorStep> steps) { return replay_caching_allocator(steps); }

}  // namespace

TEST_CASE("allocator replay: a freed block is reused when the request fits it, and the range grows when none does") {
  // 0 -> [0,4); 1 -> [4,6); free 0 leaves a 4 B hole; 2 (3 B) takes it ([0,3), a 1 B rest);
  // 3 (4 B) fits no hole and is not under a free top: it maps [6,10).
  const AllocatorPeaks p = replay({{0, 4}, {1, 2}, {0, 0}, {2, 3}, {3, 4}});
  CHECK(p.allocated_B == 9);  // 2 + 3 + 4 at the end; 6 before
  CHECK(p.reserved_B == 10);
  // An exact fit: nothing grows.
  CHECK(replay({{0, 4}, {1, 2}, {0, 0}, {2, 4}}).reserved_B == 6);
}

TEST_CASE("allocator replay: best fit takes the smallest hole that holds a request, then the lowest address") {
  // [0,5) a, [5,6) b, [6,9) c, [9,10) d; a and c freed: holes of 5 and 3. A 3 B request takes
  // c's hole exactly, so a later 5 B request still fits a's: nothing grows past 10. First fit
  // would put the 3 B in a's hole and map 5 more.
  CHECK(replay({{0, 5}, {1, 1}, {2, 3}, {3, 1}, {0, 0}, {2, 0}, {4, 3}, {5, 5}}).reserved_B == 10);
  // Two equal holes, [0,2) and the free top [3,5): the lower one is taken, so a 3 B request
  // then grows the top block in place to [3,6). Had the top been taken, it would map [5,8).
  CHECK(replay({{0, 2}, {1, 1}, {2, 2}, {0, 0}, {2, 0}, {3, 2}, {4, 3}}).reserved_B == 6);
}

TEST_CASE("allocator replay: freed neighbours merge, and a free top block grows in place") {
  // [0,2) [2,4) [4,6) all freed: one 6 B hole takes a 6 B request without growing.
  CHECK(replay({{0, 2}, {1, 2}, {2, 2}, {0, 0}, {2, 0}, {1, 0}, {3, 6}}).reserved_B == 6);
  // [0,4) held, [4,6) freed at the top: a 4 B request maps 2 more, starting in that block:
  // the top reaches 8, not 10.
  CHECK(replay({{0, 4}, {1, 2}, {1, 0}, {2, 4}}).reserved_B == 8);
  // A free of a tensor that is not live changes nothing.
  CHECK(replay({{0, 4}, {7, 0}, {0, 0}, {0, 0}, {1, 4}}).reserved_B == 4);
}

TEST_CASE("allocator replay: F.cross_entropy on bf16 logits leaves their 2 B hole reserved under its fp32 gradients") {
  // Per logit: [0,2) bf16 logits, [2,6) fp32 copy, [6,10) log-probabilities; copy and logits
  // freed: hole [0,6). Backward: the nll gradient takes [0,4) (best fit, 2 B left), log_softmax's
  // input gradient (4 B) fits no hole and the top [6,10) is held, so [10,14) is mapped.
  // Allocated at most 12 (nll gradient, log-probabilities, input gradient), reserved 14.
  const AllocatorPeaks p = replay({{0, 2}, {1, 4}, {2, 4}, {1, 0}, {0, 0},
                                   {3, 4}, {4, 4}, {3, 0}, {2, 0}, {5, 2}, {4, 0}});
  CHECK(p.allocated_B == 12);
  CHECK(p.reserved_B == 14);
  // Megatron's loss keeps its gradient in the saved softmax (in place): the bf16 gradient
  // takes the logits' 2 B hole exactly, and nothing is left over.
  const AllocatorPeaks m = replay({{0, 2}, {1, 4}, {0, 0}, {2, 2}, {1, 0}});
  CHECK(m.reserved_B == m.allocated_B);
}
