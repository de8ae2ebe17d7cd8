#include "sim/cost/group_views.h"

#include "strategies/lowering/mixed_cluster.h"

namespace stratasim {

GroupViews::GroupViews(const Plan& plan) : plan_(plan) {
  if (!plan.hardware.mixed()) return;
  views_.reserve(plan.hardware.groups.size());
  for (size_t g = 0; g < plan.hardware.groups.size(); ++g) {
    views_.push_back(plan);
    views_.back().hardware = plan.hardware.group_view(static_cast<int>(g));
  }
  rank_group_.resize(plan.pp);
  for (int r = 0; r < plan.pp; ++r) rank_group_[r] = pipeline_rank_group(plan, r);
}

const Plan& GroupViews::for_rank(int rank) const {
  return views_.empty() ? plan_ : views_[rank_group_[rank]];
}

}  // namespace stratasim
