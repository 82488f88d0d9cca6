// MainWindow and training on the host (docs/REMOTE.md, "Training on the
// host"): the Train tab's Start on a remote checkpoint asks the host's
// agent to start `ckptscope-cli resume|finetune` there, detached from the
// connection (closing the app does not stop it), or to submit it to SLURM
// with the batch script the person saw and edited. The new run is then
// read like any change on the host: its row and its curves follow.
#include <QMessageBox>
#include <QStatusBar>
#include <filesystem>
#include <stdexcept>

#include "browser/checkpointlistmodel.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/launch_wire.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"
#include "training/remotelaunch.h"
#include "training/trainpanel.h"

namespace ckpt {
namespace {

using Json = nlohmann::ordered_json;

// How often a run followed on its host is asked how it stands (nothing is
// sent to it): often while it stops, less while it trains.
constexpr int kStoppingPollMs = 1000;
constexpr int kFollowPollMs = 3000;

std::string parentOf(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// The roots the launch needs (remote::launchRoots).
void openRoots(RemoteConnections& connections, const remote::RemotePath& at,
               const remote::LaunchRequest& request) {
  for (const std::string& root : remote::launchRoots(request))
    connections.call(at, "open", Json{{"path", root}});
}

}  // namespace

void MainWindow::setUpRemoteTraining() {
  connect(m_train, &TrainPanel::remoteStartRequested, this, &MainWindow::startRemoteTraining);
  // The Curves tab reads the host's runs (a reload, a reconnection): the
  // Train tab's chart of the run started there follows.
  connect(m_curves, &CurvesView::curvesReady, this, &MainWindow::showRemoteTrainingRun);
  connect(m_train, &TrainPanel::remoteStopRequested, this, &MainWindow::stopRemoteTraining);
  m_remoteStopPoll.setInterval(kStoppingPollMs);
  m_remoteStopPoll.setSingleShot(true);
  connect(&m_remoteStopPoll, &QTimer::timeout, this, &MainWindow::pollRemoteStop);
}

void MainWindow::startRemoteTraining(const RemoteTrainStart& start) {
  std::optional<remote::RemotePath> where;
  try {
    where = remote::parseRemotePath(pathToStd(start.location));
  } catch (const std::invalid_argument& e) {
    m_train->remoteStartFinished(false, fromStd(e.what()));
    return;
  }
  if (!where) {
    m_train->remoteStartFinished(false, tr("%1 is not on another machine").arg(start.location));
    return;
  }
  const QString host = fromStd(where->host);
  statusBar()->showMessage(start.sbatch ? tr("Asking %1 for the batch script...").arg(host)
                                        : tr("Starting on %1...").arg(host));
  remote::LaunchRequest request = start.request;
  request.waitMs = 60000;  // the answer once it trains (or failed), at most a minute
  m_remote->launch.start(
      [connections = m_remote->connections, at = *where, request,
       sbatch = start.sbatch](JobProgress&) {
        openRoots(*connections, at, request);
        RemoteLaunchAnswer a;
        const Json params = remote::launchParams(request);
        if (sbatch)
          a.plan = remote::launchPlanFromJson(connections->call(at, "launchPlan", params));
        else
          a.result = remote::launchResultFromJson(connections->call(at, "launch", params));
        return a;
      },
      [this, start, host, at = *where](JobOutcome outcome, std::optional<RemoteLaunchAnswer> answer,
                                       const QString& error) {
        if (outcome != JobOutcome::Done || !answer) {
          const QString message = outcome == JobOutcome::Cancelled
                                      ? tr("Not started on %1").arg(host)
                                      : tr("Not started on %1: %2").arg(host, error);
          statusBar()->showMessage(message, 10000);
          m_train->remoteStartFinished(false, message);
          return;
        }
        if (answer->plan) {
          // SLURM: the script the host proposes, shown to edit, submitted on OK.
          if (!answer->plan->sbatch) {
            const QString message =
                tr("sbatch is not on the PATH on %1: SLURM cannot take the job there").arg(host);
            statusBar()->showMessage(message, 10000);
            m_train->remoteStartFinished(false, message);
            return;
          }
          SbatchDialog dialog(host, fromStd(answer->plan->runDir), fromStd(answer->plan->script),
                              this);
          if (dialog.exec() != QDialog::Accepted) {
            const QString message = tr("Not submitted: nothing was written on %1").arg(host);
            statusBar()->showMessage(message, 10000);
            m_train->remoteStartFinished(false, message);
            return;
          }
          submitRemoteTraining(start, dialog.script());
          return;
        }
        const remote::LaunchResult& r = *answer->result;
        const QString message =
            tr("%1 on %2 (pid %3): run %4 in %5, its log %6. It keeps training when this app "
               "closes (Stop on %2 asks it to save and end); its curves are followed here.")
                .arg(r.started ? tr("Started") : tr("Starting"), host)
                .arg(r.pid)
                .arg(fromStd(r.runName), fromStd(r.runDir), fromStd(r.log));
        statusBar()->showMessage(tr("Started on %1: %2").arg(host, fromStd(r.runDir)), 10000);
        m_train->remoteStartFinished(true, message);
        followRemoteTraining(
            at, fromStd(r.runDir),
            tr("%1 on %2 (pid %3), detached").arg(fromStd(r.runName), host).arg(r.pid),
            start.request.maxSteps.value_or(0), r.pid, {});
      });
}

void MainWindow::submitRemoteTraining(const RemoteTrainStart& start, const QString& script) {
  const std::optional<remote::RemotePath> where =
      remote::parseRemotePath(pathToStd(start.location));
  if (!where) return;
  const QString host = fromStd(where->host);
  statusBar()->showMessage(tr("Submitting to SLURM on %1...").arg(host));
  m_remote->launch.start(
      [connections = m_remote->connections, at = *where, request = start.request,
       text = script.toStdString()](JobProgress&) {
        openRoots(*connections, at, request);
        Json params = remote::launchParams(request);
        params["script"] = text;
        RemoteLaunchAnswer a;
        a.result = remote::launchResultFromJson(connections->call(at, "submit", params));
        return a;
      },
      [this, host, at = *where, maxSteps = start.request.maxSteps.value_or(0)](
          JobOutcome outcome, std::optional<RemoteLaunchAnswer> answer, const QString& error) {
        if (outcome != JobOutcome::Done || !answer || !answer->result) {
          const QString message = tr("Not submitted on %1: %2").arg(host, error);
          statusBar()->showMessage(message, 10000);
          m_train->remoteStartFinished(false, message);
          return;
        }
        const remote::LaunchResult& r = *answer->result;
        m_train->remoteStartFinished(
            true, tr("Submitted to SLURM on %1: job %2, run %3 in %4 (the script %5, the log %6 "
                     "once it runs); its curves are followed here.")
                      .arg(host, fromStd(r.jobId), fromStd(r.runName), fromStd(r.runDir),
                           fromStd(r.scriptFile), fromStd(r.log)));
        statusBar()->showMessage(tr("Job %1 submitted on %2").arg(fromStd(r.jobId), host), 10000);
        followRemoteTraining(
            at, fromStd(r.runDir),
            tr("%1 on %2: SLURM job %3").arg(fromStd(r.runName), host, fromStd(r.jobId)), maxSteps,
            0, fromStd(r.jobId));
      });
}

void MainWindow::followRemoteTraining(const remote::RemotePath& at, const QString& runDir,
                                      const QString& title, int64_t maxSteps, int64_t pid,
                                      const QString& jobId) {
  m_remoteStopPoll.stop();
  m_remote->stop.drop();
  m_train->followRemoteRun(runDir, title, maxSteps, remoteLocation(at, pathToStd(runDir)), pid,
                           jobId);
  // Asked how it stands while it is followed: a trainer that ends there
  // without Stop (it failed, it was killed, it finished) frees the Train
  // tab's Start. An answer that does not come (the connection dropped) is
  // asked again: the run goes on there.
  remote::RemotePath runAt = at;
  runAt.path = pathToStd(runDir);
  m_remote->stopAt = runAt;
  m_remote->stopRequest = {};
  m_remote->stopRequest.runDir = runAt.path;
  m_remote->stopRequest.pid = pid;
  m_remote->stopRequest.jobId = pathToStd(jobId);
  m_remoteStopPoll.setInterval(kFollowPollMs);
  m_remoteStopPoll.start();
  // The folder shown holds the run (a branch beside its run, a fine-tune
  // beside its parent): read what changed. Otherwise (another host, an
  // output elsewhere) the run's parent folder on that host is opened.
  const bool shown = m_remote->where && m_remote->where->endpoint() == at.endpoint() &&
                     (runDir == fromStd(m_remote->where->path) ||
                      runDir.startsWith(fromStd(m_remote->where->path) + QLatin1Char('/')));
  if (shown) {
    followRemote({}, true);  // its folder is there now: the run's row, then its curves
    return;
  }
  openPaths({remoteLocation(at, parentOf(pathToStd(runDir)))});
}

void MainWindow::showRemoteTrainingRun() {
  const QString dir = m_train->remoteRunDir();
  if (dir.isEmpty()) return;
  for (const CurveRun& r : m_curves->runs()) {
    if (r.remote.isEmpty() || r.path != dir) continue;
    // Its final checkpoint in the browser: the trainer has finished there.
    // (That run's row alone: this runs at every live update.)
    QString final;
    if (const std::optional<BrowseGroup> g = m_model->group(m_model->indexOfRun(dir)))
      for (const CheckpointEntry& c : g->checkpoints)
        if (c.kind == CheckpointKind::Final) final = pathFromStd(c.path);
    m_train->showRemoteRun(r, final);
  }
}

void MainWindow::stopRemoteTraining(const QString& location, qint64 pid, const QString& jobId) {
  std::optional<remote::RemotePath> where;
  try {
    where = remote::parseRemotePath(pathToStd(location));
  } catch (const std::invalid_argument&) {
  }
  if (!where) {
    m_train->remoteStopFinished(false, tr("%1 is not on another machine").arg(location));
    return;
  }
  const QString host = fromStd(where->host);
  m_remoteStopPoll.stop();  // its question would replace this one
  m_remote->stopAt = *where;
  remote::StopRequest& request = m_remote->stopRequest;
  request = {};
  request.runDir = where->path;
  request.pid = pid;
  request.jobId = pathToStd(jobId);
  statusBar()->showMessage(tr("Asking %1 to stop the run...").arg(host));
  m_remote->stop.start(
      [connections = m_remote->connections, at = *where, request](JobProgress&) {
        connections->call(at, "open", Json{{"path", request.runDir}});
        try {
          return remote::stopResultFromJson(
              connections->call(at, "stop", remote::stopParams(request)));
        } catch (const remote::RemoteError& e) {
          if (e.code() != "unknown_method") throw;
          throw std::runtime_error(
              "the ckptscope-cli there cannot stop a run (too old): update it, or stop the "
              "trainer there with kill PID (it saves a checkpoint first)");
        }
      },
      [this, host, runDir = m_train->remoteRunDir()](
          JobOutcome outcome, std::optional<remote::StopResult> r, const QString& error) {
        if (!m_train->isFollowingRemoteRun() || m_train->remoteRunDir() != runDir)
          return;  // no longer followed (Stop following, another run)
        if (outcome != JobOutcome::Done || !r) {
          const QString message = outcome == JobOutcome::Cancelled
                                      ? tr("Not stopped on %1").arg(host)
                                      : tr("Not stopped on %1: %2").arg(host, error);
          statusBar()->showMessage(message, 10000);
          m_train->remoteStopFinished(false, message);
          m_remoteStopPoll.setInterval(kFollowPollMs);  // it is still followed
          m_remoteStopPoll.start();
          return;
        }
        const QString who =
            !r->jobId.empty() ? tr("job %1").arg(fromStd(r->jobId)) : tr("pid %1").arg(r->pid);
        if (r->running) {
          m_train->remoteStopFinished(
              true, r->signalled
                        ? tr("Stopping on %1: %2 finishes the step in flight, then writes a "
                             "checkpoint…")
                              .arg(host, who)
                        : tr("Stopping on %1: %2 was already asked to stop (not signalled "
                             "again)…")
                              .arg(host, who));
          m_remoteStopPoll.setInterval(kStoppingPollMs);
          m_remoteStopPoll.start();
        } else {
          m_train->remoteRunEnded(fromStd(r->outcome), r->step, fromStd(r->checkpoint),
                                  fromStd(r->log));
          followRemote({}, true);  // its checkpoint in the browser
        }
      });
}

void MainWindow::pollRemoteStop() {
  // Stop asked it (kStoppingPollMs), or it is only followed (kFollowPollMs).
  if (!m_remote->stopAt || !m_train->isFollowingRemoteRun() || m_remote->stop.isRunning()) return;
  remote::StopRequest request = m_remote->stopRequest;
  request.signal = false;  // how it stands: nothing is sent again
  const QString runDir = m_train->remoteRunDir();
  m_remote->stop.start(
      [connections = m_remote->connections, at = *m_remote->stopAt, request](JobProgress&) {
        connections->call(at, "open", Json{{"path", request.runDir}});
        return remote::stopResultFromJson(
            connections->call(at, "stop", remote::stopParams(request)));
      },
      [this, runDir](JobOutcome outcome, std::optional<remote::StopResult> r,
                     const QString& error) {
        if (!m_train->isFollowingRemoteRun() || m_train->remoteRunDir() != runDir)
          return;  // no longer followed (Stop following, another run)
        if (outcome == JobOutcome::Failed)
          m_train->remoteRunUnanswered(error);
        else if (outcome == JobOutcome::Done)
          m_train->remoteRunUnanswered({});
        if (outcome != JobOutcome::Done || !r || r->running) {
          // Still training, or finishing its step (or the connection is being restored, or
          // SLURM's squeue cannot be asked there): asked again.
          m_remoteStopPoll.setInterval(m_train->isRemoteStopping() ? kStoppingPollMs
                                                                   : kFollowPollMs);
          m_remoteStopPoll.start();
          return;
        }
        m_train->remoteRunEnded(fromStd(r->outcome), r->step, fromStd(r->checkpoint),
                                fromStd(r->log));
        statusBar()->showMessage(tr("The run on %1 has ended").arg(fromStd(m_remote->stopAt->host)),
                                 10000);
        followRemote({}, true);  // its checkpoint in the browser, its last curve points
      });
}

}  // namespace ckpt
