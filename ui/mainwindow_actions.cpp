// The main window's actions on the browser's selection: generate text with a
// checkpoint, prune a run, export a checkpoint, prepare a resume or a
// fine-tune (split from mainwindow.cpp).
#include <QDir>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QTreeView>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/pathscan.h"
#include "browser/prunedialog.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/run_plan.h"
#include "export/exportdialog.h"
#include "generate/generatepanel.h"
#include "mainwindow.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"
#include "training/trainpanel.h"

namespace ckpt {

bool MainWindow::generateSelected() {
  const QStringList selected = selectedCheckpoints();
  if (selected.size() != 1) {
    statusBar()->showMessage(tr("Select one checkpoint to generate text with"), 10000);
    return false;
  }
  if (!m_generate->isRunning()) m_generate->setCheckpoint(selected[0]);
  m_tabs->setCurrentWidget(m_generate);
  m_generate->promptEdit()->setFocus();
  return true;
}

bool MainWindow::pruneSelectedRun() {
  // The current row's run: the row itself, or the run above a checkpoint or family.
  std::optional<BrowseGroup> run;
  for (QModelIndex i = m_browser->proxy()->mapToSource(checkpointView()->currentIndex());
       i.isValid() && !run; i = i.parent())
    run = m_model->group(i);
  if (!run || run->kind != BrowseGroup::Kind::Run || run->path.isEmpty()) {
    statusBar()->showMessage(tr("Select a run (or one of its checkpoints) to prune"), 10000);
    return false;
  }
  RunEntry entry;
  entry.name = pathToStd(run->name);
  entry.path = pathToStd(run->path);
  entry.checkpoints = run->checkpoints;
  PruneDialog dialog(std::move(entry), this);
  if (dialog.exec() != QDialog::Accepted) return true;
  uint64_t freed = 0;
  for (const PruneFile& f : dialog.plan().remove) freed += f.size;
  statusBar()->showMessage(tr("%1: %2 checkpoints moved to the trash, %3 freed")
                               .arg(run->name)
                               .arg(dialog.trashed().size())
                               .arg(sizeText(freed)),
                           10000);
  m_keepSelection = run->path;  // the pruned run stays selected, not the first row
  reload();
  return true;
}

bool MainWindow::exportSelected() {
  const QStringList selected = selectedCheckpoints();
  if (selected.size() != 1) {
    statusBar()->showMessage(tr("Select one checkpoint to export"), 10000);
    return false;
  }
  ExportDialog dialog(selected[0], this);
  if (dialog.exec() != QDialog::Accepted) return true;
  const QString written = QFileInfo(dialog.destination()).absoluteFilePath();
  statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(written)), 10000);
  // The new file in the browser, selected: a rescan, with the file added
  // when it lies outside the opened paths.
  QStringList paths = m_paths;
  if (!scanPathsCover(paths, written)) paths << written;
  connect(
      this, &MainWindow::loaded, this, [this, written] { selectPath(written); },
      Qt::SingleShotConnection);
  openPaths(paths);
  return true;
}

// Neither starts anything: they open the Train tab's page filled in from
// the selection, where the plan (what is written where) is shown and Start
// is the person's own click.
bool MainWindow::resumeSelected() {
  const QStringList selected = selectedCheckpoints();
  if (isRemote()) {
    // On the host: the page names it by its location, and Start starts it there.
    if (selected.size() != 1) {
      statusBar()->showMessage(tr("Select one checkpoint to resume on the host"), 5000);
      return false;
    }
    m_train->prepareResume(remoteLocation(*m_remote->where, pathToStd(selected[0])));
    showTrain();
    return true;
  }
  if (selected.size() == 1) {
    m_train->prepareResume(selected[0]);
    showTrain();
    return true;
  }
  // A run selected: its newest checkpoint that verifies, as `resume DIR` picks it.
  const QModelIndex current = m_browser->proxy()->mapToSource(checkpointView()->currentIndex());
  if (const std::optional<BrowseGroup> run = m_model->group(current);
      selected.isEmpty() && run && !run->path.isEmpty()) {
    try {
      const IntactCheckpoint pick = newestIntactCheckpoint(pathToStd(run->path));
      QStringList skipped;
      for (const SkippedCheckpoint& s : pick.skipped)
        skipped << tr("skipped %1: %2").arg(fromStd(s.file), fromStd(s.reason));
      if (pick.checkpoint.empty()) {
        statusBar()->showMessage(
            tr("%1: no intact checkpoint to resume (%2)").arg(run->name, skipped.join("; ")),
            10000);
        return false;
      }
      m_train->prepareResume(pathFromStd(pick.checkpoint));
      showTrain();
      statusBar()->showMessage(
          skipped.isEmpty()
              ? tr("The newest intact checkpoint of %1").arg(run->name)
              : tr("The newest intact checkpoint of %1; %2").arg(run->name, skipped.join("; ")),
          10000);
      return true;
    } catch (const std::exception& e) {
      statusBar()->showMessage(fromStd(e.what()), 10000);
      return false;
    }
  }
  statusBar()->showMessage(tr("Select one checkpoint, or a run, to resume"), 5000);
  return false;
}

bool MainWindow::finetuneSelected() {
  const QStringList selected = selectedCheckpoints();
  if (selected.size() != 1) {
    statusBar()->showMessage(tr("Select one checkpoint to fine-tune"), 5000);
    return false;
  }
  m_train->prepareFinetune(isRemote() ? remoteLocation(*m_remote->where, pathToStd(selected[0]))
                                      : selected[0]);
  showTrain();
  return true;
}

void MainWindow::onRunStarted(const QString& outputDir) {
  // The run's checkpoints appear in the browser as they are written: the
  // watcher sees them when the run is under an opened directory; otherwise
  // its directory is opened too.
  const QString dir = QDir::cleanPath(QFileInfo(outputDir).absoluteFilePath());
  for (const QString& p : m_paths) {
    const QString opened = QDir::cleanPath(QFileInfo(p).absoluteFilePath());
    if (QFileInfo(p).isDir() && (dir == opened || dir.startsWith(opened + '/'))) return;
  }
  openPaths(QStringList(m_paths) << outputDir);
}

}  // namespace ckpt
