#pragma once

#include "inspector/checkpointsummary.h"
#include "inspector/treemodel.h"

namespace ckpt {

// The model state as a hierarchy of dotted names with per-node parameter
// counts and bytes (tied weights counted once), shape and dtype per tensor.
class ParameterModel : public TreeModel<ParamNode> {
  Q_OBJECT

 public:
  enum class Column { Name, Parameters, Bytes, Shape, DType, Tied, Count };
  enum class Role {
    SortKey = Qt::UserRole,  // numbers for Parameters / Bytes, text otherwise
    FullName,                // "blocks.0.attn.q_proj.weight": what the search matches
    TensorIndex,             // leaves: int, -1 for inner nodes
  };

  explicit ParameterModel(QObject* parent = nullptr);

  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  // The node for a dotted name ("blocks.0.attn"); an invalid index when absent.
  [[nodiscard]] QModelIndex find(const QString& fullName) const;
};

}  // namespace ckpt
