#include "inspector/metadatamodel.h"

#include <QBrush>
#include <QPalette>

namespace ckpt {

MetadataModel::MetadataModel(QObject* parent) : TreeModel<MetaNode>(parent) {}

int MetadataModel::columnCount(const QModelIndex& parent) const {
  Q_UNUSED(parent);
  return int(Column::Count);
}

QVariant MetadataModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Key:
      return tr("Key");
    case Column::Type:
      return tr("Type");
    case Column::Value:
      return tr("Value");
    case Column::Count:
      break;
  }
  return {};
}

QVariant MetadataModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const MetaNode* n = node(index);
  switch (role) {
    case Qt::DisplayRole:
      switch (Column(index.column())) {
        case Column::Key:
          return n->key;
        case Column::Type:
          return n->type;
        case Column::Value:
          return n->value;
        case Column::Count:
          break;
      }
      return {};
    case Qt::ToolTipRole:
      if (n->tensor >= 0) return tr("Tensor %1: select it to see its statistics").arg(n->tensor);
      return n->value;
    case Qt::ForegroundRole:
      // Types dimmed, as the summary dims its labels.
      if (Column(index.column()) == Column::Type)
        return QBrush(QPalette().color(QPalette::PlaceholderText));
      return {};
    case int(Role::TensorIndex):
      return n->tensor;
    default:
      return {};
  }
}

}  // namespace ckpt
