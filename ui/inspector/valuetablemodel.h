#pragma once

#include <QAbstractTableModel>
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "backgroundjob.h"

namespace ckpt {

class TensorData;

// A tensor's elements as a table, rows loaded on demand: the last dimension
// across (up to kMaxColumns; wider or 1-D tensors are one column of
// elements), every other index down. The table is a window of at most
// kWindowRows rows starting at firstRow() (a header view keeps memory per
// row, so 38M rows would cost it hundreds of MB); the vertical header shows
// the true row index. Only blocks of rows the view asks for are read, in the
// background, and at most kCachedBlocks of them are kept: a 38M-element
// tensor never becomes 38M doubles. A row not loaded yet shows "..." until
// blockLoaded.
class ValueTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kMaxColumns = 4096;
  static constexpr size_t kCachedBlocks = 64;
  static constexpr int kWindowRows = 100000;  // the default window
  enum class Role {
    Value = Qt::UserRole,  // double, or an invalid QVariant while the row loads
  };

  explicit ValueTableModel(QObject* parent = nullptr);
  ~ValueTableModel() override;

  // Reads `count` elements from element `first` (row-major) into `out`;
  // returns how many there were. Called on pool threads; may throw.
  using ReadFn = std::function<size_t(uint64_t first, size_t count, double* out)>;

  // null clears the table.
  void setTensor(std::shared_ptr<const TensorData> data);
  // A tensor whose elements `read` gives (one on another machine: the
  // agent's `slice`, at most a block of 64K elements a call); no `read` clears.
  void setSource(std::vector<int64_t> shape, ReadFn read);
  [[nodiscard]] int blockRows() const { return m_blockRows; }
  // Rows of the whole tensor's table and the first one the window shows.
  [[nodiscard]] int64_t totalRows() const { return m_totalRows; }
  [[nodiscard]] int64_t firstRow() const { return m_first; }
  // Moves the window so that tensor row `row` is in it; returns its row in the model.
  int showRow(int64_t row);
  // Window size (tests use small ones); takes effect with the next setTensor.
  void setWindowRows(int rows) { m_windowRows = std::max(1, rows); }
  // Row-major element index of a cell.
  [[nodiscard]] uint64_t elementIndex(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 signals:
  void blockLoaded(int firstRow, int lastRow);

 private:
  void request(int64_t block) const;
  using Block = std::shared_ptr<const std::vector<double>>;
  void store(int64_t block, Block values);

  ReadFn m_read;
  std::vector<int64_t> m_shape;
  int64_t m_totalRows = 0;
  int64_t m_first = 0;
  int m_rows = 0;  // in the window
  int m_cols = 0;
  bool m_matrix = false;  // last dimension across
  int m_blockRows = 1;
  int m_windowRows = kWindowRows;
  // Loaded blocks and their age; blocks being read (a new tensor drops
  // them). Mutable: data() asks for them. Keyed by block of the whole table
  // (row / m_blockRows).
  mutable std::map<int64_t, Block> m_cache;
  mutable std::deque<int64_t> m_age;
  mutable BackgroundJobs<int64_t, Block> m_reads{this};
};

}  // namespace ckpt
