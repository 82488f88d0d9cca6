#pragma once
// Following a folder on another machine without F5 (docs/REMOTE.md, `watch`):
// an agent of its own (a second ssh session, so the window's requests never
// wait behind a watch that never ends; on the login the window's connection
// made, remote/sshquestions.h's connectAppAgent, so nothing is asked again),
// asked to poll the folder at an interval and report what changed. When the
// connection drops it is started again after 1 s, 2 s, 4 s ... at most 30 s,
// until it answers again. Everything here runs on a thread of its own; the
// signals arrive on the GUI thread.

#include <QObject>
#include <QString>
#include <QStringList>
#include <chrono>
#include <memory>

#include "ckpt/remote/remote_path.h"

namespace ckpt {

class RemoteWatch : public QObject {
  Q_OBJECT

 public:
  explicit RemoteWatch(QObject* parent = nullptr);
  // Stops (the connection is ended at once, whatever the link does).
  ~RemoteWatch() override;

  // Follows `where` (its host, and its path as the window asked for it);
  // a watch of another place is stopped first. `listedAt`: when what is
  // shown was asked for; what changed on the host since is reported at the
  // watch's first look (`recent_ms`), not only what changes after it.
  void start(const remote::RemotePath& where, std::chrono::steady_clock::time_point listedAt = {},
             int intervalMs = 1000);
  void stop();
  // What is followed ("" when nothing).
  [[nodiscard]] QString location() const { return m_location; }

  // The reconnect delays, in ms: 1000, 2000, 4000, ... at most 30000.
  [[nodiscard]] static int backoffMs(int failures);

 signals:
  // The agent watches (`again`: after the connection was lost: what changed
  // meanwhile was not reported, read it all again).
  void watching(bool again);
  // Files added, changed or removed on the host (paths as the host names them).
  void changed(const QStringList& paths);
  // The connection dropped or could not be made: `why`, and when the next
  // try is; -1: none (ssh could not log in), the watch has ended.
  void lost(const QString& why, int retryMs);

 public:
  struct Shared;  // with the watch's thread (remotewatch.cpp)

 private:
  std::shared_ptr<Shared> m_shared;
  QString m_location;
};

}  // namespace ckpt
