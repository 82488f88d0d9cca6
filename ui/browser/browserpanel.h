#pragma once

#include <QSortFilterProxyModel>
#include <QWidget>

class QAction;
class QLabel;
class QLineEdit;
class QProgressBar;
class QTreeView;

namespace ckpt {

class CheckpointListModel;

// The experiments browser: a filter box over the runs → checkpoints tree.
// The filter matches names (substring, or a regular expression when the
// ".*" button is on, case-insensitive); a matching run or family keeps all
// its rows, a matching checkpoint keeps its run. The tree shows the proxy:
// map indexes through proxy() to reach the model.
class BrowserPanel : public QWidget {
  Q_OBJECT

 public:
  explicit BrowserPanel(CheckpointListModel* model, QWidget* parent = nullptr);

  [[nodiscard]] QTreeView* view() const { return m_view; }
  [[nodiscard]] QSortFilterProxyModel* proxy() const { return m_proxy; }
  [[nodiscard]] QLineEdit* filterEdit() const { return m_filter; }
  [[nodiscard]] QAction* regexAction() const { return m_regex; }
  // Empty when the filter is fine; else why the regular expression is invalid.
  [[nodiscard]] QString filterError() const { return m_filterError; }
  // "13 checkpoints in 2 runs: 1.2 GB on disk", under the tree.
  [[nodiscard]] QLabel* totalsLabel() const { return m_totals; }

  // Wide enough for a run's file names and the numbers beside them.
  [[nodiscard]] QSize sizeHint() const override { return {600, 600}; }

  void setFilter(const QString& text, bool regex);
  // Scan progress under the tree; total 0 = unknown, done == total hides it.
  void showProgress(size_t done, size_t total);
  void hideProgress();

 private:
  void applyFilter();
  void updateTotals();

  CheckpointListModel* m_model = nullptr;
  QSortFilterProxyModel* m_proxy = nullptr;
  QTreeView* m_view = nullptr;
  QLineEdit* m_filter = nullptr;
  QAction* m_regex = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_totals = nullptr;
  QString m_filterError;
};

}  // namespace ckpt
