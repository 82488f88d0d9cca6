#include "inspector/parametermodel.h"

#include <QBrush>
#include <QPalette>

#include "textformat.h"

namespace ckpt {
namespace {

bool isNumeric(ParameterModel::Column c) {
  return c == ParameterModel::Column::Parameters || c == ParameterModel::Column::Bytes;
}

}  // namespace

ParameterModel::ParameterModel(QObject* parent) : TreeModel<ParamNode>(parent) {}

int ParameterModel::columnCount(const QModelIndex& parent) const {
  Q_UNUSED(parent);
  return int(Column::Count);
}

QVariant ParameterModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(isNumeric(Column(section)) ? Qt::AlignRight | Qt::AlignVCenter
                                                          : Qt::AlignLeft | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name:
      return tr("Name");
    case Column::Parameters:
      return tr("Parameters");
    case Column::Bytes:
      return tr("Bytes");
    case Column::Shape:
      return tr("Shape");
    case Column::DType:
      return tr("DType");
    case Column::Tied:
      return tr("Tied to");
    case Column::Count:
      break;
  }
  return {};
}

QVariant ParameterModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const ParamNode* n = node(index);
  const Column column = Column(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name:
          return n->name;
        case Column::Parameters:
          return groupedNumber(n->parameters);
        case Column::Bytes:
          return sizeText(n->bytes);
        case Column::Shape:
          return n->shape;
        case Column::DType:
          return n->dtype;
        case Column::Tied:
          return n->tiedTo;
        case Column::Count:
          break;
      }
      return {};
    case Qt::ToolTipRole: {
      QString t = n->fullName;
      if (!n->tiedTo.isEmpty())
        t += "\n" + tr("shares its bytes with %1 (counted once)").arg(n->tiedTo);
      if (column == Column::Bytes) t += "\n" + tr("%1 bytes").arg(groupedNumber(n->bytes));
      return t;
    }
    case Qt::TextAlignmentRole:
      if (!isNumeric(column)) return {};
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (!n->tiedTo.isEmpty() && column != Column::Name)
        return QBrush(QPalette().color(QPalette::PlaceholderText));
      return {};
    case int(Role::SortKey):
      if (column == Column::Parameters) return QVariant(quint64(n->parameters));
      if (column == Column::Bytes) return QVariant(quint64(n->bytes));
      return data(index, Qt::DisplayRole);
    case int(Role::FullName):
      return n->fullName;
    case int(Role::TensorIndex):
      return n->tensor;
    default:
      return {};
  }
}

QModelIndex ParameterModel::find(const QString& fullName) const {
  const ParamNode* n = root();
  if (!n) return {};
  for (const QString& part : fullName.split('.')) {
    const ParamNode* next = nullptr;
    for (const ParamNode& c : n->children)
      if (c.name == part) next = &c;
    if (!next) return {};
    n = next;
  }
  return indexOf(n);
}

}  // namespace ckpt
