#include "browser/pathscan.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <exception>

#include "ckpt/index/hparams.h"
#include "textformat.h"

namespace ckpt {

std::vector<BrowseGroup> scanPaths(const QStringList& paths, const ScanProgress& progress) {
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
    try {
      ScanResult result = scanDirectory(pathToStd(dir), options);
      for (RunEntry& run : result.runs) {
        dirsDone += run.checkpoints.size();
        BrowseGroup g;
        g.kind = BrowseGroup::Kind::Run;
        g.name = prefix + pathFromStd(run.name);
        g.path = pathFromStd(run.path);
        takeRun(g, std::move(run));
        groups.push_back(std::move(g));
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

void takeRun(BrowseGroup& group, RunEntry&& run) {
  group.hparamFiles = hparamFiles(run);
  group.checkpoints = std::move(run.checkpoints);
  group.trainer = std::move(run.trainer);
  group.metricFiles = std::move(run.metricFiles);
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
