#include "inspector/optimizermodel.h"

#include <cmath>

namespace ckpt {

QString statText(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(v, 'g', 6);
}

OptimizerModel::OptimizerModel(QObject* parent) : QAbstractTableModel(parent) {}

void OptimizerModel::setRows(std::vector<OptimizerRow> rows) {
  beginResetModel();
  m_rows = std::move(rows);
  m_stats.clear();
  endResetModel();
}

void OptimizerModel::setStats(std::vector<Stats> stats) {
  if (!stats.empty() && stats.size() != m_rows.size()) return;
  m_stats = std::move(stats);
  if (!m_rows.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

bool OptimizerModel::isSquareColumn(int column) {
  return column >= int(Column::SqNorm) && column <= int(Column::SqStd);
}

int OptimizerModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int OptimizerModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(Column::Count);
}

QVariant OptimizerModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  const Column c = Column(section);
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue((c >= Column::Index && c <= Column::Step) ||
                                       (c >= Column::AvgNorm && c <= Column::SqStd)
                                   ? Qt::AlignRight | Qt::AlignVCenter
                                   : Qt::AlignLeft | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (c >= Column::AvgNorm && c <= Column::AvgStd)
      return tr("exp_avg: Adam's first moment (over finite values)");
    if (c >= Column::SqNorm && c <= Column::SqStd)
      return tr("exp_avg_sq: Adam's second moment (over finite values)");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (c) {
    case Column::Name:
      return tr("Parameter");
    case Column::Index:
      return tr("#");
    case Column::Step:
      return tr("Step");
    case Column::Shape:
      return tr("Shape");
    case Column::AvgNorm:
      return tr("m norm");
    case Column::AvgMean:
      return tr("m mean");
    case Column::AvgStd:
      return tr("m std");
    case Column::SqNorm:
      return tr("v norm");
    case Column::SqMean:
      return tr("v mean");
    case Column::SqStd:
      return tr("v std");
    case Column::Note:
      return tr("Note");
    case Column::Count:
      break;
  }
  return {};
}

std::optional<double> OptimizerModel::number(int row, Column c) const {
  if (size_t(row) >= m_stats.size()) return std::nullopt;
  const Stats& s = m_stats[size_t(row)];
  const std::optional<TensorStats>& t = isSquareColumn(int(c)) ? s.expAvgSq : s.expAvg;
  if (!t) return std::nullopt;
  switch (c) {
    case Column::AvgNorm:
    case Column::SqNorm:
      return t->l2norm;
    case Column::AvgMean:
    case Column::SqMean:
      return t->mean;
    case Column::AvgStd:
    case Column::SqStd:
      return t->std;
    default:
      return std::nullopt;
  }
}

QVariant OptimizerModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const OptimizerRow& r = m_rows[size_t(index.row())];
  const Column c = Column(index.column());
  const bool statColumn = c >= Column::AvgNorm && c <= Column::SqStd;
  switch (role) {
    case Qt::DisplayRole:
      switch (c) {
        case Column::Name:
          return r.name.isEmpty() ? tr("(state %1, unmapped)").arg(r.index) : r.name;
        case Column::Index:
          return QString::number(r.index);
        case Column::Step: {
          // torch keeps Adam's step as a float (300.0): it counts steps, so show it as one.
          bool ok = false;
          const double step = r.step.toDouble(&ok);
          if (ok && step == std::floor(step) && std::abs(step) < 1e15)
            return QString::number(qint64(step));
          return r.step;
        }
        case Column::Shape:
          return r.shape;
        case Column::Note:
          return r.problem;
        default:
          break;
      }
      if (statColumn) {
        if (const auto v = number(index.row(), c)) return statText(*v);
        return m_stats.empty() ? QStringLiteral("\u2026") : QString();
      }
      return {};
    case Qt::TextAlignmentRole:
      if (statColumn || c == Column::Index || c == Column::Step)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    case Qt::ToolTipRole:
      if (statColumn)
        return tr("%1 of %2 (click to inspect the tensor)")
            .arg(isSquareColumn(index.column()) ? "exp_avg_sq" : "exp_avg", r.name);
      return r.problem.isEmpty() ? r.name : r.problem;
    case int(Role::SortKey):
      if (c == Column::Index) return QVariant(qlonglong(r.index));
      if (c == Column::Step) return r.step.toDouble();
      if (statColumn) {
        const auto v = number(index.row(), c);
        return v ? QVariant(*v) : QVariant(-1.0);
      }
      return data(index, Qt::DisplayRole);
    case int(Role::ExpAvgTensor):
      return r.expAvg;
    case int(Role::ExpAvgSqTensor):
      return r.expAvgSq;
    default:
      return {};
  }
}

}  // namespace ckpt
