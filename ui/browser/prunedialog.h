#pragma once

#include <QDialog>
#include <vector>

#include "ckpt/index/prune.h"
#include "ckpt/index/run_plan.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTreeWidget;

namespace ckpt {

// Prune... on a run: the rules (keep the best by a metric, the last N, every
// K-th step; stage finals, the newest and files that are not step
// checkpoints always stay), the plan they make listed file by file with why
// each stays, what goes and how much that frees, and "Move N to Trash", which
// moves exactly the listed files to the desktop trash (or the run's .trash/
// on another filesystem). The rules are remembered (QSettings).
class PruneDialog : public QDialog {
  Q_OBJECT

 public:
  explicit PruneDialog(RunEntry run, QWidget* parent = nullptr);

  [[nodiscard]] const PrunePlan& plan() const { return m_plan; }
  // Where each file went, once moved.
  [[nodiscard]] const std::vector<TrashedFile>& trashed() const { return m_trashed; }

  [[nodiscard]] QComboBox* bestBox() const { return m_best; }
  [[nodiscard]] QSpinBox* lastBox() const { return m_last; }
  [[nodiscard]] QSpinBox* everyBox() const { return m_every; }
  [[nodiscard]] QTreeWidget* fileList() const { return m_files; }
  [[nodiscard]] QLabel* summaryLabel() const { return m_summary; }
  [[nodiscard]] QPushButton* trashButton() const { return m_trash; }

 private:
  void replan();
  void moveToTrash();

  RunEntry m_run;
  PrunePlan m_plan;
  std::vector<TrashedFile> m_trashed;
  QComboBox* m_best = nullptr;
  QSpinBox* m_last = nullptr;
  QSpinBox* m_every = nullptr;
  QTreeWidget* m_files = nullptr;
  QLabel* m_summary = nullptr;
  QPushButton* m_trash = nullptr;
};

}  // namespace ckpt
