#pragma once

#include <QMainWindow>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <optional>
#include <vector>

#include "backgroundjob.h"
#include "browser/pathscan.h"
#include "inspector/checkpointsummary.h"

class QDockWidget;
class QMenu;
class QPushButton;
class QScrollArea;
class QTabWidget;
class QTreeView;

namespace ckpt {

class BrowserPanel;
class CompareView;
class DriftView;
class GeneratePanel;
class TrainPanel;
class CheckpointListModel;
class CurvesView;
class RunWatcher;
class InspectorWidget;
struct RemoteSession;
namespace remote {
struct RemotePath;
}

// The CkptScope window: the experiments browser (a dock: runs, stage
// families and checkpoints under the opened paths, with a filter box); in
// the middle, tabs with the selected checkpoint ("Inspect") and the loss
// curves of every run found ("Curves"). Scanning, reading a file's metadata
// and reading the runs' metrics run on the global thread pool; the window
// only swaps their results in. Opened directories are watched: checkpoints
// appear, change and go as runs write them. Recent paths, the window's
// geometry and the dock layout live in QSettings.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // What the window shows first (`ckptscope --view`): the runs overview,
  // the first checkpoint's summary (the default), or the curves.
  enum class View { Browse, Inspect, Curves, Compare };
  // "browse", "inspect", "curves", "compare"; nothing for other names.
  [[nodiscard]] static std::optional<View> viewFromName(const QString& name);

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Scans `paths` (directories and files) in the background and replaces
  // what the window shows; emits loaded() when the first checkpoint is shown.
  // The paths go to the top of the recent list.
  void openPaths(const QStringList& paths);
  // Scans the opened paths again (F5). A remote location is scanned again
  // and its curves get what their files gained since (`metrics since`).
  void reload();
  // File > Open Remote...: the dialog, then openPaths() with its location.
  // A location on another machine ("ssh://[user@]host[:port]/path",
  // "host:/path"; mainwindow_remote.cpp) is read there by ckptscope-cli's
  // agent through ssh: its runs are listed as "host:run", its curves drawn.
  // A connection that fails says so (a message naming the host and what to
  // do) and leaves what was shown; F5 connects again.
  void chooseRemote();
  // What is shown is a remote location.
  [[nodiscard]] bool isRemote() const;
  // Cancel under the browser while a remote location is read (hidden otherwise).
  [[nodiscard]] QPushButton* remoteCancelButton() const { return m_remoteCancel; }
  // Console logs (or folders of them) read for the curves of every run
  // (File > Add Logs...); remembered for the paths opened now.
  void addLogs(const QStringList& logs);
  [[nodiscard]] const QStringList& extraLogs() const { return m_extraLogs; }
  // Compares two checkpoint files in the Compare tab (A is the older one).
  void compareCheckpoints(const QString& a, const QString& b);
  // The checkpoints selected in the browser, in the browser's order, each by
  // what opens it whole (inspectPathOf: a Megatron save's folder).
  [[nodiscard]] QStringList selectedCheckpoints() const;
  // Compare Selected (Ctrl+D): two selected checkpoints with each other, or
  // one with the checkpoint before it in its run. False (and a message in
  // the status bar) when the selection does not say what to compare.
  bool compareSelected();
  // Drift (Ctrl+Shift+D): the change between consecutive checkpoints of the
  // current run, or between the stages of the current family (each stage's
  // last checkpoint), in the Drift tab. False when there is no chain.
  bool showDrift();

  // The Train tab's one-click actions on the checkpoint selected in the
  // browser: continue its run, or fine-tune it into a new stage. False when
  // no single checkpoint is selected or the panel cannot start.
  bool resumeSelected();
  bool finetuneSelected();
  // Prune... on the current run (or the run of the current checkpoint): the
  // PruneDialog, then a rescan when files were moved. False when no run is current.
  bool pruneSelectedRun();
  // Export... on the current checkpoint: the ExportDialog, then the new file
  // selected in the browser. False when not exactly one checkpoint is selected.
  bool exportSelected();
  // Shows the Train tab.
  void showTrain();
  // Generate Text... (Ctrl+G): the Generate tab for the checkpoint selected
  // in the browser. False when not exactly one checkpoint is selected.
  bool generateSelected();

  // Window geometry and dock layout as last saved; false when there is none.
  // The size and docks of last time; false (and the default size, on this
  // screen) on a first start.
  bool restoreLayout();
  static constexpr QSize kDefaultSize{1280, 800};
  void saveLayout() const;
  // The recent list (newest first); each entry is the paths of one open.
  [[nodiscard]] static QList<QStringList> recentPaths();
  static void clearRecentPaths();
  // Selects the listed checkpoint whose file is `path`; false when it is not listed.
  bool selectPath(const QString& path);
  // Shows the view's tab. Browse also selects the first run rather than its
  // first checkpoint when a scan finishes.
  void setView(View view);

  [[nodiscard]] const QStringList& openedPaths() const { return m_paths; }
  [[nodiscard]] bool isScanning() const { return m_scan.isRunning(); }
  [[nodiscard]] CheckpointListModel* checkpointModel() const { return m_model; }
  // The browser's tree; it shows the filter proxy (browserPanel()->proxy()).
  [[nodiscard]] QTreeView* checkpointView() const;
  [[nodiscard]] BrowserPanel* browserPanel() const { return m_browser; }
  [[nodiscard]] RunWatcher* runWatcher() const { return m_watcher; }
  [[nodiscard]] InspectorWidget* inspector() const { return m_inspector; }
  [[nodiscard]] CurvesView* curvesView() const { return m_curves; }
  [[nodiscard]] CompareView* compareView() const { return m_compare; }
  [[nodiscard]] DriftView* driftView() const { return m_drift; }
  [[nodiscard]] TrainPanel* trainPanel() const { return m_train; }
  [[nodiscard]] GeneratePanel* generatePanel() const { return m_generate; }
  [[nodiscard]] QTabWidget* tabs() const { return m_tabs; }

 signals:
  void scanFinished();
  // The directory watcher changed the listed checkpoints.
  void checkpointsChanged();
  // A checkpoint's (or a run's) summary is on screen; `path` is its file or directory.
  void summaryShown(const QString& path);
  // After openPaths(): the scan is done and the initially selected
  // checkpoint's summary is shown (or there was nothing to select).
  void loaded();

 private:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

  void createMenus();
  void showBrowserMenu(const QPoint& pos);
  void compareWithFile();
  void compareOnOpen();
  void onRunStarted(const QString& outputDir);
  void fillRecentMenu();
  static void rememberPaths(const QStringList& paths);
  void onRunChanged(const BrowseGroup& run);
  void onRunRemoved(const QString& path);
  void refreshCurvesLater();
  // `handedOverUnreadable`: the unreadable checkpoints of the runs the
  // scan handed over early (the result holds those without checkpoints).
  void onScanFinished(std::vector<BrowseGroup> groups, const QString& error,
                      size_t handedOverUnreadable = 0);
  void onCurrentChanged(const QModelIndex& current);
  void onSummaryReady(const CheckpointSummary& summary);
  void showScanProgress(const JobProgress& progress);
  void showGroupSummary(const BrowseGroup& group);
  void finishLoading();
  void chooseDirectory();
  void chooseFiles();
  void chooseLogs();
  void refreshCurves();
  void onCheckpointActivated(const QString& path);
  // mainwindow_remote.cpp
  void setUpRemote();  // the session and the status bar's Cancel
  // Shows Cancel while a request to the host runs (a folder, a checkpoint, a tensor).
  void updateRemoteCancel();
  bool openRemote(const QString& location);
  void onRemoteFinished(JobOutcome outcome, std::optional<struct RemoteRefresh> result,
                        const QString& error);
  void showRemoteFailure(const QString& message);
  void showRemoteProgress(const JobProgress& progress);
  void cancelRemote();
  bool applyRemoteCurves();
  void showRemoteCheckpoint(const CheckpointEntry& checkpoint, const BrowseGroup& run);
  // Compare of checkpoints on a host, computed there (ui/remote/remotediff.h);
  // a pair on two machines is refused with a message. False: both are here.
  bool compareRemote(const QString& a, const QString& b);
  // Drift through a run or stages of a remote folder: each pair compared on
  // its host. False: the chain's files are here.
  bool driftRemote(const QString& title, const QStringList& files, const QStringList& labels);
  // A browser row's path as its ssh:// location when the folder is remote.
  [[nodiscard]] QString locatedPath(const QString& path) const;
  // mainwindow_follow.cpp: a remote location followed without F5 (`watch`).
  void setUpRemoteFollowing();
  void startRemoteFollowing();
  void leaveRemote();  // a local open: the watch stops
  void followRemote(const QStringList& paths, bool everything);
  void onRemoteFollowed(struct RemoteRefresh result, bool rows);
  // mainwindow_remote_train.cpp: Resume / Fine-tune of a remote checkpoint,
  // started on its host (detached), or submitted to SLURM there.
  void setUpRemoteTraining();
  void startRemoteTraining(const struct RemoteTrainStart& start);
  void submitRemoteTraining(const struct RemoteTrainStart& start, const QString& script);
  // The run started there, followed: its row and curves here (the folder
  // that holds it is opened when the one shown does not), its chart on the Train tab.
  void followRemoteTraining(const remote::RemotePath& at, const QString& runDir,
                            const QString& title, int64_t maxSteps, int64_t pid,
                            const QString& jobId);
  void showRemoteTrainingRun();  // the Train tab's chart from the Curves tab's run
  // Stop on the Train tab for a run on a host: the agent's `stop` asked,
  // then asked how it stands (nothing sent) each second until it has ended.
  // While a run is followed and not stopped it is asked every few seconds:
  // one that ends there by itself frees the Train tab's Start.
  void stopRemoteTraining(const QString& location, qint64 pid, const QString& jobId);
  void pollRemoteStop();

  CheckpointListModel* m_model = nullptr;
  BrowserPanel* m_browser = nullptr;
  QDockWidget* m_browserDock = nullptr;
  QMenu* m_recentMenu = nullptr;
  RunWatcher* m_watcher = nullptr;
  QTimer m_curvesRefresh;
  QTimer m_remoteStopPoll;   // how a run followed (or stopped) on its host stands
  bool m_layoutSet = false;  // restored from the settings, or sized on first show
  QTabWidget* m_tabs = nullptr;
  InspectorWidget* m_inspector = nullptr;
  CurvesView* m_curves = nullptr;
  CompareView* m_compare = nullptr;
  DriftView* m_drift = nullptr;
  TrainPanel* m_train = nullptr;
  GeneratePanel* m_generate = nullptr;
  QString m_keepSelection;     // the row (file or run directory) a reload selects again
  QString m_selectWhenListed;  // the last checkpoint of a run from the Train tab, until listed
  View m_view = View::Inspect;

  QStringList m_paths;
  QStringList m_extraLogs;
  BackgroundJob<std::vector<BrowseGroup>> m_scan{this};
  BackgroundJob<CheckpointSummary> m_summary{this};
  QString m_summaryPath;  // the file whose summary is being read
  bool m_summaryPending = false;
  bool m_loadPending = false;
  std::unique_ptr<RemoteSession> m_remote;
  QPushButton* m_remoteCancel = nullptr;
};

}  // namespace ckpt
