#pragma once

#include <QAbstractTableModel>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace ckpt {

class TensorData;

// A tensor's elements as a table, rows loaded on demand: the last dimension
// across (up to kMaxColumns; wider or 1-D tensors are one column of
// elements), every other index down. The row count is the whole tensor's,
// but only blocks of rows the view asks for are read, in the background, and
// at most kCachedBlocks of them are kept: a 38M-element tensor never
// becomes 38M doubles. A row not loaded yet shows "..." until blockLoaded.
class ValueTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kMaxColumns = 4096;
  static constexpr size_t kCachedBlocks = 64;
  enum class Role {
    Value = Qt::UserRole,  // double, or an invalid QVariant while the row loads
  };

  explicit ValueTableModel(QObject* parent = nullptr);
  ~ValueTableModel() override;

  // null clears the table.
  void setTensor(std::shared_ptr<const TensorData> data);
  [[nodiscard]] int blockRows() const { return m_blockRows; }
  // Row-major element index of a cell.
  [[nodiscard]] uint64_t elementIndex(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void blockLoaded(int firstRow, int lastRow);

 private:
  void request(int block) const;
  void store(uint64_t generation, int block, std::shared_ptr<const std::vector<double>> values);

  std::shared_ptr<const TensorData> m_data;
  std::vector<int64_t> m_shape;
  int m_rows = 0;
  int m_cols = 0;
  bool m_matrix = false;  // last dimension across
  int m_blockRows = 1;
  uint64_t m_generation = 0;
  // Loaded blocks and their age; blocks being read. Mutable: data() asks for them.
  mutable std::map<int, std::shared_ptr<const std::vector<double>>> m_cache;
  mutable std::deque<int> m_age;
  mutable std::set<int> m_pending;
};

}  // namespace ckpt
