// A mixed cluster (HardwareModel::groups) costed group by group: each pipeline rank's
// blocks, steps, gradient sync, optimizer step and memory are those of the same plan on its
// group's devices and nodes (HardwareModel::group_view). On a cluster of one kind of node every
// rank sees the plan itself and nothing is copied.
#pragma once

#include <vector>

#include "strategies/lowering/plan.h"

namespace stratasim {

class GroupViews {
 public:
  explicit GroupViews(const Plan& plan);
  const Plan& for_rank(int rank) const;
  int group_of_rank(int rank) const { return rank_group_.empty() ? 0 : rank_group_[rank]; }
  bool mixed() const { return !views_.empty(); }

 private:
  const Plan& plan_;
  std::vector<Plan> views_;      // per group some rank runs on (empty: not mixed)
  std::vector<int> rank_group_;  // per pipeline rank: its group
  std::vector<int> rank_view_;   // per pipeline rank: its view
};

}  // namespace stratasim
