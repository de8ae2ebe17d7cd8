// The table's sort and filter: sorts on numbers (Qt::UserRole of VariantTableModel) and keeps
// the rows that match every active filter: fits in memory, schedule, and tp / pp / dp degrees.
#pragma once

#include <QtCore/QSortFilterProxyModel>

namespace stratasim {

class StrategyFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit StrategyFilter(QObject* parent = nullptr);

  void set_fits_only(bool on);
  void set_schedule(const QString& name);  // "" = any schedule
  // column is VariantTableModel::kTp, kPp or kDp; 0 = any degree.
  void set_degree(int column, int degree);
  void clear_filters();

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  bool fits_only_ = false;
  QString schedule_;
  int tp_ = 0, pp_ = 0, dp_ = 0, cp_ = 0, ep_ = 0;
};

}  // namespace stratasim
