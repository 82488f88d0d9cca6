#pragma once

#include <QFileSystemWatcher>
#include <QObject>
#include <QTimer>
#include <map>
#include <string>
#include <vector>

#include "curves/curverun.h"

namespace ckpt {

// Follows runs while they train: their metrics.jsonl and logs gain lines,
// new ones appear. A file system watcher says when, and a poll (every second
// by default) covers file systems where it says nothing. Reading the new
// lines happens on the caller's thread when it asks: only bytes past each
// file's offset are read, which is little between two polls.
class RunFollower : public QObject {
  Q_OBJECT

 public:
  explicit RunFollower(QObject* parent = nullptr);

  // Watches the runs' directories and files and starts polling.
  void follow(const std::vector<CurveRun>& runs);
  // The same once the events waiting now have run (the chart just drawn is
  // on the screen first: watching a sweep's 2,000 files took 25-35 ms),
  // for the runs `runs` then holds; stop() before that cancels it.
  // `runs` must outlive this object or the call.
  void followSoon(const std::vector<CurveRun>& runs);
  void stop();
  void setPollInterval(int ms) { m_poll.setInterval(ms); }

  // Reads what the runs' files gained since the last call (and files new in
  // their directories from the start), merges it into the runs, and returns
  // per run what changed per metric.
  [[nodiscard]] std::vector<std::map<std::string, SeriesChange>> readNew(
      std::vector<CurveRun>& runs);

 signals:
  // Files may have grown: time to call readNew().
  void changed();

 private:
  QFileSystemWatcher m_watcher;
  QTimer m_poll;
  QTimer m_coalesce;          // a burst of notifications becomes one changed()
  unsigned m_generation = 0;  // stop() counts: a followSoon() of an earlier one is off
};

}  // namespace ckpt
