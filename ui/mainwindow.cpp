#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QKeySequence>
#include <QMenuBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTreeView>
#include <QtConcurrent/QtConcurrentRun>
#include <atomic>
#include <chrono>
#include <map>

#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "inspector/summarywidget.h"
#include "textformat.h"

namespace ckpt {

namespace {

// The curves view takes runs as the index describes them: each scanned run,
// and files opened directly grouped by their directory (whose metrics.jsonl
// and logs then count too).
std::vector<RunEntry> curveRuns(const std::vector<BrowseGroup>& groups) {
  std::vector<RunEntry> runs;
  std::map<QString, size_t> byDir;
  for (const BrowseGroup& g : groups) {
    if (!g.error.isEmpty()) continue;
    if (g.kind == BrowseGroup::Kind::Run) {
      runs.push_back({pathToStd(g.name), pathToStd(g.path), g.checkpoints});
      continue;
    }
    for (const CheckpointEntry& c : g.checkpoints) {
      const QString dir = QFileInfo(pathFromStd(c.path)).absolutePath();
      auto [it, added] = byDir.emplace(dir, runs.size());
      if (added) runs.push_back({pathToStd(QFileInfo(dir).fileName()), pathToStd(dir), {}});
      runs[it->second].checkpoints.push_back(c);
    }
  }
  return runs;
}

}  // namespace

std::optional<MainWindow::View> MainWindow::viewFromName(const QString& name) {
  if (name == QLatin1String("browse")) return View::Browse;
  if (name == QLatin1String("inspect")) return View::Inspect;
  if (name == QLatin1String("curves")) return View::Curves;
  return std::nullopt;
}

struct MainWindow::ScanState {
  std::atomic<bool> stop{false};
  std::atomic<size_t> done{0};
  std::atomic<size_t> total{0};
};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("CkptScope"));

  m_model = new CheckpointListModel(this);
  m_tree = new QTreeView(this);
  m_tree->setModel(m_model);
  m_tree->setUniformRowHeights(true);
  m_tree->setAllColumnsShowFocus(true);
  m_tree->setAlternatingRowColors(true);
  m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
  m_tree->header()->setStretchLastSection(false);
  m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_tree->header()->setSectionResizeMode(int(CheckpointListModel::Column::Name), QHeaderView::Stretch);

  m_summary = new SummaryWidget(this);
  m_curves = new CurvesView(this);
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(m_summary, tr("Inspect"));
  m_tabs->addTab(m_curves, tr("Curves"));

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(m_tree);
  split->addWidget(m_tabs);
  split->setStretchFactor(1, 1);
  split->setSizes({460, 820});
  split->setChildrenCollapsible(false);
  setCentralWidget(split);
  createMenus();
  statusBar()->showMessage(tr("Open a directory of checkpoints (File > Open Directory)"));

  connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this, &MainWindow::onCurrentChanged);
  connect(&m_scanWatcher, &QFutureWatcherBase::finished, this, &MainWindow::onScanFinished);
  connect(&m_summaryWatcher, &QFutureWatcherBase::finished, this, &MainWindow::onSummaryReady);
  connect(m_curves, &CurvesView::checkpointActivated, this, &MainWindow::onCheckpointActivated);
  m_progressTimer.setInterval(100);
  connect(&m_progressTimer, &QTimer::timeout, this, &MainWindow::showScanProgress);
}

MainWindow::~MainWindow() {
  // The scan stops after the file it is reading; the summary job holds no
  // pointer into the window and may finish on its own.
  if (m_scanState) m_scanState->stop = true;
  m_scanWatcher.waitForFinished();
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* openDir = file->addAction(tr("Open &Directory..."));
  openDir->setShortcut(QKeySequence::Open);
  connect(openDir, &QAction::triggered, this, &MainWindow::chooseDirectory);
  QAction* openFiles = file->addAction(tr("Open &Files..."));
  connect(openFiles, &QAction::triggered, this, &MainWindow::chooseFiles);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
}

void MainWindow::chooseDirectory() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a directory of checkpoints"));
  if (!dir.isEmpty()) openPaths({dir});
}

void MainWindow::chooseFiles() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, tr("Open checkpoints"), {}, tr("Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)"));
  if (!files.isEmpty()) openPaths(files);
}

void MainWindow::openPaths(const QStringList& paths) {
  if (m_scanState) m_scanState->stop = true;  // a previous scan's result is no longer wanted
  m_paths = paths;
  QStringList shown;
  for (const QString& p : paths) shown << QDir::toNativeSeparators(QDir::cleanPath(QFileInfo(p).absoluteFilePath()));
  setWindowTitle(shown.isEmpty() ? tr("CkptScope") : tr("CkptScope — %1").arg(shown.join(", ")));

  m_model->clear();
  m_summary->showMessage(tr("Scanning..."), {});
  m_curves->clear(tr("Scanning..."));
  m_loadPending = true;
  m_summaryPending = false;

  auto state = std::make_shared<ScanState>();
  m_scanState = state;
  m_scanWatcher.setFuture(QtConcurrent::run([paths, state] {
    return scanPaths(paths, [state](size_t done, size_t total) {
      state->done = done;
      state->total = total;
      return !state->stop.load();
    });
  }));
  m_progressTimer.start();
  showScanProgress();
}

void MainWindow::showScanProgress() {
  if (!m_scanState) return;
  const size_t total = m_scanState->total;
  statusBar()->showMessage(total ? tr("Scanning... %1 of %2 files").arg(m_scanState->done.load()).arg(total)
                                 : tr("Scanning..."));
}

void MainWindow::onScanFinished() {
  m_progressTimer.stop();
  m_model->setGroups(m_scanWatcher.result());
  m_tree->expandAll();

  size_t unreadable = 0;
  for (const BrowseGroup& g : m_model->groups())
    for (const CheckpointEntry& c : g.checkpoints)
      if (!c.error.empty()) ++unreadable;
  const size_t count = m_model->checkpointCount();
  QString status = tr("%1 in %2").arg(countText(count, "checkpoint", "checkpoints"),
                                       countText(m_model->groups().size(), "group", "groups"));
  if (unreadable) status += ", " + tr("%1 unreadable").arg(unreadable);
  statusBar()->showMessage(status);
  emit scanFinished();
  m_curves->setRuns(curveRuns(m_model->groups()));

  QModelIndex first = m_view == View::Browse ? m_model->index(0, 0) : m_model->firstCheckpoint();
  if (!first.isValid() && m_model->rowCount() > 0) first = m_model->index(0, 0);  // e.g. a directory that failed
  if (first.isValid()) {
    m_tree->setCurrentIndex(first);
    m_tree->scrollTo(first);
  } else {
    m_summary->showMessage(
        tr("No checkpoints found"),
        tr("<p>No .pt, .pth, .bin, .ckpt or .safetensors checkpoints under:</p><p>%1</p>")
            .arg(m_paths.join("<br>").toHtmlEscaped()));
  }
  if (!m_summaryPending) finishLoading();
}

void MainWindow::finishLoading() {
  if (!m_loadPending) return;
  m_loadPending = false;
  emit loaded();
}

bool MainWindow::selectPath(const QString& path) {
  const QModelIndex index = m_model->indexOfPath(path);
  if (!index.isValid()) return false;
  m_tree->setCurrentIndex(index);
  m_tree->scrollTo(index);
  return true;
}

void MainWindow::setView(View view) {
  m_view = view;
  m_tabs->setCurrentWidget(view == View::Curves ? static_cast<QWidget*>(m_curves) : m_summary);
}

void MainWindow::onCheckpointActivated(const QString& path) {
  // A marker on a curve: show that checkpoint as if picked in the list.
  if (selectPath(path)) m_tabs->setCurrentWidget(m_summary);
}

void MainWindow::onCurrentChanged(const QModelIndex& current) {
  if (const CheckpointEntry* c = m_model->checkpoint(current)) {
    m_summaryPath = pathFromStd(c->path);
    m_summaryPending = true;
    statusBar()->showMessage(tr("Reading %1...").arg(m_summaryPath));
    m_summaryWatcher.setFuture(QtConcurrent::run(summarizeCheckpoint, m_summaryPath));
  } else if (const BrowseGroup* g = m_model->group(current)) {
    m_summaryPending = false;
    statusBar()->showMessage(g->path.isEmpty() ? g->name : g->path);
    showGroupSummary(*g);
    emit summaryShown(g->path);
  }
}

void MainWindow::onSummaryReady() {
  const CheckpointSummary summary = m_summaryWatcher.result();
  if (summary.path != m_summaryPath) return;  // superseded by a later selection
  m_summaryPending = false;
  m_summary->showSummary(summary);
  statusBar()->showMessage(summary.ok() ? tr("%1: %2").arg(summary.path, countText(summary.tensors.size(), "tensor", "tensors"))
                                        : tr("%1: cannot be read").arg(summary.path));
  emit summaryShown(summary.path);
  finishLoading();
}

void MainWindow::showGroupSummary(const BrowseGroup& group) {
  if (!group.error.isEmpty()) {
    m_summary->showMessage(group.name, QString("<p style='color:#a00000'><b>%1</b></p><p>%2</p>")
                                           .arg(tr("Cannot scan this directory").toHtmlEscaped(),
                                                group.error.toHtmlEscaped()));
    return;
  }
  QString rows;
  for (const CheckpointEntry& c : group.checkpoints) {
    rows += QString("<tr><td>%1</td><td align='right'>%2</td><td>%3</td><td align='right'>%4</td><td align='right'>%5</td></tr>")
                .arg(QFileInfo(pathFromStd(c.file)).fileName().toHtmlEscaped(),
                     c.step ? QString::number(*c.step) : QString(),
                     c.error.empty() ? fromStd(std::string(checkpointKindName(c.kind))) : tr("unreadable"),
                     c.loss ? lossText(*c.loss) : QString(), sizeText(c.size));
  }
  const QString html =
      QString("<p>%1</p><table cellspacing='0' cellpadding='3'><tr><th align='left'>%2</th><th>%3</th>"
              "<th align='left'>%4</th><th>%5</th><th>%6</th></tr>%7</table>")
          .arg(tr("%1 in %2")
                   .arg(countText(group.checkpoints.size(), "checkpoint", "checkpoints"),
                        group.path.isEmpty() ? tr("files opened directly") : group.path)
                   .toHtmlEscaped(),
               tr("File"), tr("Step"), tr("Kind"), tr("Loss"), tr("Size"), rows);
  m_summary->showMessage(group.name, html);
}

}  // namespace ckpt
