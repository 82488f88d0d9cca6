#pragma once

#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "ckpt/analysis/tensor_stats.h"
#include "inspector/checkpointsummary.h"

namespace ckpt {

// Adam state per parameter, by name: step, and statistics of exp_avg and
// exp_avg_sq once a background job has computed them (setStats).
class OptimizerModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column {
    Name,
    Index,
    Step,
    Shape,
    AvgNorm,
    AvgMean,
    AvgStd,
    SqNorm,
    SqMean,
    SqStd,
    Note,
    Count
  };
  enum class Role {
    SortKey = Qt::UserRole,  // numbers where the column is numeric
    ExpAvgTensor,            // int tensor indices, -1 when absent
    ExpAvgSqTensor,
  };
  struct Stats {
    std::optional<TensorStats> expAvg, expAvgSq;
  };

  explicit OptimizerModel(QObject* parent = nullptr);

  void setRows(std::vector<OptimizerRow> rows);
  // One entry per row, in row order; an empty vector clears the numbers.
  void setStats(std::vector<Stats> stats);
  [[nodiscard]] const std::vector<OptimizerRow>& rows() const { return m_rows; }
  [[nodiscard]] const std::vector<Stats>& stats() const { return m_stats; }
  // Whether a statistics column reads exp_avg_sq (else exp_avg).
  [[nodiscard]] static bool isSquareColumn(int column);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  [[nodiscard]] std::optional<double> number(int row, Column c) const;
  std::vector<OptimizerRow> m_rows;
  std::vector<Stats> m_stats;
};

// "0.0123457", "-1.5e-08": six significant digits, as the stats panel shows them.
[[nodiscard]] QString statText(double v);

}  // namespace ckpt
