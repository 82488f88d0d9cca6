#include "compare/diffmodel.h"

#include <QBrush>
#include <QColor>
#include <QRegularExpression>
#include <cmath>
#include <limits>

#include "textformat.h"

namespace ckpt {
namespace {

QString shapeText(const std::vector<int64_t>& shape) {
  QStringList dims;
  for (int64_t d : shape) dims << QString::number(d);
  return "[" + dims.join(", ") + "]";
}

QString layerText(const LayerKey& key) {
  const QString module = fromStd(std::string(layerModuleName(key.module)));
  return key.block < 0 ? module : QStringLiteral("%1 · %2").arg(key.block).arg(module);
}

// The Status column shows these words; Role::Status gives the English key
// (what code and tests compare), the same in every language.
QString statusWord(const QString& key) {
  if (key == QLatin1String("added")) return DiffModel::tr("added");
  if (key == QLatin1String("removed")) return DiffModel::tr("removed");
  if (key == QLatin1String("shape")) return DiffModel::tr("shape");
  if (key == QLatin1String("dtype")) return DiffModel::tr("dtype");
  if (key == QLatin1String("error")) return DiffModel::tr("error");
  if (key == QLatin1String("same")) return DiffModel::tr("same");
  if (key == QLatin1String("changed")) return DiffModel::tr("changed");
  return key;
}

// NaN does not order: it sorts as +inf (after every number ascending,
// with the structure rows and errors, which have no number either).
QVariant sortNumber(double v) {
  return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
}

}  // namespace

QString metricText(double v) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  if (v == 0) return QStringLiteral("0");
  const double a = std::fabs(v);
  if (a >= 1e-3 && a < 1e4)
    return QString::number(v, 'f', a >= 1 ? 4 : 6)
        .remove(QRegularExpression("0+$"))
        .remove(QRegularExpression("\\.$"));
  return QString::number(v, 'e', 3);
}

DiffModel::DiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiffModel::setDiff(std::shared_ptr<const CheckpointDiff> diff) {
  beginResetModel();
  m_diff = std::move(diff);
  m_rows.clear();
  if (m_diff) {
    for (size_t i = 0; i < m_diff->added.size(); ++i) m_rows.push_back({Row::Kind::Added, i});
    for (size_t i = 0; i < m_diff->removed.size(); ++i) m_rows.push_back({Row::Kind::Removed, i});
    for (size_t i = 0; i < m_diff->changedShape.size(); ++i)
      m_rows.push_back({Row::Kind::Shape, i});
    for (size_t i = 0; i < m_diff->tensors.size(); ++i)
      if (m_diff->tensors[i].computed) m_rows.push_back({Row::Kind::Tensor, i});
  }
  endResetModel();
}

const TensorDiff* DiffModel::tensor(int row) const {
  if (!m_diff || row < 0 || size_t(row) >= m_rows.size() ||
      m_rows[size_t(row)].kind != Row::Kind::Tensor)
    return nullptr;
  return &m_diff->tensors[m_rows[size_t(row)].index];
}

int DiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int DiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(Column::Count);
}

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (Column(section)) {
      case Column::RelL2:
        return tr("Relative change ‖b − a‖ / ‖a‖");
      case Column::Cosine:
        return tr("Cosine similarity ⟨a, b⟩ / (‖a‖ ‖b‖)");
      case Column::MaxAbs:
        return tr("Largest |b − a|");
      case Column::MeanAbs:
        return tr("Mean |b − a|");
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name:
      return tr("Tensor");
    case Column::Status:
      return tr("Status");
    case Column::Layer:
      return tr("Layer");
    case Column::Shape:
      return tr("Shape");
    case Column::DType:
      return tr("DType");
    case Column::RelL2:
      return tr("Rel. change");
    case Column::Cosine:
      return tr("Cosine");
    case Column::MaxAbs:
      return tr("Max |Δ|");
    case Column::MeanAbs:
      return tr("Mean |Δ|");
    case Column::Note:
      return tr("Note");
    case Column::Count:
      break;
  }
  return {};
}

QVariant DiffModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !m_diff) return {};
  const Row& row = m_rows[size_t(index.row())];
  const Column column = Column(index.column());
  if (row.kind == Row::Kind::Tensor) return tensorData(m_diff->tensors[row.index], column, role);

  QString name, status, shape, dtype;
  switch (row.kind) {
    case Row::Kind::Added:
      name = fromStd(m_diff->added[row.index]);
      status = QStringLiteral("added");
      break;
    case Row::Kind::Removed:
      name = fromStd(m_diff->removed[row.index]);
      status = QStringLiteral("removed");
      break;
    case Row::Kind::Shape: {
      const ShapeChange& c = m_diff->changedShape[row.index];
      name = fromStd(c.name);
      status = QStringLiteral("shape");
      shape = shapeText(c.shapeA) + " → " + shapeText(c.shapeB);
      dtype = c.dtypeA == c.dtypeB ? fromStd(std::string(dtypeName(c.dtypeA)))
                                   : fromStd(std::string(dtypeName(c.dtypeA))) + " → " +
                                         fromStd(std::string(dtypeName(c.dtypeB)));
      break;
    }
    case Row::Kind::Tensor:
      break;
  }
  switch (role) {
    case Qt::DisplayRole:
      if (column == Column::Name) return name;
      if (column == Column::Status) return statusWord(status);
      if (column == Column::Layer) return layerText(classifyTensorName(name.toStdString()));
      if (column == Column::Shape) return shape;
      if (column == Column::DType) return dtype;
      return {};
    case Qt::ForegroundRole:
      return QBrush(status == "removed" ? QColor(0xc0, 0x30, 0x30) : QColor(0x20, 0x80, 0x30));
    case int(Role::Status):
      return status;
    case int(Role::Value):
      return std::numeric_limits<double>::quiet_NaN();
    case int(Role::SortKey):
      if (column == Column::Name || column == Column::Layer || column == Column::Status)
        return data(index, Qt::DisplayRole);
      // Structure rows carry no metric: they sort with the largest changes.
      return std::numeric_limits<double>::infinity();
    default:
      return {};
  }
}

QVariant DiffModel::tensorData(const TensorDiff& t, Column column, int role) const {
  const bool broken = !t.error.empty();
  const bool dtypeChanged = t.dtypeA != t.dtypeB;
  auto metric = [&](Column c) -> double {
    switch (c) {
      case Column::RelL2:
        return t.relL2;
      case Column::Cosine:
        return t.cosine;
      case Column::MaxAbs:
        return t.maxAbs;
      case Column::MeanAbs:
        return t.meanAbs;
      default:
        return std::numeric_limits<double>::quiet_NaN();
    }
  };
  const bool isMetric = column == Column::RelL2 || column == Column::Cosine ||
                        column == Column::MaxAbs || column == Column::MeanAbs;
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name:
          return fromStd(t.name);
        case Column::Status:
          return statusWord(tensorData(t, column, int(Role::Status)).toString());
        case Column::Layer:
          return layerText(t.layer);
        case Column::Shape:
          return shapeText(t.shape);
        case Column::DType:
          return dtypeChanged ? fromStd(std::string(dtypeName(t.dtypeA))) + " → " +
                                    fromStd(std::string(dtypeName(t.dtypeB)))
                              : fromStd(std::string(dtypeName(t.dtypeA)));
        case Column::Note: {
          QStringList notes;
          if (broken) notes << fromStd(t.error);
          if (!t.tiedTo.empty()) notes << tr("tied to %1").arg(fromStd(t.tiedTo));
          if (t.nanA + t.nanB) notes << tr("NaN: %1 in a, %2 in b").arg(t.nanA).arg(t.nanB);
          if (t.infA + t.infB) notes << tr("inf: %1 in a, %2 in b").arg(t.infA).arg(t.infB);
          return notes.join("; ");
        }
        default:
          return isMetric && !broken ? metricText(metric(column)) : QVariant();
      }
    case Qt::TextAlignmentRole:
      return isMetric ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::ForegroundRole:
      if (broken) return QBrush(QColor(0xc0, 0x30, 0x30));
      return {};
    case Qt::ToolTipRole:
      if (broken) return fromStd(t.error);
      return tr("‖a‖ = %1, ‖b‖ = %2, ‖b − a‖ = %3 over %4 elements")
          .arg(metricText(t.normA), metricText(t.normB), metricText(t.normDiff),
               groupedNumber(t.numel));
    case int(Role::Status):
      if (broken) return QStringLiteral("error");
      if (dtypeChanged) return QStringLiteral("dtype");
      return t.normDiff == 0 && t.finitePairs == t.numel ? QStringLiteral("same")
                                                         : QStringLiteral("changed");
    case int(Role::Value):
      return isMetric ? metric(column) : std::numeric_limits<double>::quiet_NaN();
    case int(Role::SortKey):
      if (isMetric)
        return broken ? QVariant(std::numeric_limits<double>::infinity())
                      : sortNumber(metric(column));
      return tensorData(t, column, Qt::DisplayRole);
    default:
      return {};
  }
}

}  // namespace ckpt
