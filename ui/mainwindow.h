#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <vector>

#include "browser/pathscan.h"
#include "inspector/checkpointsummary.h"

class QTreeView;

namespace ckpt {

class CheckpointListModel;
class SummaryWidget;

// The first CkptScope window: the checkpoints found under the opened paths
// on the left, the selected one's summary and tensors on the right. Scanning
// and reading a file's metadata run on the global thread pool; the window
// only swaps their results in.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Scans `paths` (directories and files) in the background and replaces
  // what the window shows; emits loaded() when the first checkpoint is shown.
  void openPaths(const QStringList& paths);
  // Selects the listed checkpoint whose file is `path`; false when it is not listed.
  bool selectPath(const QString& path);

  [[nodiscard]] const QStringList& openedPaths() const { return m_paths; }
  [[nodiscard]] bool isScanning() const { return m_scanWatcher.isRunning(); }
  [[nodiscard]] CheckpointListModel* checkpointModel() const { return m_model; }
  [[nodiscard]] QTreeView* checkpointView() const { return m_tree; }
  [[nodiscard]] SummaryWidget* summaryWidget() const { return m_summary; }

 signals:
  void scanFinished();
  // A checkpoint's (or a run's) summary is on screen; `path` is its file or directory.
  void summaryShown(const QString& path);
  // After openPaths(): the scan is done and the initially selected
  // checkpoint's summary is shown (or there was nothing to select).
  void loaded();

 private:
  // Shared with the scan worker: it writes progress, the window reads it on
  // a timer and sets `stop` (no signal crosses back into a destroyed window).
  struct ScanState;

  void createMenus();
  void onScanFinished();
  void onCurrentChanged(const QModelIndex& current);
  void onSummaryReady();
  void showScanProgress();
  void showGroupSummary(const BrowseGroup& group);
  void finishLoading();
  void chooseDirectory();
  void chooseFiles();

  CheckpointListModel* m_model = nullptr;
  QTreeView* m_tree = nullptr;
  SummaryWidget* m_summary = nullptr;

  QStringList m_paths;
  std::shared_ptr<ScanState> m_scanState;
  QFutureWatcher<std::vector<BrowseGroup>> m_scanWatcher;
  QTimer m_progressTimer;
  QFutureWatcher<CheckpointSummary> m_summaryWatcher;
  QString m_summaryPath;  // the file whose summary is being read
  bool m_summaryPending = false;
  bool m_loadPending = false;
};

}  // namespace ckpt
