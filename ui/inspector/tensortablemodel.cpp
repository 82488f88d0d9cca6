#include "inspector/tensortablemodel.h"

#include <QBrush>

#include "textformat.h"

namespace ckpt {
namespace {

bool isNumeric(TensorTableModel::Column c) {
  return c == TensorTableModel::Column::Elements || c == TensorTableModel::Column::Bytes;
}

}  // namespace

TensorTableModel::TensorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TensorTableModel::setRows(std::vector<TensorRow> rows) {
  beginResetModel();
  m_rows = std::move(rows);
  endResetModel();
}

int TensorTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int TensorTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(Column::Count);
}

QVariant TensorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(isNumeric(Column(section)) ? Qt::AlignRight | Qt::AlignVCenter
                                                          : Qt::AlignLeft | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name:
      return tr("Name");
    case Column::DType:
      return tr("DType");
    case Column::Shape:
      return tr("Shape");
    case Column::Elements:
      return tr("Elements");
    case Column::Bytes:
      return tr("Bytes");
    case Column::Note:
      return tr("Note");
    case Column::Count:
      break;
  }
  return {};
}

QVariant TensorTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const TensorRow& r = m_rows[size_t(index.row())];
  const Column column = Column(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name:
          return r.name;
        case Column::DType:
          return r.dtype;
        case Column::Shape:
          return r.shape;
        case Column::Elements:
          return groupedNumber(r.elements);
        case Column::Bytes:
          return sizeText(r.bytes);
        case Column::Note:
          return r.note;
        case Column::Count:
          break;
      }
      return {};
    case Qt::ToolTipRole:
      if (column == Column::Bytes) return tr("%1 bytes").arg(groupedNumber(r.bytes));
      return r.note.isEmpty() ? r.name : r.name + "\n" + r.note;
    case Qt::TextAlignmentRole:
      if (!isNumeric(column)) return {};
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      return r.broken ? QVariant(QBrush(Qt::darkRed)) : QVariant();
    case int(Role::SortKey):
      if (column == Column::Elements) return QVariant(quint64(r.elements));
      if (column == Column::Bytes) return QVariant(quint64(r.bytes));
      return data(index, Qt::DisplayRole);
    default:
      return {};
  }
}

}  // namespace ckpt
