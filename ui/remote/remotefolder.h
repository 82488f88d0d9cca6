#pragma once
// A folder on another machine, as the window shows it: the runs of the
// host's scan as browser rows and their metric series as curves, made of
// the agent's answers (docs/REMOTE.md: scan with full, metrics, metrics
// since). The converters are plain functions (tests/ui/tst_remote_app and
// tests/core/tst_remote_scan check them against the same folder read
// here); the loaders run on a worker thread.

#include <QString>
#include <map>
#include <string>
#include <vector>

#include "browser/pathscan.h"
#include "ckpt/index/metrics.h"
#include "ckpt/remote/remote_path.h"
#include "curves/curverun.h"

namespace ckpt {

class JobProgress;
class RemoteConnections;

// Whether `location` names a place on another machine (ckpt::remote::parseRemotePath;
// a malformed ssh:// URL counts: opening it says what is wrong).
[[nodiscard]] bool isRemoteLocation(const QString& location);

// "host:run": how a remote run is named in the browser and the Curves tab.
[[nodiscard]] QString remoteRunName(const remote::RemotePath& where, const std::string& run);
// "ssh://[user@]host[:port]/path" of a path on `where`'s host.
[[nodiscard]] QString remoteLocation(const remote::RemotePath& where, const std::string& path);

// The browser's rows for a host's scan, as scanPaths makes them of a local
// one, each run named remoteRunName and marked with its location.
[[nodiscard]] std::vector<BrowseGroup> remoteGroups(ScanResult scan,
                                                    const remote::RemotePath& where);
// A run's curves from the agent's metrics (curveRunFromMetrics), marked as remote.
[[nodiscard]] CurveRun remoteCurveRun(RunMetrics metrics, const remote::RemotePath& where);

// What a refresh asks the agent (`metrics since`) and how it merges the answer.
struct RemoteFile {
  uint64_t offset = 0;  // where the next read starts
  MetricSource kind = MetricSource::MetricsJsonl;
  std::vector<QString> runs;  // the paths of the runs that read it
};

// A remote folder read whole: rows, curves, and its metrics files.
struct RemoteFolder {
  std::vector<BrowseGroup> groups;
  std::vector<CurveRun> curves;
  std::map<std::string, RemoteFile> files;  // by path on the host
};

// What a remote run's file gained since the last read, for CurvesView::addLivePoints.
struct RemoteBatch {
  QString runPath;
  LiveSource source;
  MetricPoints points;
};

// A refresh: the rows again, and either the curves' new points (`batches`)
// or, when a file was rewritten, one of several runs' logs gained lines or
// the runs changed, all the curves read again (`reloaded`, then `folder.curves`).
struct RemoteRefresh {
  RemoteFolder folder;  // groups always; curves only when `reloaded`
  bool reloaded = false;
  bool sbatch = false;  // the host's agent has SLURM's sbatch (hello)
  std::vector<RemoteBatch> batches;
};

// Worker thread. Open (or reuse) the host's agent, open the folder as a
// root, scan it and read its runs' curves. Progress is reported as parts
// (1 connecting, 2 scanning, 3 reading the curves). Throws
// ckpt::remote::RemoteError (what to do) or std::runtime_error (an answer
// that cannot be read).
[[nodiscard]] RemoteFolder loadRemoteFolder(RemoteConnections& connections,
                                            const remote::RemotePath& where, JobProgress& progress);
// What a refresh reads: the rows (F5, a watch that saw other files change),
// or only what the curves' files gained (a watch that saw only them grow);
// `rereadCurves`: every curve read again (after the watch's connection was
// lost, a checkpoint added: markers and new logs).
struct RefreshScope {
  bool rows = true;
  bool rereadCurves = false;
};

// Worker thread: the rows again, and what `files` gained since their offsets.
[[nodiscard]] RemoteRefresh refreshRemoteFolder(RemoteConnections& connections,
                                                const remote::RemotePath& where,
                                                const std::map<std::string, RemoteFile>& files,
                                                const std::vector<QString>& shownRuns,
                                                JobProgress& progress, RefreshScope scope = {});

}  // namespace ckpt
