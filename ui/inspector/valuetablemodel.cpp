#include "inspector/valuetablemodel.h"

#include <algorithm>
#include <limits>

#include "ckpt/format/tensor_data.h"
#include "inspector/optimizermodel.h"

namespace ckpt {
namespace {

// Doubles per block: 64K (512 KiB) whatever the width.
constexpr int64_t kBlockElements = 65536;

}  // namespace

ValueTableModel::ValueTableModel(QObject* parent) : QAbstractTableModel(parent) {}

ValueTableModel::~ValueTableModel() = default;

void ValueTableModel::setTensor(std::shared_ptr<const TensorData> data) {
  if (!data) return setSource({}, {});
  std::vector<int64_t> shape = data->info().shape.vec();
  setSource(std::move(shape), [data](uint64_t first, size_t count, double* out) {
    return data->read(first, count, out);
  });
}

void ValueTableModel::setSource(std::vector<int64_t> shape, ReadFn read) {
  beginResetModel();
  m_reads.dropAll();  // blocks still being read for the previous tensor
  m_read = std::move(read);
  m_cache.clear();
  m_age.clear();
  m_rows = m_cols = 0;
  m_totalRows = m_first = 0;
  m_shape.clear();
  if (m_read) {
    m_shape = std::move(shape);
    uint64_t n = 1;
    for (const int64_t d : m_shape) n *= uint64_t(std::max<int64_t>(d, 0));
    m_matrix = m_shape.size() >= 2 && m_shape.back() > 0 && m_shape.back() <= kMaxColumns;
    const uint64_t cols = m_matrix ? uint64_t(m_shape.back()) : 1;
    m_cols = n ? int(cols) : 0;
    m_totalRows = n ? int64_t(n / cols) : 0;
    m_rows = int(std::min<int64_t>(m_totalRows, m_windowRows));
    m_blockRows = int(std::clamp<int64_t>(kBlockElements / int64_t(cols), 1, 4096));
  }
  endResetModel();
}

int ValueTableModel::showRow(int64_t row) {
  row = std::clamp<int64_t>(row, 0, std::max<int64_t>(0, m_totalRows - 1));
  if (row >= m_first && row < m_first + m_rows) return int(row - m_first);
  beginResetModel();
  // The row a quarter down the window, the window on block boundaries.
  m_first = std::max<int64_t>(0, row - m_windowRows / 4);
  m_rows = int(std::min<int64_t>(m_totalRows - m_first, m_windowRows));
  endResetModel();
  return int(row - m_first);
}

uint64_t ValueTableModel::elementIndex(int row, int column) const {
  return uint64_t(m_first + row) * uint64_t(std::max(m_cols, 1)) + uint64_t(column);
}

int ValueTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : m_rows;
}

int ValueTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : m_cols;
}

QVariant ValueTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Horizontal) return m_matrix ? QString::number(section) : tr("Value");
  int64_t r = m_first + section;
  if (!m_matrix || m_shape.size() <= 2) return QString::number(r);
  // [i, j] over the leading dimensions of a 3-D or wider tensor.
  QStringList idx;
  for (size_t d = m_shape.size() - 1; d-- > 0;) {
    idx.prepend(QString::number(r % m_shape[d]));
    r /= m_shape[d];
  }
  return "[" + idx.join(", ") + "]";
}

QVariant ValueTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  if (role != Qt::DisplayRole && role != int(Role::Value) && role != Qt::TextAlignmentRole)
    return {};
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  const int64_t row = m_first + index.row();
  const int64_t block = row / m_blockRows;
  const auto it = m_cache.find(block);
  if (it == m_cache.end()) {
    request(block);
    return role == Qt::DisplayRole ? QVariant(QStringLiteral("\u2026")) : QVariant();
  }
  const size_t at = size_t(row - block * m_blockRows) * size_t(m_cols) + size_t(index.column());
  if (at >= it->second->size()) return {};
  const double v = (*it->second)[at];
  if (role == int(Role::Value)) return v;
  return statText(v);
}

void ValueTableModel::request(int64_t block) const {
  if (!m_read || m_reads.isRunning(block)) return;
  const uint64_t first = uint64_t(block) * uint64_t(m_blockRows) * uint64_t(m_cols);
  const size_t count = size_t(m_blockRows) * size_t(m_cols);
  auto* self = const_cast<ValueTableModel*>(this);
  // The bytes are read on a pool thread, never here. A block that cannot be
  // read is kept empty (its cells blank), not asked for again and again.
  m_reads.start(
      block,
      [read = m_read, first, count](JobProgress&) {
        auto v = std::make_shared<std::vector<double>>(count);
        v->resize(read(first, count, v->data()));
        return Block(std::move(v));
      },
      [self, block](JobOutcome, std::optional<Block> values, const QString&) {
        self->store(block,
                    values ? std::move(*values) : std::make_shared<const std::vector<double>>());
      });
}

void ValueTableModel::store(int64_t block, Block values) {
  m_cache[block] = std::move(values);
  m_age.push_back(block);
  while (m_age.size() > kCachedBlocks) {
    m_cache.erase(m_age.front());
    m_age.pop_front();
  }
  // Rows of the window the block covers (none when the window moved on).
  const int first = int(std::max<int64_t>(0, block * m_blockRows - m_first));
  const int last = int(std::min<int64_t>(m_rows, block * m_blockRows + m_blockRows - m_first)) - 1;
  if (first > last) return;
  emit dataChanged(index(first, 0), index(last, m_cols - 1));
  emit blockLoaded(first, last);
}

}  // namespace ckpt
