#include "gui/variant_table_model.h"

#include <QtCore/QStringList>

#include "sim/core/units.h"
#include "sim/core/text.h"
#include "strategies/pipeline/pipeline_schedule.h"
#include "strategies/strategy/strategy_json.h"
#include "validate/intervals.h"

namespace stratasim {
namespace {

QString text(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

QString overlaps(const Strategy& s) {
  QStringList on;
  if (s.overlap_dp) on << "dp";
  if (s.overlap_tp) on << "tp";
  if (s.overlap_ep) on << "ep";
  if (s.ep > 1 && s.ep_dispatch != EpDispatch::kAllToAll) on << text(enum_to_name(kEpDispatchNames, s.ep_dispatch));
  if (s.cp > 1 && s.cp_comm == CpComm::kAllToAll) on << "ulysses";
  if (s.cp > 1 && s.cp_comm == CpComm::kAllGather) on << "cp all-gather";
  if (s.cp > 1 && s.cp_comm == CpComm::kRing && s.cp_rotate == CpRotate::kAllGather) on << "cp gathered ring";
  if (s.cp > 1 && s.cp_comm == CpComm::kRing && !s.cp_overlap) on << "cp waited";
  if (s.streams > 1) on << QString("%1 streams").arg(s.streams);  // an operator graph's branches
  if (s.placement_devices() > 1) on << QString("placed on %1").arg(s.placement_devices());
  if (s.offload == Offload::kOptimizer) on << "optimizer offload";
  return on.isEmpty() ? "-" : on.join('+');
}

// The value a cell sorts by; infeasible variants sort below every feasible one.
QVariant sort_value(const VariantResult& v, int column) {
  const Prediction& p = v.prediction;
  switch (column) {
    case VariantTableModel::kVariant: {
      // A search candidate "#12 tp8 ..." sorts by its rank, numerically.
      if (v.name.size() > 1 && v.name[0] == '#') {
        bool ok = false;
        const int rank = QString::fromStdString(v.name.substr(1, v.name.find(' ') - 1)).toInt(&ok);
        if (ok) return rank;
      }
      return QString::fromStdString(v.name);
    }
    case VariantTableModel::kTp:
      return v.strategy.tp;
    case VariantTableModel::kPp:
      return v.strategy.pp;
    case VariantTableModel::kDp:
      return v.feasible() ? v.plan->data_parallel() : -1;
    case VariantTableModel::kCp:
      return v.strategy.cp;
    case VariantTableModel::kEp:
      return v.strategy.ep;
    case VariantTableModel::kSchedule:
      return text(schedule_name(v.strategy.schedule));
    case VariantTableModel::kMicroBatch:
      return v.strategy.micro_batch;
    case VariantTableModel::kInterleave:
      return v.strategy.interleave;
    case VariantTableModel::kStages:  // as lowered: "auto" resolved on a mixed cluster
      return QString::fromStdString(stage_layers_text(v.feasible() ? v.plan->strategy : v.strategy));
    case VariantTableModel::kRecompute:
      return QString::fromStdString(recompute_label(v.strategy));
    case VariantTableModel::kZero:
      return v.strategy.zero_stage;
    case VariantTableModel::kSp:
      return v.strategy.sequence_parallel ? "on" : "off";
    case VariantTableModel::kDtype:
      return text(dtype_name(v.strategy.dtype));
    case VariantTableModel::kOverlap:
      return overlaps(v.strategy);
    case VariantTableModel::kIteration:
      return v.feasible() ? p.iteration_s : 1e300;
    case VariantTableModel::kTokens:
      return v.feasible() ? p.tokens_per_s : -1.0;
    case VariantTableModel::kMfu:
      return v.feasible() ? p.mfu : -1.0;
    case VariantTableModel::kPeakMemory:
      return v.feasible() ? p.peak_memory_B : 1e300;
    case VariantTableModel::kFits:
      return v.feasible() && p.fits ? 1 : 0;
  }
  return {};
}

QString display_value(const VariantResult& v, int column) {
  const Prediction& p = v.prediction;
  if (!v.feasible() && column >= VariantTableModel::kIteration) {
    return column == VariantTableModel::kFits ? "infeasible" : "-";
  }
  switch (column) {
    case VariantTableModel::kVariant:
      return QString::fromStdString(v.name);
    case VariantTableModel::kIteration:
      return QString::fromStdString(format_seconds(p.iteration_s));
    case VariantTableModel::kTokens:
      return QString::number(p.tokens_per_s, 'f', 0);
    case VariantTableModel::kMfu:
      return QString::number(100 * p.mfu, 'f', 1) + " %";
    case VariantTableModel::kPeakMemory:
      return QString::number(p.peak_memory_B / kGiB, 'f', 1) + " GiB";
    case VariantTableModel::kFits:
      return p.fits ? "yes" : "no";
    default:
      return sort_value(v, column).toString();
  }
}

}  // namespace

void VariantTableModel::set_rows(std::vector<VariantResult> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int VariantTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int VariantTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant VariantTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const VariantResult& v = rows_[index.row()];
  if (role == Qt::DisplayRole) return display_value(v, index.column());
  if (role == Qt::UserRole) return sort_value(v, index.column());
  if (role == Qt::ToolTipRole && !v.feasible()) return QString::fromStdString(v.infeasible);
  if (role == Qt::ToolTipRole && index.column() == kIteration) {
    // How sure: the errors of the development cases on this GPU generation and strategy family
    // (intervals.h).
    const PredictionInterval in = plan_interval(*v.plan, v.prediction.iteration_s);
    return QString::fromStdString(
        format_text("%.0f%% interval %s", 100 * in.coverage, interval_text(in).c_str()));
  }
  if (role == Qt::TextAlignmentRole && index.column() != kVariant) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant VariantTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kHeaders[kColumns] = {
      "variant", "tp",    "pp",      "dp",       "cp",        "ep",       "schedule",
      "mb",      "v",     "stages",  "recompute", "zero",   "sp",        "type",     "overlap",
      "iteration", "tokens/s", "MFU", "peak memory", "fits"};
  return QString(kHeaders[section]);
}

}  // namespace stratasim
