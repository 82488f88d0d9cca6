#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <optional>
#include <vector>

#include "browser/pathscan.h"
#include "inspector/checkpointsummary.h"

class QTabWidget;
class QTreeView;

namespace ckpt {

class CheckpointListModel;
class CurvesView;
class SummaryWidget;

// The CkptScope window: the checkpoints found under the opened paths on the
// left; on the right, tabs with the selected one's summary and tensors
// ("Inspect") and the loss curves of every run found ("Curves"). Scanning,
// reading a file's metadata and reading the runs' metrics run on the global
// thread pool; the window only swaps their results in.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // What the window shows first (`ckptscope --view`): the runs overview,
  // the first checkpoint's summary (the default), or the curves.
  enum class View { Browse, Inspect, Curves };
  // "browse", "inspect", "curves"; nothing for other names.
  [[nodiscard]] static std::optional<View> viewFromName(const QString& name);

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Scans `paths` (directories and files) in the background and replaces
  // what the window shows; emits loaded() when the first checkpoint is shown.
  void openPaths(const QStringList& paths);
  // Selects the listed checkpoint whose file is `path`; false when it is not listed.
  bool selectPath(const QString& path);
  // Shows the view's tab. Browse also selects the first run rather than its
  // first checkpoint when a scan finishes.
  void setView(View view);

  [[nodiscard]] const QStringList& openedPaths() const { return m_paths; }
  [[nodiscard]] bool isScanning() const { return m_scanWatcher.isRunning(); }
  [[nodiscard]] CheckpointListModel* checkpointModel() const { return m_model; }
  [[nodiscard]] QTreeView* checkpointView() const { return m_tree; }
  [[nodiscard]] SummaryWidget* summaryWidget() const { return m_summary; }
  [[nodiscard]] CurvesView* curvesView() const { return m_curves; }
  [[nodiscard]] QTabWidget* tabs() const { return m_tabs; }

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
  void onCheckpointActivated(const QString& path);

  CheckpointListModel* m_model = nullptr;
  QTreeView* m_tree = nullptr;
  QTabWidget* m_tabs = nullptr;
  SummaryWidget* m_summary = nullptr;
  CurvesView* m_curves = nullptr;
  View m_view = View::Inspect;

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
