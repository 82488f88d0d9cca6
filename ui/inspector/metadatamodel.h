#pragma once

#include "inspector/checkpointsummary.h"
#include "inspector/treemodel.h"

namespace ckpt {

// The whole value tree of a checkpoint: key, type, value.
class MetadataModel : public TreeModel<MetaNode> {
  Q_OBJECT

 public:
  enum class Column { Key, Type, Value, Count };
  enum class Role {
    TensorIndex = Qt::UserRole,  // int: a tensor node's index, -1 otherwise
  };

  explicit MetadataModel(QObject* parent = nullptr);

  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
};

}  // namespace ckpt
