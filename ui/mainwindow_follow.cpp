// MainWindow following a remote location without F5 (docs/REMOTE.md, "The
// app"): the host's agent watches the folder on a connection of its own
// (ui/remote/remotewatch.h); what it reports is read on the pool as F5
// reads it, but quietly: only what the curves' files gained when only they
// grew, the rows too when anything else changed, and the rows updated in
// place (the selection and the Inspect tab stay). A lost connection is said
// in the status bar and tried again with a growing delay.
#include <QStatusBar>
#include <QTreeView>
#include <set>

#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"

namespace ckpt {
namespace {

// Whether the browser shows `run` as the host lists it now (its checkpoints by path, size, time).
bool sameRun(const BrowseGroup& shown, const BrowseGroup& listed) {
  if (shown.checkpoints.size() != listed.checkpoints.size() || shown.name != listed.name)
    return false;
  for (size_t i = 0; i < shown.checkpoints.size(); ++i) {
    const CheckpointEntry &a = shown.checkpoints[i], &b = listed.checkpoints[i];
    if (a.path != b.path || a.size != b.size || a.mtime != b.mtime || a.error != b.error)
      return false;
  }
  return shown.metricFiles == listed.metricFiles;
}

}  // namespace

void MainWindow::setUpRemoteFollowing() {
  RemoteWatch* watch = &m_remote->watch;
  connect(watch, &RemoteWatch::changed, this,
          [this](const QStringList& paths) { followRemote(paths, false); });
  connect(watch, &RemoteWatch::watching, this, [this](bool again) {
    if (!again) {
      // The watch reports what changes after its first look; a line written
      // between the listing and that look would wait for the next change.
      // What the curves' files gained meanwhile (nothing, mostly: one
      // round trip) is read now.
      followRemote({}, false);
      return;
    }
    statusBar()->showMessage(tr("Following %1 again").arg(m_remote->watch.location()), 10000);
    followRemote({}, true);  // what changed while the connection was down was not reported
  });
  connect(watch, &RemoteWatch::lost, this, [this](const QString& why, int retryMs) {
    if (retryMs < 0) {
      m_remote->watch.stop();  // so that the next listing starts it again
      statusBar()->showMessage(
          tr("Not following the host: %1. F5 lists it again and follows it.").arg(why));
      return;
    }
    statusBar()->showMessage(tr("Not following the host: %1. Trying again in %2 s; what is shown "
                                "is kept.")
                                 .arg(why)
                                 .arg(retryMs / 1000));
  });
}

void MainWindow::startRemoteFollowing() {
  if (!m_remote->where) return;
  if (m_remote->watch.location() != pathFromStd(m_remote->where->display()))
    m_remote->watch.start(*m_remote->where, m_remote->listedAt);
}

void MainWindow::leaveRemote() {
  m_remote->where.reset();
  m_remote->watch.stop();
  m_remote->follow.drop();
  m_remote->followPending = false;
}

void MainWindow::followRemote(const QStringList& paths, bool everything) {
  if (!m_remote->where) return;
  // Only the curves' files grew: what they gained. Anything else (a
  // checkpoint saved, a new log): the rows and every curve again.
  bool onlyCurves = !everything;
  for (const QString& p : paths) onlyCurves = onlyCurves && m_remote->files.count(pathToStd(p));
  RefreshScope& scope = m_remote->followScope;
  if (!onlyCurves) scope = {/*rows=*/true, /*rereadCurves=*/true};
  if (m_remote->follow.isRunning() || m_remote->job.isRunning()) {
    m_remote->followPending = true;  // read once this one is in
    return;
  }
  m_remote->followPending = false;
  const RefreshScope asked = scope;
  scope = {false, false};
  std::vector<QString> shownRuns;
  for (const CurveRun& r : m_curves->runs()) shownRuns.push_back(r.path);
  m_remote->follow.start(
      [connections = m_remote->connections, at = *m_remote->where, files = m_remote->files,
       shownRuns, asked](JobProgress& progress) {
        return refreshRemoteFolder(*connections, at, files, shownRuns, progress, asked);
      },
      [this, asked, location = m_remote->location](
          JobOutcome outcome, std::optional<RemoteRefresh> result, const QString& error) {
        if (outcome == JobOutcome::Done && result && m_remote->location == location)
          onRemoteFollowed(std::move(*result), asked.rows);
        else if (outcome == JobOutcome::Failed)
          // Said, not a message box: the next change (or F5) reads it again.
          statusBar()->showMessage(tr("Cannot read what changed on the host: %1").arg(error),
                                   10000);
        if (m_remote->followPending) followRemote({}, false);
      });
}

void MainWindow::onRemoteFollowed(RemoteRefresh result, bool rows) {
  m_remote->files = std::move(result.folder.files);
  QString status;
  if (rows) {
    // In place: a run whose checkpoints changed, a new run, a run gone.
    std::set<QString> listed;
    size_t changedRuns = 0;
    for (BrowseGroup& g : result.folder.groups) {
      listed.insert(g.path);
      bool same = false;
      for (const BrowseGroup& shown : m_model->groups())
        if (shown.path == g.path) same = sameRun(shown, g);
      if (same) continue;
      ++changedRuns;
      status =
          tr("%1: %2").arg(g.name, countText(g.checkpoints.size(), "checkpoint", "checkpoints"));
      m_model->updateRun(std::move(g));
    }
    for (const BrowseGroup& shown : m_model->groups())
      if (!listed.count(shown.path) && m_model->removeRun(shown.path)) ++changedRuns;
    if (changedRuns) {
      checkpointView()->expandAll();
      emit checkpointsChanged();
    }
  }
  if (result.reloaded) {
    m_curves->setLoadedRuns(std::move(result.folder.curves));
  } else {
    size_t points = 0;
    bool missed = false;
    for (const RemoteBatch& b : result.batches) {
      if (m_curves->addLivePoints(b.runPath, b.source, b.points))
        points += b.points.size();
      else
        missed = true;
    }
    // The curves were being read (or the run is not drawn yet): read them all once more.
    if (missed) {
      m_remote->followScope.rereadCurves = true;
      m_remote->followPending = true;
    }
    if (points && status.isEmpty())
      status = tr("%1 new on the host").arg(countText(points, "point", "points"));
  }
  if (!status.isEmpty()) statusBar()->showMessage(status, 10000);
  showRemoteTrainingRun();
}

}  // namespace ckpt
