#pragma once
// The Curves tab's runs table: one row per run (or per group when the chart
// is grouped); for the metric the chart shows its best (min or max by the
// metric's kind), step of the best, last value, points and the checkpoint
// nearest the best; then the hyperparameters that differ, as columns. The table
// itself is built by the core (ckpt::buildRunsTable, as `ckptscope-cli runs`
// builds it); this file shows it, with a filter box above it taking
// RunFilter's expressions. CurvesView builds the table and draws only the
// runs the filter keeps (curvestable.cpp).

#include <QAbstractTableModel>
#include <QString>
#include <QTimer>
#include <QWidget>

#include "ckpt/index/runs_table.h"

class QLabel;
class QLineEdit;
class QTableView;

namespace ckpt {

struct CurveRun;

// What the table needs of a run of the chart: each metric's summary (a few
// numbers, not its points) and its checkpoints.
[[nodiscard]] RunSummary summarizeCurveRun(const CurveRun& run);

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column { Name, Runs, Hparam, Points, Last, Best, BestStep, Checkpoint };
  enum class Role { Path = Qt::UserRole };  // a checkpoint cell's file, a run's directory

  explicit RunsTableModel(QObject* parent = nullptr);

  // Replaces the rows (a reset: the columns change with the runs shown).
  void setTable(RunsTable table, bool grouped);
  // The same rows in another order (ckpt::sortRunsTable's `sort`).
  void sortRows(const QString& sort);
  [[nodiscard]] const RunsTable& table() const { return m_table; }
  [[nodiscard]] bool grouped() const { return m_grouped; }
  [[nodiscard]] const RunsTableRow& row(int r) const { return m_table.rows[size_t(r)]; }

  [[nodiscard]] Column kind(int column) const;
  // What buildRunsTable sorts a column by ("name", "best", "learning_rate", ...).
  [[nodiscard]] QString sortKey(int column) const;
  // The column sorted by `key` (without its '-'); -1 when there is none.
  [[nodiscard]] int columnOf(const QString& key) const;
  [[nodiscard]] int firstHparamColumn() const;

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation,
                                    int role) const override;

 private:
  RunsTable m_table;
  bool m_grouped = false;
};

class RunsTablePanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunsTablePanel(QWidget* parent = nullptr);

  // The rows to show; `filterError` (empty when the filter applied) is shown
  // in red under the box, the rows then being every run.
  void setTable(RunsTable table, bool grouped, const QString& filterError = {});
  // The filter and the sort the table is built with: "" (by name), "best",
  // "-best" (descending), as RunsTableOptions takes them. Both are
  // remembered (QSettings) when the person changes them.
  [[nodiscard]] QString filterText() const { return m_applied; }
  [[nodiscard]] QString sortKey() const { return m_sort; }
  // Selects (and scrolls to) a row, as hovering its line does; -1: none.
  void setHighlightedRow(int row);

  [[nodiscard]] RunsTableModel* model() const { return m_model; }
  [[nodiscard]] QTableView* view() const { return m_view; }
  [[nodiscard]] QLineEdit* filterBox() const { return m_filter; }
  [[nodiscard]] QLabel* errorLabel() const { return m_error; }

 signals:
  // The filter changed: the table is to be built again.
  void filterChanged();
  // The rows were sorted again (by a header click): their order changed.
  void sorted();
  // A row's checkpoint cell was clicked; `path` is the checkpoint file.
  void checkpointClicked(const QString& path);
  // The mouse is over a row; -1: over none.
  void rowHovered(int row);

 private:
  void applyFilter();
  void onSortIndicatorChanged(int section, Qt::SortOrder order);
  void showSortIndicator();
  bool eventFilter(QObject* watched, QEvent* event) override;

  RunsTableModel* m_model = nullptr;
  QLineEdit* m_filter = nullptr;
  QLabel* m_count = nullptr;
  QLabel* m_error = nullptr;
  QTableView* m_view = nullptr;
  QTimer m_filterTimer;  // typing applies the filter once the keys pause
  QString m_applied;
  QString m_sort;
  int m_hoveredRow = -1;
};

}  // namespace ckpt
