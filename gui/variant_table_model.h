// The compare table as a Qt model: one row per scenario variant with its strategy and the
// engine's headline numbers. Qt::DisplayRole gives text, Qt::UserRole the number to sort by.
#pragma once

#include <QtCore/QAbstractTableModel>
#include <vector>

#include "gui/variant_eval.h"

namespace stratasim {

class VariantTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kVariant,
    kTp,
    kPp,
    kDp,
    kCp,
    kEp,
    kSchedule,
    kMicroBatch,
    kInterleave,
    kStages,  // how the layers split over the pipeline's stages: "even", "balanced", "7/7/13/13"
    kRecompute,
    kZero,
    kSp,
    kDtype,
    kOverlap,  // the overlaps it turns on: "dp+tp+ep", "dp+2 streams", or "-"
    kIteration,
    kTokens,
    kMfu,
    kPeakMemory,
    kFits,
    kColumns
  };

  explicit VariantTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void set_rows(std::vector<VariantResult> rows);
  const std::vector<VariantResult>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<VariantResult> rows_;
};

}  // namespace stratasim
