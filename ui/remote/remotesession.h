#pragma once
// What the window keeps of the remote location it shows (mainwindow_remote.cpp):
// the agents (one per host, kept open), where it is, the offsets a refresh
// reads on from, and the one job that loads or refreshes it.

#include <QString>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backgroundjob.h"
#include "ckpt/remote/launch_wire.h"
#include "ckpt/remote/remote_path.h"
#include "remote/remoteconnections.h"
#include "remote/remotefolder.h"
#include "remote/remotewatch.h"

namespace ckpt {

// What the host answered a Resume / Fine-tune started there: the plan
// (for SLURM: the script to show), or the run started or submitted.
struct RemoteLaunchAnswer {
  std::optional<remote::LaunchPlan> plan;
  std::optional<remote::LaunchResult> result;
};

struct RemoteSession {
  explicit RemoteSession(QObject* context)
      : job(context), follow(context), launch(context), stop(context) {}

  // Shared with the jobs: a job still waiting for a host when the window
  // closes keeps them alive until it returns.
  std::shared_ptr<RemoteConnections> connections = std::make_shared<RemoteConnections>();
  std::optional<remote::RemotePath> where;  // what is shown; nothing: local paths
  QString location;                         // as the person wrote it
  std::map<std::string, RemoteFile> files;  // the curves' files on the host, by path
  // For the Curves tab when the rows are in: all runs read anew, or what they gained.
  std::vector<CurveRun> curves;
  bool curvesReloaded = false;
  std::vector<RemoteBatch> batches;
  BackgroundJob<RemoteRefresh> job;
  // Following the location without F5 (mainwindow_remote.cpp): the watch's
  // own connection, and the refresh it asks for (what changed: only the
  // curves' files, or more). A change seen while one runs is read after it.
  RemoteWatch watch;
  std::chrono::steady_clock::time_point listedAt;  // when the shown listing was asked for
  BackgroundJob<RemoteRefresh> follow;
  bool followPending = false;
  RefreshScope followScope{/*rows=*/false, /*rereadCurves=*/false};
  BackgroundJob<RemoteLaunchAnswer> launch;  // mainwindow_remote_train.cpp
  // Stop on a run started there (mainwindow_remote_train.cpp): the host's
  // agent asked once, then how it stands until the trainer has ended.
  BackgroundJob<remote::StopResult> stop;
  std::optional<remote::RemotePath> stopAt;  // the run's folder on its host
  remote::StopRequest stopRequest;
  bool describing = false;  // the window's summary job asks the host for a checkpoint
  bool tensorBusy = false;  // the Tensor tab's statistics are computed on the host
  // `ckptscope --view compare ssh://host/a.pt b.pt`: the file here the
  // host's checkpoint is compared with once its location is listed.
  QString compareWithHere;
};

}  // namespace ckpt
