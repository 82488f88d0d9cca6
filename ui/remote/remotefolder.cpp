#include "remote/remotefolder.h"

#include <QCoreApplication>
#include <QObject>
#include <QStringList>
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "backgroundjob.h"
#include "ckpt/remote/hparams_wire.h"
#include "ckpt/remote/metrics_request.h"
#include "ckpt/remote/metrics_wire.h"
#include "ckpt/remote/scan_wire.h"
#include "remote/remoteconnections.h"
#include "textformat.h"

namespace ckpt {
namespace {

using Json = nlohmann::ordered_json;

const Json& member(const Json& j, const char* name, const char* method) {
  if (!j.is_object() || !j.contains(name))
    throw std::runtime_error(std::string("the agent's answer to ") + method + " has no '" + name +
                             "'");
  return j[name];
}

// The kind of a file that fed no series yet (read back by its name as the agent reads it).
MetricSource kindByName(const std::string& file) {
  auto ends = [&file](const char* suffix) {
    const std::string s(suffix);
    return file.size() >= s.size() && file.compare(file.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".jsonl")) return MetricSource::MetricsJsonl;
  if (ends(".log") || ends(".out") || ends(".err") || ends(".txt")) return MetricSource::ConsoleLog;
  return MetricSource::TensorBoard;  // read whole: a change reads the run again
}

// The folder's path as the agent is asked for it: as given when absolute,
// else the real path the agent opened (ssh://host/~/x: one round trip more).
std::string folderPath(RemoteConnections& connections, const remote::RemotePath& where) {
  if (!where.path.empty() && where.path.front() == '/') return where.path;
  const Json opened = connections.call(where, "open", Json{{"path", where.path}});
  const Json& root = member(opened, "root", "open");
  if (!root.is_string()) throw std::runtime_error("the agent's answer to open has no root");
  return root.get<std::string>();
}

// `file`: a location that is one checkpoint file comes back as that file
// in its folder (an agent older than `file` refuses it: "not a directory").
int64_t postScan(remote::AgentClient& agent, const std::string& path) {
  return agent.post("scan", Json{{"path", path}, {"full", true}, {"file", true}});
}

std::vector<BrowseGroup> takeScan(remote::AgentClient& agent, int64_t id,
                                  const remote::RemotePath& where) {
  const Json answer = agent.await(id, "scan");
  // An agent older than `full` sends ls --json's document: listed all the same.
  const Json& doc = answer.contains("scan") ? answer["scan"] : member(answer, "document", "scan");
  std::vector<BrowseGroup> groups = remoteGroups(remote::scanFromWire(doc), where);
  // One file opened: listed as files opened here are, under "Files".
  if (answer.value("file", false))
    for (BrowseGroup& g : groups) {
      g.kind = BrowseGroup::Kind::Files;
      g.name = remoteRunName(where,
                             pathToStd(QCoreApplication::translate("ckpt::BrowseGroup", "Files")));
    }
  return groups;
}

// The runs' curves, asked as ckptscope-cli's remote `metrics` asks (columns,
// the answer read as text), with their hyperparameters (`hparams`, read on
// the host as they are here: readHparams): a sweep groups by them and the
// runs table shows them.
struct CurvesAsked {
  int64_t metrics = -1, hparams = -1;
};

// The hyperparameters are asked first: the host reads them (a sweep's
// RUN.json files) before the curves, whose runs then arrive one by one
// (`stream`), each made a curve here while the host reads the next; asked
// after, they were waited for once the last run was in.
CurvesAsked postCurves(remote::AgentClient& agent, const std::string& path) {
  CurvesAsked asked;
  asked.hparams = remote::postRunHparams(agent, {path});
  asked.metrics = remote::postRunMetrics(agent, {path});
  return asked;
}

void takeCurves(remote::AgentClient& agent, CurvesAsked asked, const remote::RemotePath& where,
                RemoteFolder& folder) {
  std::string hparamsError;
  std::vector<remote::RunHparams> hparams =
      remote::awaitRunHparams(agent, asked.hparams, hparamsError);
  folder.files.clear();
  folder.curves.clear();
  remote::awaitRunMetrics(agent, asked.metrics, [&folder, &where](RunMetrics&& m) {
    for (const auto& [file, offset] : m.readEnds) {
      RemoteFile& f = folder.files[file];
      f.offset = offset;
      f.kind = kindByName(file);
      f.runs.push_back(pathFromStd(m.path));
    }
    for (const MetricSeries& s : m.series)
      for (const std::string& file : s.files)
        if (const auto it = folder.files.find(file); it != folder.files.end())
          it->second.kind = s.source;
    folder.curves.push_back(remoteCurveRun(std::move(m), where));
  });
  // An agent older than `hparams` groups by name only, and the runs say why.
  if (folder.curves.empty()) return;
  if (!hparamsError.empty()) {
    for (CurveRun& run : folder.curves)
      run.problems << QObject::tr(
                          "hyperparameters not read: the host's ckptscope-cli is older "
                          "than `hparams` (%1)")
                          .arg(fromStd(hparamsError));
    return;
  }
  std::map<QString, remote::RunHparams*> byPath;
  for (remote::RunHparams& h : hparams) byPath[pathFromStd(h.path)] = &h;
  for (CurveRun& run : folder.curves)
    if (const auto it = byPath.find(run.path); it != byPath.end()) {
      run.hparams = std::move(it->second->hparams);
      for (const std::string& p : it->second->problems) run.problems << fromStd(p);
    }
}

}  // namespace

bool isRemoteLocation(const QString& location) {
  try {
    return remote::parseRemotePath(pathToStd(location)).has_value();
  } catch (const std::invalid_argument&) {
    return true;
  }
}

QString remoteRunName(const remote::RemotePath& where, const std::string& run) {
  return fromStd(where.host) + ':' + pathFromStd(run);
}

QString remoteLocation(const remote::RemotePath& where, const std::string& path) {
  return pathFromStd(where.locationOf(path));
}

std::vector<BrowseGroup> remoteGroups(ScanResult scan, const remote::RemotePath& where) {
  std::vector<BrowseGroup> groups;
  for (RunEntry& run : scan.runs) {
    BrowseGroup g;
    g.kind = BrowseGroup::Kind::Run;
    g.name = remoteRunName(where, run.name);
    g.path = pathFromStd(run.path);
    g.remote = remoteLocation(where, run.path);
    // hparamFiles stay empty: finding them is a look at the host's folder.
    g.checkpoints = std::move(run.checkpoints);
    g.trainer = std::move(run.trainer);
    g.metricFiles = std::move(run.metricFiles);
    groups.push_back(std::move(g));
  }
  return groups;
}

CurveRun remoteCurveRun(RunMetrics metrics, const remote::RemotePath& where) {
  const QString name = remoteRunName(where, metrics.run);
  const QString path = pathFromStd(metrics.path);
  const QString location = remoteLocation(where, metrics.path);
  CurveRun run = curveRunFromMetrics(name, path, std::move(metrics));
  run.remote = location;
  return run;
}

RemoteFolder loadRemoteFolder(RemoteConnections& connections, const remote::RemotePath& where,
                              JobProgress& progress) {
  RemoteFolder folder;
  progress.setPart(1, 3);  // connecting (or the agent kept from before)
  progress.report(0, 0);
  const std::string path = folderPath(connections, where);
  if (progress.cancelled()) return folder;
  // open, scan, metrics and hparams sent at once: the host scans while the
  // connection's first answer travels, reads the curves while the rows are
  // made here, and the network's round trip is paid once.
  int64_t scan = -1;
  CurvesAsked curves;
  connections.openAndAsk(
      where, path,
      [&](remote::AgentClient& agent) {
        scan = postScan(agent, path);
        curves = postCurves(agent, path);
      },
      [&](remote::AgentClient& agent) {
        progress.setPart(2, 3);
        folder.groups = takeScan(agent, scan, where);
        if (progress.cancelled()) return;  // the curves' answers are skipped by the next wait
        progress.setPart(3, 3);
        takeCurves(agent, curves, where, folder);
      });
  return folder;
}

RemoteRefresh refreshRemoteFolder(RemoteConnections& connections, const remote::RemotePath& where,
                                  const std::map<std::string, RemoteFile>& files,
                                  const std::vector<QString>& shownRuns, JobProgress& progress,
                                  RefreshScope scope) {
  RemoteRefresh out;
  progress.setPart(1, 3);
  progress.report(0, 0);
  const std::string path = folderPath(connections, where);
  bool reload = scope.rereadCurves;
  Json since = Json::object();
  for (const auto& [file, f] : files) since[file] = f.offset;
  out.folder.files = files;
  // The rows and what the files gained, asked at once (one round trip);
  // what the files gained is not used when the rows say the runs changed.
  int64_t scan = -1, gainedId = -1;
  Json answer;
  connections.openAndAsk(
      where, path,
      [&](remote::AgentClient& agent) {
        scan = scope.rows ? postScan(agent, path) : -1;
        gainedId = !reload && !since.empty() ? agent.post("metrics", Json{{"since", since}}) : -1;
      },
      [&](remote::AgentClient& agent) {
        if (scan >= 0) {
          progress.setPart(2, 3);
          out.folder.groups = takeScan(agent, scan, where);
          if (progress.cancelled()) return;
        }
        progress.setPart(3, 3);
        if (gainedId >= 0) answer = agent.await(gainedId, "metrics");
      });
  if (progress.cancelled()) return out;
  if (scope.rows) {
    // A run that is new (or gone) since: every curve is read again.
    const std::set<QString> shown(shownRuns.begin(), shownRuns.end());
    std::set<QString> listed;
    for (const BrowseGroup& g : out.folder.groups) listed.insert(g.path);
    for (const QString& run : listed) reload = reload || !shown.count(run);
    for (const QString& run : shown) reload = reload || !listed.count(run);
  }
  if (!reload && gainedId >= 0) {
    const Json& gained = member(answer, "files", "metrics");
    for (const Json& g : gained) {
      const std::string file = member(g, "file", "metrics").get<std::string>();
      const auto known = out.folder.files.find(file);
      if (known == out.folder.files.end()) continue;
      RemoteFile& f = known->second;
      // Rewritten, or read whole by the agent (trainer_state.json, event files): read again.
      if (g.value("truncated", false) || g.value("reread", false)) {
        reload = true;
        break;
      }
      const Json& points = g.contains("points") ? g["points"] : Json::array();
      if (!points.empty()) {
        // A log several runs read (one job's log): its lines are sorted
        // into runs by the host's reading of the whole run.
        if (f.runs.size() != 1) {
          reload = true;
          break;
        }
        RemoteBatch batch;
        batch.runPath = f.runs.front();
        batch.source.path = pathFromStd(file);
        batch.source.kind = f.kind;
        for (const Json& p : points)
          batch.points.emplace_back(member(p, "metric", "metrics").get<std::string>(),
                                    remote::pointFromWire(member(p, "point", "metrics")));
        out.batches.push_back(std::move(batch));
      }
      f.offset = g.value("to", f.offset);
    }
  }
  if (reload) {
    out.batches.clear();
    CurvesAsked curves;
    connections.openAndAsk(
        where, path, [&](remote::AgentClient& agent) { curves = postCurves(agent, path); },
        [&](remote::AgentClient& agent) { takeCurves(agent, curves, where, out.folder); });
    out.reloaded = true;
  }
  return out;
}

}  // namespace ckpt
