#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "inspector/checkpointsummary.h"

namespace ckpt {

// The tensors of one checkpoint, in file order.
class TensorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column { Name, DType, Shape, Elements, Bytes, Note, Count };
  enum class Role {
    SortKey = Qt::UserRole,  // numbers for Elements / Bytes, text otherwise
  };

  explicit TensorTableModel(QObject* parent = nullptr);

  void setRows(std::vector<TensorRow> rows);
  [[nodiscard]] const std::vector<TensorRow>& rows() const { return m_rows; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<TensorRow> m_rows;
};

}  // namespace ckpt
