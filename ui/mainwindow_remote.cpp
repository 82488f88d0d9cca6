// MainWindow and locations on other machines (docs/REMOTE.md, "The app"):
// opening, refreshing and the messages when a host cannot be reached. The
// work is ui/remote's, on the thread pool; here it is started and its
// results are swapped in.
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QTreeView>
#include <stdexcept>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/runwatcher.h"
#include "curves/curvesview.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "remote/openremotedialog.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"

namespace ckpt {

bool MainWindow::isRemote() const {
  return m_remote->where.has_value();
}

void MainWindow::chooseRemote() {
  QStringList recent;
  for (const QStringList& paths : recentPaths())
    if (paths.size() == 1 && isRemoteLocation(paths.front())) recent << paths.front();
  OpenRemoteDialog dialog(recent, this);
  if (dialog.exec() == QDialog::Accepted) openPaths({dialog.location()});
}

bool MainWindow::openRemote(const QString& location) {
  std::optional<remote::RemotePath> where;
  try {
    where = remote::parseRemotePath(pathToStd(location));
  } catch (const std::invalid_argument& e) {
    showRemoteFailure(fromStd(e.what()));
    return false;
  }
  if (!where) return false;
  m_watcher->stop();
  m_curvesRefresh.stop();
  m_scan.drop();  // a local scan still running: the newest open wins
  // The same location again (F5): the rows again, and only what the curves'
  // files gained since (`metrics since`). Another: read whole. What is shown
  // stays until the answer is in (a host that cannot be reached leaves it).
  const bool refresh =
      m_remote->where && m_remote->where->display() == where->display() && !m_remote->files.empty();
  m_loadPending = true;
  m_summaryPending = false;
  std::vector<QString> shownRuns;
  for (const CurveRun& r : m_curves->runs()) shownRuns.push_back(r.path);
  auto work = [connections = m_remote->connections, at = *where, refresh, files = m_remote->files,
               shownRuns](JobProgress& progress) {
    if (refresh) return refreshRemoteFolder(*connections, at, files, shownRuns, progress);
    RemoteRefresh loaded;
    loaded.folder = loadRemoteFolder(*connections, at, progress);
    loaded.reloaded = true;
    return loaded;
  };
  m_remote->job.start(
      std::move(work),
      [this, at = *where, location](JobOutcome outcome, std::optional<RemoteRefresh> result,
                                    const QString& error) {
        if (outcome == JobOutcome::Done && result) {
          m_remote->where = at;
          m_remote->location = location;
          m_paths = {location};
          m_extraLogs.clear();
          rememberPaths(m_paths);  // a location that answered, not a typo
          setWindowTitle(tr("CkptScope — %1").arg(location));
        }
        onRemoteFinished(outcome, std::move(result), error);
      },
      [this](const JobProgress& progress) { showRemoteProgress(progress); });
  m_browser->showProgress(0, 0);
  m_remoteCancel->show();
  statusBar()->showMessage(tr("Connecting to %1...").arg(fromStd(where->host)));
  return true;
}

void MainWindow::showRemoteProgress(const JobProgress& progress) {
  const QString host = m_remote->where ? fromStd(m_remote->where->host) : tr("the host");
  switch (progress.part()) {
    case 1:
      statusBar()->showMessage(tr("Connecting to %1...").arg(host));
      break;
    case 2:
      statusBar()->showMessage(tr("Listing the runs on the host..."));
      break;
    case 3:
      statusBar()->showMessage(tr("Reading their curves on the host..."));
      break;
    default:
      break;
  }
}

void MainWindow::cancelRemote() {
  // The agent answers what it was asked in its own time; its answer is dropped.
  m_remote->job.drop();
  m_remoteCancel->hide();
  m_browser->hideProgress();
  statusBar()->showMessage(tr("Stopped waiting for the host: what was shown is kept"), 10000);
  finishLoading();
}

void MainWindow::onRemoteFinished(JobOutcome outcome, std::optional<RemoteRefresh> result,
                                  const QString& error) {
  m_remoteCancel->hide();
  m_browser->hideProgress();
  if (outcome == JobOutcome::Cancelled) {  // stopped on purpose: nothing to report
    finishLoading();
    return;
  }
  if (outcome == JobOutcome::Failed || !result) {
    showRemoteFailure(error);
    finishLoading();
    return;
  }
  m_remote->files = std::move(result->folder.files);
  m_remote->curvesReloaded = result->reloaded;
  m_remote->curves = std::move(result->folder.curves);
  m_remote->batches = std::move(result->batches);
  // The rows as a local scan's are shown (selection, status, the curves).
  onScanFinished(std::move(result->folder.groups), {});
}

bool MainWindow::applyRemoteCurves() {
  if (!m_remote->where) return false;
  if (m_remote->curvesReloaded) {
    m_remote->curvesReloaded = false;
    m_curves->setLoadedRuns(std::move(m_remote->curves));
    m_remote->curves.clear();
    return true;
  }
  size_t points = 0;
  for (const RemoteBatch& b : m_remote->batches)
    if (m_curves->addLivePoints(b.runPath, b.source, b.points)) points += b.points.size();
  m_remote->batches.clear();
  if (points)
    statusBar()->showMessage(tr("%1 new on the host").arg(countText(points, "point", "points")),
                             10000);
  return true;
}

void MainWindow::showRemoteFailure(const QString& message) {
  const QString text =
      message + "\n\n" +
      tr("What was shown is kept. Press F5 (File > Reload) to connect again, or File > Open "
         "Remote... to change the location.");
  statusBar()->showMessage(message);
  // One message at a time, not in the way of the window (not modal).
  delete findChild<QMessageBox*>(QStringLiteral("remoteError"));
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot reach the host"), text,
                              QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("remoteError"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  box->show();
}

void MainWindow::showRemoteCheckpoint(const CheckpointEntry& checkpoint, const BrowseGroup& run) {
  m_summaryPending = false;
  const QString location = remoteLocation(*m_remote->where, checkpoint.path);
  m_inspector->showMessage(
      fromStd(checkpoint.file),
      tr("<p>%1</p><p>A checkpoint on another machine. Its tensors are not read from here "
         "yet: <code>ckptscope-cli info %2</code> prints its summary.</p>")
          .arg(location.toHtmlEscaped(), location.toHtmlEscaped()));
  statusBar()->showMessage(tr("%1 (%2)").arg(location, run.name));
  emit summaryShown(pathFromStd(checkpoint.path));
}

}  // namespace ckpt
