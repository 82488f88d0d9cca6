#pragma once

#include <QElapsedTimer>
#include <QFileSystemWatcher>
#include <QFutureWatcher>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QStringList>
#include <QTimer>
#include <vector>

#include "backgroundjob.h"
#include "browser/pathscan.h"

namespace ckpt {

// Keeps the browser current while runs grow. It watches the opened
// directories and every directory below them; when one changes it re-reads
// that directory's checkpoints off the GUI thread (metadata only) and
// reports the run's new list. A file that cannot be read yet and was
// modified within the settle time is taken to be still being written (torch
// writes the zip directory last): it is left out and looked at again, so a
// checkpoint appears once it is complete. A file that stays unreadable
// after that shows up with its error.
//
// A root on a network filesystem (NFS, SMB, FUSE such as sshfs, Lustre, ...:
// networkFilesystem) is polled instead, since inotify never sees what other
// machines write there: each directory's modification time is compared, off
// the GUI thread, every second, backing off to every 30 s while nothing
// changes. CKPTSCOPE_POLL=1 polls every root.
class RunWatcher : public QObject {
  Q_OBJECT

 public:
  explicit RunWatcher(QObject* parent = nullptr);
  ~RunWatcher() override;

  // Starts over: `roots` are the opened directories (files opened directly
  // are not watched). The folders below them are listed off the GUI thread
  // and watched (or polled) once listed.
  void watch(const QStringList& roots);
  void stop();
  // How long an unreadable file must stay unchanged before it is listed as
  // broken (default 3 s).
  void setSettleTime(int ms) { m_settleMs = ms; }
  [[nodiscard]] QStringList watchedDirectories() const { return m_fs.directories(); }
  // The directories polled instead (roots on a network filesystem), and why
  // ("nfs", "fuse", ...; "CKPTSCOPE_POLL" when asked to) per polled root.
  [[nodiscard]] QStringList polledDirectories() const { return m_polled.keys(); }
  [[nodiscard]] QHash<QString, QString> polledRoots() const { return m_pollReason; }
  [[nodiscard]] int pollInterval() const { return m_pollMs; }
  static constexpr int kPollMinMs = 1000;
  static constexpr int kPollMaxMs = 30'000;
  // Files left out for now because they are still being written.
  [[nodiscard]] QStringList pendingFiles() const;

 signals:
  // A run directory's checkpoints changed (or a new run appeared).
  void runChanged(const ckpt::BrowseGroup& run);
  // A run directory was deleted or holds no checkpoints any more.
  void runRemoved(const QString& path);

 private:
  struct Job;
  struct Result {
    QString dir;
    bool gone = false;
    BrowseGroup run;
    QStringList pending;
    QStringList subdirs;  // directories below `dir`, to watch as well
  };

  void onDirectoryChanged(const QString& dir);
  void rescanDirty();
  void onJobDone(const Result& result);
  // The folders a watch takes on: `dir` and those below it, with their
  // modification times when they are polled.
  struct Tree {
    QStringList dirs;
    QList<qint64> stamps;
  };
  static Tree treeOf(const QString& dir, bool polled);
  void addTree(const QString& dir);
  void addFolders(const Tree& tree);
  [[nodiscard]] bool isWatched(const QString& dir) const;
  void poll();
  void onPolled();
  [[nodiscard]] QString rootOf(const QString& dir) const;
  [[nodiscard]] QString runName(const QString& root, const QString& dir) const;

  QFileSystemWatcher m_fs;
  QStringList m_roots;
  QSet<QString> m_dirty;
  QHash<QString, QStringList> m_pending;  // dir -> files still being written
  QSet<QString> m_nonEmpty;               // run directories reported with checkpoints
  QTimer m_debounce;
  QTimer m_recheck;
  QHash<QString, qint64> m_polled;       // polled dir -> its mtime (ms) when last seen; -1 gone
  QHash<QString, QString> m_pollReason;  // polled root -> its filesystem
  QTimer m_poll;
  int m_pollMs = kPollMinMs;
  QFutureWatcher<QHash<QString, qint64>> m_pollWatch;
  int m_settleMs = 3000;
  // One re-read per directory at a time; stop() drops them all, so late
  // results of an older watch never arrive.
  BackgroundJobs<QString, Result> m_jobs{this};
  // The folders below the roots, listed when a watch starts.
  BackgroundJob<std::vector<Tree>> m_trees{this};
};

}  // namespace ckpt
