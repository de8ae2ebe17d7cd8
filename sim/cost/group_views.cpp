#include "sim/cost/group_views.h"

#include "strategies/lowering/mixed_cluster.h"

namespace stratasim {

GroupViews::GroupViews(const Plan& plan) : plan_(plan) {
  if (!plan.hardware.mixed()) return;
  // One copy per group a rank runs on (not per group of the cluster).
  std::vector<int> view_of(plan.hardware.groups.size(), -1);
  rank_group_.resize(plan.pp);
  rank_view_.resize(plan.pp);
  for (int r = 0; r < plan.pp; ++r) {
    const int g = pipeline_rank_group(plan, r);
    rank_group_[r] = g;
    if (view_of[g] < 0) {
      view_of[g] = static_cast<int>(views_.size());
      views_.push_back(plan);
      views_.back().hardware = plan.hardware.group_view(g);
    }
    rank_view_[r] = view_of[g];
  }
}

const Plan& GroupViews::for_rank(int rank) const {
  return views_.empty() ? plan_ : views_[rank_view_[rank]];
}

}  // namespace stratasim
