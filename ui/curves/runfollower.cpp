#include "curves/runfollower.h"

#include <QFileInfo>
#include <algorithm>

namespace ckpt {
namespace {

constexpr int kPollMs = 1000;
constexpr int kCoalesceMs = 20;

}  // namespace

RunFollower::RunFollower(QObject* parent) : QObject(parent) {
  m_poll.setInterval(kPollMs);
  m_coalesce.setSingleShot(true);
  m_coalesce.setInterval(kCoalesceMs);
  connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, [this] { m_coalesce.start(); });
  connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, [this] { m_coalesce.start(); });
  connect(&m_coalesce, &QTimer::timeout, this, &RunFollower::changed);
  connect(&m_poll, &QTimer::timeout, this, &RunFollower::changed);
}

void RunFollower::follow(const std::vector<CurveRun>& runs) {
  stop();
  QStringList paths;
  for (const CurveRun& run : runs) {
    if (!run.remote.isEmpty()) continue;         // the agent's to read (ui/remote)
    if (!run.path.isEmpty()) paths << run.path;  // for a metrics.jsonl or log still to come
    for (const LiveSource& s : run.sources) paths << s.path;
  }
  paths.removeDuplicates();
  if (!paths.isEmpty()) m_watcher.addPaths(paths);  // what it cannot watch is left to the poll
  m_poll.start();
}

void RunFollower::followSoon(const std::vector<CurveRun>& runs) {
  stop();
  QTimer::singleShot(0, this, [this, &runs, generation = m_generation] {
    if (generation == m_generation) follow(runs);
  });
}

void RunFollower::stop() {
  ++m_generation;
  m_poll.stop();
  m_coalesce.stop();
  if (!m_watcher.files().isEmpty()) m_watcher.removePaths(m_watcher.files());
  if (!m_watcher.directories().isEmpty()) m_watcher.removePaths(m_watcher.directories());
}

std::vector<std::map<std::string, SeriesChange>> RunFollower::readNew(std::vector<CurveRun>& runs) {
  std::vector<std::map<std::string, SeriesChange>> changes(runs.size());
  const QStringList watched = m_watcher.files();
  for (size_t i = 0; i < runs.size(); ++i) {
    CurveRun& run = runs[i];
    if (run.path.isEmpty() || !run.remote.isEmpty()) continue;
    // A metrics.jsonl appears with the first logged step; logs may start late too.
    for (const LiveSource& found : findLiveSources(run.path)) {
      const bool known = std::any_of(run.sources.begin(), run.sources.end(),
                                     [&](const LiveSource& s) { return s.path == found.path; });
      if (!known) run.sources.push_back(found);
    }
    for (LiveSource& source : run.sources) {
      const QFileInfo info(source.path);
      if (!info.exists()) continue;
      const uint64_t size = uint64_t(info.size());
      if (size == source.size && size >= source.offset)
        continue;  // nothing new since the last look
      source.size = size;
      // Files replaced by a rename are no longer watched, new ones not yet.
      if (!watched.contains(source.path)) m_watcher.addPath(source.path);
      bool rewritten = false;
      const MetricPoints points = readNewPoints(source, &run.problems, &rewritten);
      for (const auto& [metric, change] : mergeLivePoints(run, source, points, rewritten)) {
        auto [it, added] = changes[i].emplace(metric, change);
        if (!added) it->second.rewritten = it->second.rewritten || change.rewritten;
      }
    }
  }
  return changes;
}

}  // namespace ckpt
