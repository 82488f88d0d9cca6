#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <vector>

#include "ckpt/analysis/diff.h"

namespace ckpt {

// The Compare view's table: one row per tensor name of either checkpoint.
// Structure first (added, removed, changed in shape or dtype), then every
// tensor compared, with its relative change, cosine similarity and largest
// and mean absolute difference. Sorting uses Role::SortKey (numbers as
// numbers, NaN last); the view filters by name.
class DiffModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column {
    Name,
    Status,
    Layer,
    Shape,
    DType,
    RelL2,
    Cosine,
    MaxAbs,
    MeanAbs,
    Note,
    Count
  };
  enum class Role {
    SortKey = Qt::UserRole,
    Status,  // QString, the same in every language: "same", "changed", "added", "removed",
             // "shape", "dtype", "error" (the Status column shows them translated)
    Value,   // double for the metric columns (NaN when not finite or absent)
  };

  explicit DiffModel(QObject* parent = nullptr);

  void setDiff(std::shared_ptr<const CheckpointDiff> diff);
  void clear() { setDiff(nullptr); }
  [[nodiscard]] const CheckpointDiff* diff() const { return m_diff.get(); }
  // The compared tensor behind a row; nullptr for structure rows.
  [[nodiscard]] const TensorDiff* tensor(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    enum class Kind { Added, Removed, Shape, Tensor } kind;
    size_t index;  // into added / removed / changedShape / tensors
  };

  QVariant tensorData(const TensorDiff& t, Column column, int role) const;

  std::shared_ptr<const CheckpointDiff> m_diff;
  std::vector<Row> m_rows;
};

// "1.23e-04", "0.9999", "—" for NaN: metrics as the table shows them.
[[nodiscard]] QString metricText(double v);

}  // namespace ckpt
