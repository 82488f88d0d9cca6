#include "browser/pathscan.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <exception>
#include <map>

#include "ckpt/index/hparams.h"
#include "ckpt/index/mlflow.h"
#include "textformat.h"

namespace ckpt {

std::vector<BrowseGroup> scanPaths(const QStringList& paths, const ScanProgress& progress,
                                   const ScanRunDone& runDone) {
  QStringList dirs, files;
  for (const QString& p : paths) (QFileInfo(p).isDir() ? dirs : files).append(p);

  const size_t total = size_t(files.size());
  size_t dirsDone = 0;
  bool stopped = false;
  std::vector<BrowseGroup> groups;
  for (const QString& dir : dirs) {
    ScanOptions options;
    // Progress counts files of the current directory plus the directories
    // already done, which is as much as the scanner tells before it starts.
    options.progress = [&](size_t done, size_t dirTotal) {
      if (progress && !progress(dirsDone + done, dirsDone + dirTotal + total)) stopped = true;
      return !stopped;
    };
    const QString prefix =
        dirs.size() > 1 ? QFileInfo(QDir::cleanPath(QDir(dir).absolutePath())).fileName() + "/"
                        : QString();
    auto groupOf = [&prefix](RunEntry&& run) {
      BrowseGroup g;
      g.kind = BrowseGroup::Kind::Run;
      g.name = prefix + pathFromStd(run.name);
      g.path = pathFromStd(run.path);
      takeRun(g, std::move(run));
      return g;
    };
    // The runs handed to runDone, by run folder: each run's group is moved
    // to it (not copied), and the result holds its place with the group
    // without its checkpoints (takeRun looked at the run's folder for its
    // hyperparameter files once), and how many it had.
    std::map<std::string, std::pair<BrowseGroup, size_t>> early;
    if (runDone)
      options.runDone = [&](RunEntry& run) {
        BrowseGroup g = groupOf(std::move(run));
        std::vector<CheckpointEntry> checkpoints = std::move(g.checkpoints);
        g.checkpoints.clear();
        BrowseGroup place = g;
        place.handedOver = true;
        early[run.path] = {std::move(place), checkpoints.size()};
        g.checkpoints = std::move(checkpoints);
        runDone(std::move(g));
      };
    try {
      ScanResult result = scanDirectory(pathToStd(dir), options);
      for (RunEntry& run : result.runs) {
        if (const auto it = early.find(run.path); it != early.end()) {
          dirsDone += it->second.second;
          groups.push_back(std::move(it->second.first));
        } else {
          dirsDone += run.checkpoints.size();
          groups.push_back(groupOf(std::move(run)));
        }
      }
    } catch (const std::exception& e) {
      BrowseGroup g;
      g.name = dir;
      g.path = dir;
      g.error = fromStd(e.what());
      groups.push_back(std::move(g));
    }
    if (stopped) return groups;
  }

  if (!files.isEmpty()) {
    BrowseGroup g;
    g.kind = BrowseGroup::Kind::Files;
    g.name = QCoreApplication::translate("ckpt::BrowseGroup", "Files");
    size_t done = 0;
    for (const QString& f : files) {
      // describeCheckpoint never throws: a missing or broken file comes back with `error`.
      g.checkpoints.push_back(describeCheckpoint(pathToStd(f), pathToStd(QFileInfo(f).fileName())));
      if (progress && !progress(dirsDone + ++done, dirsDone + total)) break;
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

void restoreHandedOver(std::vector<BrowseGroup>& groups, std::vector<BrowseGroup> shown) {
  std::map<QString, BrowseGroup*> byPath;
  for (BrowseGroup& g : shown)
    if (g.kind == BrowseGroup::Kind::Run) byPath.emplace(g.path, &g);
  for (BrowseGroup& g : groups) {
    if (!g.handedOver) continue;
    if (const auto it = byPath.find(g.path); it != byPath.end())
      g.checkpoints = std::move(it->second->checkpoints);
    g.handedOver = false;
  }
}

namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("ckpt::BrowseGroup", text);
}

// meta.yaml's status and times, tags/ (mlflow.h), as the Summary says them.
std::vector<std::pair<QString, QString>> mlflowFacts(const std::string& dir) {
  std::vector<std::pair<QString, QString>> out;
  const MlflowRunInfo info = readMlflowRunInfo(dir);
  auto when = [](int64_t ms) {
    return QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
  };
  if (!info.status.empty()) out.emplace_back(tr("Status"), fromStd(info.status));
  if (info.startMs) out.emplace_back(tr("Started"), when(*info.startMs));
  if (info.endMs) {
    QString ended = when(*info.endMs);
    if (info.startMs && *info.endMs >= *info.startMs) {
      const int64_t s = (*info.endMs - *info.startMs + 500) / 1000;
      ended += tr(" (ran %1)")
                   .arg(s < 60     ? tr("%1 s").arg(s)
                        : s < 3600 ? tr("%1 min %2 s").arg(s / 60).arg(s % 60)
                                   : tr("%1 h %2 min").arg(s / 3600).arg(s % 3600 / 60));
    }
    out.emplace_back(tr("Ended"), ended);
  } else if (info.status == "RUNNING") {
    out.emplace_back(tr("Ended"), tr("not yet (running)"));
  }
  QString tags;
  for (const auto& [key, value] : info.tags) tags += fromStd(key) + " = " + fromStd(value) + "\n";
  if (!tags.isEmpty()) out.emplace_back(tr("Tags"), tags);
  return out;
}

}  // namespace

void takeRun(BrowseGroup& group, RunEntry&& run) {
  group.hparamFiles = hparamFiles(run);
  group.checkpoints = std::move(run.checkpoints);
  group.trainer = std::move(run.trainer);
  group.metricFiles = std::move(run.metricFiles);
  if (group.trainer == kMlflowId) group.facts = mlflowFacts(run.path);
}

bool scanPathsCover(const QStringList& paths, const QString& file) {
  const QString target = QDir::cleanPath(QFileInfo(file).absoluteFilePath());
  for (const QString& p : paths) {
    const QFileInfo info(p);
    const QString path = QDir::cleanPath(info.absoluteFilePath());
    if (path == target || (info.isDir() && target.startsWith(path + QLatin1Char('/')))) return true;
  }
  return false;
}

}  // namespace ckpt
