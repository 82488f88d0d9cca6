#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QKeySequence>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSet>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextDocumentFragment>
#include <QTreeView>
#include <QUrl>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/runsummary.h"
#include "browser/runwatcher.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/run_plan.h"
#include "compare/compareview.h"
#include "compare/driftchain.h"
#include "compare/driftview.h"
#include "curves/curvesview.h"
#include "generate/generatepanel.h"
#include "inspector/inspectorwidget.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"
#include "training/trainpanel.h"

namespace ckpt {

namespace {

// The file dialogs' filter: checkpoint files, and a sharded checkpoint's
// index (model.safetensors.index.json), which opens it whole.
QString checkpointFilter() {
  return MainWindow::tr(
      "Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors *.index.json);;All files (*)");
}

// The curves view takes runs as the index describes them: each scanned run,
// and files opened directly grouped by their directory (whose metrics.jsonl
// and logs then count too).
// Each run knows the opened directory it lies under (its `root`): console
// logs are looked for in logs/ folders of its ancestors up to there.
// (The groups are the model's copy: their checkpoints are moved on.)
std::vector<RunEntry> curveRuns(std::vector<BrowseGroup> groups, const QStringList& opened) {
  QStringList folders;  // the opened folders, asked once (not once a run)
  for (const QString& p : opened)
    if (QFileInfo(p).isDir()) folders << QDir::cleanPath(QFileInfo(p).absoluteFilePath());
  auto rootOf = [&folders](const QString& dir) {
    const QString clean = QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
    for (const QString& o : folders)
      if (clean == o || clean.startsWith(o + '/')) return pathToStd(o);
    return std::string();
  };
  std::vector<RunEntry> runs;
  std::map<QString, size_t> byDir;
  auto entry = [&](const QString& name, const QString& path) {
    RunEntry r;
    r.name = pathToStd(name);
    r.path = pathToStd(path);
    r.root = rootOf(path);
    return r;
  };
  for (BrowseGroup& g : groups) {
    if (!g.error.isEmpty()) continue;
    if (g.kind == BrowseGroup::Kind::Run) {
      runs.push_back(entry(g.name, g.path));
      runs.back().checkpoints = std::move(g.checkpoints);
      continue;
    }
    for (const CheckpointEntry& c : g.checkpoints) {
      const QString dir = QFileInfo(pathFromStd(c.path)).absolutePath();
      auto [it, added] = byDir.emplace(dir, runs.size());
      if (added) runs.push_back(entry(QFileInfo(dir).fileName(), dir));
      runs[it->second].checkpoints.push_back(c);
    }
  }
  return runs;
}

// Logs added by hand (File > Add Logs...) are remembered per opened path set.
QString logsKey(const QStringList& opened) {
  QStringList clean;
  for (const QString& p : opened) clean << QDir::cleanPath(QFileInfo(p).absoluteFilePath());
  return QStringLiteral("extraLogs/") +
         QString::fromLatin1(clean.join('\n').toUtf8().toBase64(QByteArray::Base64UrlEncoding));
}

}  // namespace

std::optional<MainWindow::View> MainWindow::viewFromName(const QString& name) {
  if (name == QLatin1String("browse")) return View::Browse;
  if (name == QLatin1String("inspect")) return View::Inspect;
  if (name == QLatin1String("curves")) return View::Curves;
  if (name == QLatin1String("compare")) return View::Compare;
  return std::nullopt;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("CkptScope"));
  setAcceptDrops(true);

  m_model = new CheckpointListModel(this);
  m_browser = new BrowserPanel(m_model, this);
  m_browserDock = new QDockWidget(tr("Experiments"), this);
  m_browserDock->setObjectName(QStringLiteral("experimentsDock"));  // saveState() needs names
  m_browserDock->setWidget(m_browser);
  // Closable: View > Experiments (and Ctrl+F) bring it back; without it
  // that menu entry was greyed out and did nothing.
  m_browserDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                             QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::LeftDockWidgetArea, m_browserDock);

  m_inspector = new InspectorWidget(this);
  m_curves = new CurvesView(this);
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(m_inspector, tr("Inspect"));
  m_tabs->addTab(m_curves, tr("Curves"));
  m_compare = new CompareView(this);
  m_tabs->addTab(m_compare, tr("Compare"));
  m_drift = new DriftView(this);
  m_tabs->addTab(m_drift, tr("Drift"));
  m_train = new TrainPanel(this);  // loads its LibTorch plugin when first shown, not now
  // The panel fits itself to the width it gets (form beside or above the
  // run view, two columns or one): no horizontal scrolling.
  m_tabs->addTab(m_train, tr("Train"));
  // Text from the selected checkpoint's model, through the same plugin.
  m_generate = new GeneratePanel(this);
  m_tabs->addTab(m_generate, tr("Generate"));
  setCentralWidget(m_tabs);

  m_watcher = new RunWatcher(this);
  createMenus();
  statusBar()->showMessage(
      tr("Open a directory of checkpoints (File > Open Directory, or drop it here)"));
  m_inspector->showMessage(
      tr("Nothing open yet"),
      tr("<p>Open a directory of checkpoints with <b>File &gt; Open Directory...</b> (Ctrl+O), "
         "single files with "
         "<b>File &gt; Open Files...</b> (Ctrl+Shift+O), or drop them on this window; a folder "
         "on another machine, over ssh, with <b>File &gt; Open Remote...</b> (Ctrl+Alt+O).</p>"
         "<p>Runs appear in the Experiments list on the left, grouped by directory; their curves "
         "in the Curves "
         "tab. Select two checkpoints (Ctrl+click) and press Ctrl+D to compare them.</p>"));

  connect(checkpointView()->selectionModel(), &QItemSelectionModel::currentChanged, this,
          &MainWindow::onCurrentChanged);
  // Several checkpoints can be selected (Ctrl/Shift+click) to compare them.
  checkpointView()->setSelectionMode(QAbstractItemView::ExtendedSelection);
  checkpointView()->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(checkpointView(), &QWidget::customContextMenuRequested, this,
          &MainWindow::showBrowserMenu);
  connect(m_curves, &CurvesView::checkpointActivated, this, &MainWindow::onCheckpointActivated);
  // The status bar says what is happening now, not what was asked last.
  connect(m_compare, &CompareView::finished, this,
          [this] { statusBar()->showMessage(m_compare->summaryLine()); });
  connect(m_drift, &DriftView::finished, this, [this] {
    statusBar()->showMessage(QTextDocumentFragment::fromHtml(m_drift->statusText()).toPlainText());
  });
  connect(m_watcher, &RunWatcher::runChanged, this, &MainWindow::onRunChanged);
  connect(m_watcher, &RunWatcher::runRemoved, this, &MainWindow::onRunRemoved);
  connect(m_train, &TrainPanel::runStarted, this, &MainWindow::onRunStarted);
  connect(m_train, &TrainPanel::checkpointWritten, this, [this](const QString& path) {
    statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  });
  connect(m_train, &TrainPanel::runFinished, this,
          [this](const QString&, const QString& last, bool) {
            // Select what the run wrote last, once the watcher has listed it.
            if (!last.isEmpty() && !selectPath(last)) m_selectWhenListed = last;
          });
  // New checkpoints re-read the curves' sources, at most once a second.
  m_curvesRefresh.setSingleShot(true);
  m_curvesRefresh.setInterval(1000);
  connect(&m_curvesRefresh, &QTimer::timeout, this, &MainWindow::refreshCurves);

  setUpRemote();
  setUpRemoteTraining();
}

MainWindow::~MainWindow() {
  // The scan stops after the file it is reading; the summary job holds no
  // pointer into the window and may finish on its own.
  // The jobs (members) stop and are waited for: the scan after the file it
  // reads, a summary when its file is read.
}

QTreeView* MainWindow::checkpointView() const {
  return m_browser->view();
}

void MainWindow::showTrain() {
  m_tabs->setCurrentWidget(m_train);
}

bool MainWindow::showDrift() {
  const QModelIndex current = m_browser->proxy()->mapToSource(checkpointView()->currentIndex());
  DriftChain chain;
  if (const QString family = m_model->familyName(current); !family.isEmpty()) {
    std::vector<std::pair<QString, BrowseGroup>> stages;
    for (int r = 0; r < m_model->rowCount(current); ++r) {
      const QModelIndex stage = m_model->index(r, 0, current);
      if (std::optional<BrowseGroup> g = m_model->group(stage))
        stages.emplace_back(stage.data(int(CheckpointListModel::Role::Stage)).toString(),
                            std::move(*g));
    }
    chain = familyDriftChain(family, stages);
  } else {
    std::optional<BrowseGroup> run = m_model->group(current);
    if (!run) run = m_model->group(current.parent());  // a checkpoint: its run
    if (run) chain = runDriftChain(*run);
  }
  if (chain.files.size() < 2) {
    statusBar()->showMessage(tr("Select a run with two checkpoints or more, or a stage family"),
                             5000);
    return false;
  }
  if (driftRemote(chain.title, chain.files, chain.labels)) return true;
  m_tabs->setCurrentWidget(m_drift);
  m_drift->showChain(chain.title, chain.files, chain.labels);
  return true;
}

QStringList MainWindow::selectedCheckpoints() const {
  QSet<QString> selected;
  for (const QModelIndex& i : checkpointView()->selectionModel()->selectedRows(0))
    if (const CheckpointEntry* c = m_model->checkpoint(m_browser->proxy()->mapToSource(i)))
      selected.insert(pathFromStd(inspectPathOf(*c)));
  // The browser's order: families in training order, runs by step. Each
  // checkpoint by what opens it whole (a Megatron save's folder: its ranks
  // joined, not rank 0's slices alone).
  QStringList ordered;
  for (const BrowseGroup& g : m_model->groups())
    for (const CheckpointEntry& c : g.checkpoints)
      if (selected.contains(pathFromStd(inspectPathOf(c))))
        ordered << pathFromStd(inspectPathOf(c));
  return ordered;
}

bool MainWindow::compareSelected() {
  const QStringList selected = selectedCheckpoints();
  if (selected.size() == 2) {
    compareCheckpoints(selected[0], selected[1]);
    return true;
  }
  if (selected.size() == 1) {
    // One checkpoint: what changed since the one before it in its run.
    for (const BrowseGroup& g : m_model->groups()) {
      const std::vector<const CheckpointEntry*> chain = checkpointChain(g.checkpoints);
      for (size_t i = 1; i < chain.size(); ++i)
        if (pathFromStd(inspectPathOf(*chain[i])) == selected[0]) {
          compareCheckpoints(pathFromStd(inspectPathOf(*chain[i - 1])), selected[0]);
          return true;
        }
    }
    statusBar()->showMessage(tr("%1 is the first checkpoint of its run: select two to compare")
                                 .arg(QFileInfo(selected[0]).fileName()),
                             5000);
    return false;
  }
  statusBar()->showMessage(tr("Select two checkpoints to compare (Ctrl+click)"), 5000);
  return false;
}

void MainWindow::compareWithFile() {
  const QStringList selected = selectedCheckpoints();
  if (selected.isEmpty()) {
    statusBar()->showMessage(tr("Select a checkpoint first"), 5000);
    return;
  }
  const QString other = QFileDialog::getOpenFileName(
      this, tr("Compare %1 with").arg(QFileInfo(selected[0]).fileName()),
      QFileInfo(selected[0]).absolutePath(), checkpointFilter());
  if (!other.isEmpty()) compareCheckpoints(selected[0], other);
}

void MainWindow::compareCheckpoints(const QString& a, const QString& b) {
  if (compareRemote(a, b)) return;  // on a host: computed there
  m_tabs->setCurrentWidget(m_compare);
  m_compare->compare(a, b);
  statusBar()->showMessage(m_compare->summaryLine());
}

bool MainWindow::restoreLayout() {
  const QSettings settings;
  const QByteArray geometry = settings.value("window/geometry").toByteArray();
  const QByteArray state = settings.value("window/state").toByteArray();
  if (geometry.isEmpty() && state.isEmpty()) {
    // The first start: 1280x800, or all of a smaller screen (a 1000x700
    // VM), never a window whose status bar is off the screen.
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    resize(screen ? kDefaultSize.boundedTo(screen->availableGeometry().size()) : kDefaultSize);
    return false;
  }
  if (!geometry.isEmpty()) restoreGeometry(geometry);
  if (!state.isEmpty()) restoreState(state);
  m_layoutSet = true;
  return true;
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (m_layoutSet) return;
  m_layoutSet = true;
  // Docks take their size once the window has one: the browser gets about
  // 40% of it, enough for a run's file names and their numbers, and room
  // for every tab when the window is later made as small as 1000 pixels
  // (a dock keeps its width when the window shrinks).
  resizeDocks({m_browserDock}, {width() * 40 / 100}, Qt::Horizontal);
}

void MainWindow::saveLayout() const {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_train->isRunning() && isVisible() && !testAttribute(Qt::WA_DontShowOnScreen)) {
    const auto answer =
        QMessageBox::question(this, tr("Training is running"),
                              tr("Stop the run and quit? The step in flight finishes and a "
                                 "resumable checkpoint is written."));
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
  }
  // Screenshots render an invisible window: its size is not the user's.
  if (!testAttribute(Qt::WA_DontShowOnScreen)) saveLayout();
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!event->mimeData()->hasUrls()) return;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) {
      event->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  openPaths(paths);
}

void MainWindow::chooseDirectory() {
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Open a directory of checkpoints"));
  if (!dir.isEmpty()) openPaths({dir});
}

void MainWindow::chooseFiles() {
  const QStringList files =
      QFileDialog::getOpenFileNames(this, tr("Open checkpoints"), {}, checkpointFilter());
  if (!files.isEmpty()) openPaths(files);
}

void MainWindow::refreshCurves() {
  if (applyRemoteCurves()) return;
  std::vector<std::string> logs;
  for (const QString& l : m_extraLogs) logs.push_back(pathToStd(l));
  m_curves->setRuns(curveRuns(m_model->groups(), m_paths), std::move(logs));
}

void MainWindow::addLogs(const QStringList& logs) {
  for (const QString& l : logs) {
    const QString clean = QDir::cleanPath(QFileInfo(l).absoluteFilePath());
    if (!m_extraLogs.contains(clean)) m_extraLogs << clean;
  }
  if (!m_paths.isEmpty()) QSettings().setValue(logsKey(m_paths), m_extraLogs);
  refreshCurves();
  statusBar()->showMessage(
      tr("Reading %1 for the curves")
          .arg(countText(size_t(m_extraLogs.size()), "added log", "added logs")),
      5000);
}

void MainWindow::chooseLogs() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, tr("Add console logs"), m_paths.isEmpty() ? QString() : m_paths.front(),
      tr("Logs (*.log *.out *.err *.txt *.jsonl);;All files (*)"));
  if (!files.isEmpty()) addLogs(files);
}

void MainWindow::reload() {
  if (m_paths.isEmpty()) return;
  // F5 (or a prune) keeps the person where they were: the same file or run
  // is selected again once the new scan lists it.
  if (m_keepSelection.isEmpty())
    m_keepSelection =
        checkpointView()->currentIndex().data(int(CheckpointListModel::Role::Path)).toString();
  openPaths(m_paths);
}

void MainWindow::openPaths(const QStringList& paths) {
  QStringList remoteOnes, here;
  for (const QString& p : paths) (isRemoteLocation(p) ? remoteOnes : here) << p;
  m_remote->compareWithHere.clear();
  if (remoteOnes.size() == 1 && here.isEmpty()) {
    openRemote(remoteOnes.front());
    return;
  }
  // `--view compare ssh://host/a.pt b.pt`: the host's location listed, then
  // its checkpoint compared with the file here (as Compare With... does).
  if (remoteOnes.size() == 1 && m_view == View::Compare) {
    m_remote->compareWithHere = here.front();
    openRemote(remoteOnes.front());
    return;
  }
  if (!remoteOnes.isEmpty()) {
    // A window shows one remote location, or paths here: said where it
    // stays, not only for a moment in the status bar.
    const QString p = remoteOnes.front();
    m_inspector->showMessage(
        tr("A remote location opens on its own"),
        tr("<p>%1 is on another machine: a window shows one remote location, or files and "
           "folders here, not both.</p><p>Open it alone (File &gt; Open Remote...); a checkpoint "
           "of it is compared with a file here with Checkpoint &gt; Compare With..., or from "
           "the command line with <code>ckptscope --view compare %1 FILE</code>.</p>")
            .arg(p.toHtmlEscaped()));
    m_tabs->setCurrentWidget(m_inspector);
    statusBar()->showMessage(
        tr("%1: open a remote location on its own (File > Open Remote...)").arg(p), 10000);
    return;
  }
  m_remote->job.drop();
  m_remoteCancel->hide();
  leaveRemote();
  m_watcher->stop();
  m_curvesRefresh.stop();
  m_paths = paths;
  if (!paths.isEmpty()) rememberPaths(paths);
  m_extraLogs = paths.isEmpty() ? QStringList() : QSettings().value(logsKey(paths)).toStringList();
  QStringList shown;
  for (const QString& p : paths)
    shown << QDir::toNativeSeparators(QDir::cleanPath(QFileInfo(p).absoluteFilePath()));
  setWindowTitle(shown.isEmpty() ? tr("CkptScope") : tr("CkptScope — %1").arg(shown.join(", ")));

  m_model->clear();
  m_inspector->showMessage(tr("Scanning..."), {});
  m_curves->clear(tr("Scanning..."));
  m_loadPending = true;
  m_summaryPending = false;

  // A scan still running is cancelled and its result dropped: the newest open wins.
  // Runs whose files are all read wait in `early` for the next progress tick
  // (every 100 ms), which lists them while the rest are still read; the
  // finished scan then replaces the rows with the whole result. The first
  // run is listed at once, not at the next tick.
  struct EarlyRuns {
    std::mutex mutex;
    std::vector<BrowseGroup> runs;
    bool posted = false;
    size_t unreadable = 0;  // of the runs handed over (the result holds them without checkpoints)
  };
  auto early = std::make_shared<EarlyRuns>();
  // On the GUI thread, for this scan while it runs (not a newer one's: the
  // progress it reports to is the one running, and its runs still exist):
  // at the first run, and at each progress tick.
  auto listEarly = [this, weak = std::weak_ptr<EarlyRuns>(early)](const JobProgress* of) {
    const std::shared_ptr<EarlyRuns> e = weak.lock();
    if (!e || m_scan.progress() != of) return;
    std::vector<BrowseGroup> runs;
    {
      const std::lock_guard lock(e->mutex);
      runs.swap(e->runs);
    }
    m_model->appendRuns(std::move(runs));
  };
  m_scan.start(
      [this, paths, early, listEarly](JobProgress& progress) {
        return scanPaths(
            paths, [&progress](size_t done, size_t total) { return progress.report(done, total); },
            [&](BrowseGroup&& run) {
              bool first = false;
              const auto unreadable =
                  size_t(std::count_if(run.checkpoints.begin(), run.checkpoints.end(),
                                       [](const CheckpointEntry& c) { return !c.error.empty(); }));
              {
                const std::lock_guard lock(early->mutex);
                early->runs.push_back(std::move(run));
                early->unreadable += unreadable;
                first = !std::exchange(early->posted, true);
              }
              if (first)
                QMetaObject::invokeMethod(
                    this, [listEarly, of = &progress] { listEarly(of); }, Qt::QueuedConnection);
            });
      },
      [this, early](JobOutcome, std::optional<std::vector<BrowseGroup>> groups,
                    const QString& error) {
        // The runs handed over since the last tick are listed first: the
        // result holds them without their checkpoints.
        std::vector<BrowseGroup> waiting;
        size_t unreadable = 0;
        {
          const std::lock_guard lock(early->mutex);
          waiting.swap(early->runs);
          unreadable = early->unreadable;
        }
        if (!groups) {
          onScanFinished({}, error);
          return;
        }
        m_model->appendRuns(std::move(waiting));
        onScanFinished(std::move(*groups), error, unreadable);
      },
      [this, listEarly](const JobProgress& progress) {
        listEarly(&progress);
        showScanProgress(progress);
      });
  m_browser->showProgress(0, 0);
  statusBar()->showMessage(tr("Scanning..."));
}

void MainWindow::showScanProgress(const JobProgress& progress) {
  const uint64_t total = progress.total();
  m_browser->showProgress(progress.done(), total);
  m_curves->showScanProgress(progress.done(), total);
  statusBar()->showMessage(total ? tr("Scanning... %1 of %2 files").arg(progress.done()).arg(total)
                                 : tr("Scanning..."));
}

void MainWindow::onScanFinished(std::vector<BrowseGroup> groups, const QString& error,
                                size_t handedOverUnreadable) {
  m_browser->hideProgress();
  // A row the person picked among the first runs listed while the rest were
  // scanned is picked again in the whole result (not the first row).
  if (m_keepSelection.isEmpty() && checkpointView()->selectionModel()->hasSelection())
    m_keepSelection =
        checkpointView()->currentIndex().data(int(CheckpointListModel::Role::Path)).toString();
  // Usually the runs handed over while the scan ran are the first of the
  // result: the rest are added after them. Anything else is listed anew (a
  // reset measures every row again and rebuilds the view: a fifth of a
  // 50,000-checkpoint open).
  // (The model holds these groups after: counted here, not copied out again.)
  size_t unreadable = handedOverUnreadable;
  for (const BrowseGroup& g : groups)
    for (const CheckpointEntry& c : g.checkpoints)
      if (!c.error.empty()) ++unreadable;
  // New rows open themselves, a reset opens all (BrowserPanel): the tree
  // is not walked again here.
  if (const std::optional<size_t> listed = m_model->listedPrefix(groups))
    m_model->appendRuns({std::make_move_iterator(groups.begin() + std::ptrdiff_t(*listed)),
                         std::make_move_iterator(groups.end())});
  else {
    // (Groups handed over while the scan ran take their checkpoints back
    // from the rows they were listed in.)
    restoreHandedOver(groups, m_model->groups());
    m_model->setGroups(std::move(groups));
  }
  QStringList dirs;
  for (const QString& p : m_paths)
    if (QFileInfo(p).isDir()) dirs << p;
  m_watcher->watch(dirs);

  const size_t count = m_model->checkpointCount();
  QString status = tr("%1 in %2")
                       .arg(countText(count, "checkpoint", "checkpoints"),
                            countText(m_model->groupCount(), "run", "runs"));
  if (unreadable) status += ", " + tr("%1 unreadable").arg(unreadable);
  if (!error.isEmpty()) status = tr("Scan failed: %1").arg(error);
  statusBar()->showMessage(status);
  emit scanFinished();
  refreshCurves();

  QSortFilterProxyModel* proxy = m_browser->proxy();
  QModelIndex first = m_view == View::Browse ? proxy->index(0, 0)
                                             : proxy->mapFromSource(m_model->firstCheckpoint());
  if (!m_keepSelection.isEmpty()) {
    QModelIndex kept = m_model->indexOfPath(m_keepSelection);
    if (!kept.isValid()) kept = m_model->indexOfRun(m_keepSelection);
    if (kept = proxy->mapFromSource(kept); kept.isValid()) first = kept;
    m_keepSelection.clear();
  }
  if (!first.isValid() && proxy->rowCount() > 0)
    first = proxy->index(0, 0);  // e.g. a directory that failed
  if (first.isValid()) {
    checkpointView()->setCurrentIndex(first);
    checkpointView()->scrollTo(first);
  } else {
    m_inspector->showMessage(
        tr("No checkpoints found"),
        tr("<p>No .pt, .pth, .bin, .ckpt or .safetensors checkpoints under:</p><p>%1</p>")
            .arg(m_paths.join("<br>").toHtmlEscaped()));
  }
  if (m_view == View::Compare) compareOnOpen();
  if (!m_summaryPending) finishLoading();
}

void MainWindow::compareOnOpen() {
  // `ckptscope --view compare A B`: the two files; a directory: the first
  // run's last two checkpoints (what its latest save changed); a remote
  // location and a file here: the location's checkpoint (a run's last)
  // with the file.
  const std::vector<BrowseGroup> groups = m_model->groups();
  if (const QString here = std::exchange(m_remote->compareWithHere, {}); !here.isEmpty()) {
    for (const BrowseGroup& g : groups) {
      const std::vector<const CheckpointEntry*> chain = checkpointChain(g.checkpoints);
      if (chain.empty()) continue;
      compareCheckpoints(pathFromStd(inspectPathOf(*chain.back())), here);
      return;
    }
    m_compare->showMessage(tr("Nothing on the host to compare with %1.").arg(here));
    return;
  }
  for (const BrowseGroup& g : groups) {
    // Files opened by name are compared as given; a run along its chain.
    std::vector<const CheckpointEntry*> readable;
    if (g.kind == BrowseGroup::Kind::Files) {
      for (const CheckpointEntry& c : g.checkpoints)
        if (c.error.empty()) readable.push_back(&c);
    } else {
      readable = checkpointChain(g.checkpoints);
    }
    if (readable.size() < 2) continue;
    const size_t n = readable.size();
    const bool files = g.kind == BrowseGroup::Kind::Files;
    compareCheckpoints(pathFromStd(inspectPathOf(*readable[files ? 0 : n - 2])),
                       pathFromStd(inspectPathOf(*readable[files ? 1 : n - 1])));
    return;
  }
  m_compare->showMessage(
      tr("Nothing to compare: open two checkpoints, or a run with two or more."));
}

void MainWindow::finishLoading() {
  if (!m_loadPending) return;
  m_loadPending = false;
  emit loaded();
}

bool MainWindow::selectPath(const QString& path) {
  QModelIndex index = m_browser->proxy()->mapFromSource(m_model->indexOfPath(path));
  if (!index.isValid() && m_model->indexOfPath(path).isValid()) {
    m_browser->setFilter({}, false);  // hidden by the filter: show everything again
    index = m_browser->proxy()->mapFromSource(m_model->indexOfPath(path));
  }
  if (!index.isValid()) return false;
  checkpointView()->setCurrentIndex(index);
  checkpointView()->scrollTo(index);
  return true;
}

void MainWindow::onRunChanged(const BrowseGroup& run) {
  // Keep the selection where it was (by file, as rows move).
  m_model->updateRun(run);
  if (!m_selectWhenListed.isEmpty() && selectPath(m_selectWhenListed)) m_selectWhenListed.clear();
  statusBar()->showMessage(
      tr("%1: %2").arg(run.name, countText(run.checkpoints.size(), "checkpoint", "checkpoints")),
      5000);
  refreshCurvesLater();
  emit checkpointsChanged();
}

void MainWindow::onRunRemoved(const QString& path) {
  if (!m_model->removeRun(path)) return;
  refreshCurvesLater();
  emit checkpointsChanged();
}

void MainWindow::refreshCurvesLater() {
  if (!m_curvesRefresh.isActive()) m_curvesRefresh.start();
}

void MainWindow::setView(View view) {
  m_view = view;
  QWidget* tab = m_inspector;
  if (view == View::Curves) tab = m_curves;
  if (view == View::Compare) tab = m_compare;
  m_tabs->setCurrentWidget(tab);
}

void MainWindow::onCheckpointActivated(const QString& path) {
  // A marker on a curve: show that checkpoint as if picked in the list.
  if (selectPath(path)) m_tabs->setCurrentWidget(m_inspector);
}

void MainWindow::onCurrentChanged(const QModelIndex& proxyIndex) {
  const QModelIndex current = m_browser->proxy()->mapToSource(proxyIndex);
  if (const CheckpointEntry* c = m_model->checkpoint(current)) {
    if (const std::optional<BrowseGroup> run = m_model->group(current.parent());
        run && !run->remote.isEmpty()) {
      showRemoteCheckpoint(*c, *run);
      return;
    }
    m_summaryPath = pathFromStd(inspectPathOf(*c));  // a Megatron save's ranks: joined
    m_summaryPending = true;
    m_train->setSelectedCheckpoint(pathFromStd(c->path));  // where Resume / Fine-tune start
    m_generate->setCheckpoint(pathFromStd(c->path));
    statusBar()->showMessage(tr("Reading %1...").arg(m_summaryPath));
    // The trainer the browser found it by and where its things came from:
    // the Summary names them.
    const std::optional<BrowseGroup> run = m_model->group(current.parent());
    // A Trainer's checkpoint-<step>/: its optimizer.pt beside the weights.
    QString optimizerPath;
    for (const CheckpointPart& p : c->parts)
      if (p.role == "optimizer") optimizerPath = pathFromStd(p.path);
    m_summary.start(
        [path = m_summaryPath, optimizerPath,
         trainer = run ? trainerLine(*run, c) : QString()](JobProgress&) {
          CheckpointSummary s = summarizeCheckpoint(path, optimizerPath);
          addTrainerField(s, trainer);
          return s;
        },
        [this](JobOutcome, std::optional<CheckpointSummary> summary, const QString& error) {
          if (summary)
            onSummaryReady(*summary);
          else
            statusBar()->showMessage(tr("%1: cannot be read: %2").arg(m_summaryPath, error));
        });
  } else if (const std::optional<BrowseGroup> g = m_model->group(current)) {
    m_summaryPending = false;
    statusBar()->showMessage(g->path.isEmpty() ? g->name : g->path);
    showGroupSummary(*g);
    emit summaryShown(g->path);
  } else if (const QString family = m_model->familyName(current); !family.isEmpty()) {
    m_summaryPending = false;
    QString rows;
    const int stages = m_model->rowCount(current);
    for (int r = 0; r < stages; ++r) {
      const QModelIndex stage = m_model->index(r, 0, current);
      rows += QString("<tr><td>%1</td><td>%2</td><td align='right'>%3</td></tr>")
                  .arg(stage.data().toString().toHtmlEscaped(),
                       stage.data(int(CheckpointListModel::Role::Path)).toString().toHtmlEscaped(),
                       countText(uint64_t(m_model->rowCount(stage)), "checkpoint", "checkpoints"));
    }
    m_inspector->showMessage(
        family, tr("<p>The stages of %1, in training order:</p>").arg(family.toHtmlEscaped()) +
                    QString("<table cellspacing='0' cellpadding='3'>%1</table>").arg(rows));
    // What the family's row says: "3 stages", "2 stages, 1 branch".
    const QString kind =
        current.siblingAtColumn(int(CheckpointListModel::Column::Kind)).data().toString();
    statusBar()->showMessage(tr("%1: %2").arg(family, kind));
    emit summaryShown(family);
  }
}

void MainWindow::onSummaryReady(const CheckpointSummary& summary) {
  if (summary.path != m_summaryPath) return;  // superseded by a later selection
  m_summaryPending = false;
  m_inspector->showSummary(summary);
  statusBar()->showMessage(
      summary.ok()
          ? tr("%1: %2").arg(summary.path, countText(summary.tensors.size(), "tensor", "tensors"))
          : tr("%1: cannot be read").arg(summary.path));
  emit summaryShown(summary.path);
  finishLoading();
}

void MainWindow::showGroupSummary(const BrowseGroup& group) {
  m_inspector->showMessage(group.name, groupSummaryHtml(group));
}

}  // namespace ckpt
