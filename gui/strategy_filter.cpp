#include "gui/strategy_filter.h"

#include "gui/variant_table_model.h"

namespace stratasim {

StrategyFilter::StrategyFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(Qt::UserRole);
}

void StrategyFilter::set_fits_only(bool on) {
  fits_only_ = on;
  invalidateFilter();
}

void StrategyFilter::set_schedule(const QString& name) {
  schedule_ = name;
  invalidateFilter();
}

void StrategyFilter::set_degree(int column, int degree) {
  switch (column) {
    case VariantTableModel::kTp: tp_ = degree; break;
    case VariantTableModel::kPp: pp_ = degree; break;
    case VariantTableModel::kDp: dp_ = degree; break;
    case VariantTableModel::kCp: cp_ = degree; break;
    case VariantTableModel::kEp: ep_ = degree; break;
    default: Q_ASSERT_X(false, "set_degree", "column must be tp, pp, dp, cp or ep");
  }
  invalidateFilter();
}

void StrategyFilter::clear_filters() {
  fits_only_ = false;
  schedule_.clear();
  tp_ = pp_ = dp_ = cp_ = ep_ = 0;
  invalidateFilter();
}

bool StrategyFilter::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QAbstractItemModel* m = sourceModel();
  auto value = [&](int column) {
    return m->index(source_row, column, source_parent).data(Qt::UserRole);
  };
  if (fits_only_ && value(VariantTableModel::kFits).toInt() != 1) return false;
  if (!schedule_.isEmpty() && value(VariantTableModel::kSchedule).toString() != schedule_) {
    return false;
  }
  const std::pair<int, int> degrees[] = {
      {VariantTableModel::kTp, tp_}, {VariantTableModel::kPp, pp_}, {VariantTableModel::kDp, dp_},
      {VariantTableModel::kCp, cp_}, {VariantTableModel::kEp, ep_}};
  for (const auto& [column, want] : degrees) {
    if (want > 0 && value(column).toInt() != want) return false;
  }
  return true;
}

}  // namespace stratasim
