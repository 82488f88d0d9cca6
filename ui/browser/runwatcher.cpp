#include "browser/runwatcher.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <filesystem>

#include "ckpt/index/accelerate.h"
#include "ckpt/index/filesystem_kind.h"
#include "ckpt/index/hf_trainer.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/mlflow.h"
#include "textformat.h"
#include "workpool.h"

namespace ckpt {
namespace {

QString cleanAbsolute(const QString& path) {
  return QDir::cleanPath(QFileInfo(path).absoluteFilePath());
}

// The directories below `dir` (not hidden ones: .git, .cache, ...).
QStringList subdirectories(const QString& dir) {
  // Hidden folders are neither listed nor walked; a link to a folder is
  // listed, not followed. (A regular expression built for every folder was
  // most of opening 1,000 runs' watch.)
  QStringList out;
  std::error_code ec;
  namespace fs = std::filesystem;
  fs::recursive_directory_iterator it(pathToStd(dir), fs::directory_options::skip_permission_denied,
                                      ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    std::error_code tec;
    if (!it->is_directory(tec)) continue;
    if (it->path().filename().native().starts_with('.')) {
      it.disable_recursion_pending();
      continue;
    }
    out << pathFromStd(it->path().string());
  }
  return out;
}

// A directory's modification time: what changes when an entry is added,
// removed or renamed in it (what inotify's directoryChanged reports).
qint64 directoryStamp(const QString& dir) {
  const QFileInfo info(dir);
  return info.isDir() ? info.lastModified().toMSecsSinceEpoch() : -1;
}

}  // namespace

RunWatcher::RunWatcher(QObject* parent) : QObject(parent) {
  m_debounce.setSingleShot(true);
  m_debounce.setInterval(200);  // a copy or a save touches a directory many times
  m_recheck.setSingleShot(true);
  connect(&m_fs, &QFileSystemWatcher::directoryChanged, this, &RunWatcher::onDirectoryChanged);
  connect(&m_debounce, &QTimer::timeout, this, &RunWatcher::rescanDirty);
  connect(&m_recheck, &QTimer::timeout, this, [this] {
    for (auto it = m_pending.cbegin(); it != m_pending.cend(); ++it)
      if (!it.value().isEmpty()) m_dirty.insert(it.key());
    rescanDirty();
  });
  m_poll.setSingleShot(true);
  connect(&m_poll, &QTimer::timeout, this, &RunWatcher::poll);
  connect(&m_pollWatch, &QFutureWatcher<QHash<QString, qint64>>::finished, this,
          &RunWatcher::onPolled);
}

RunWatcher::~RunWatcher() {
  stop();
}  // m_jobs waits for what still runs

void RunWatcher::stop() {
  m_trees.drop();
  m_jobs.dropAll();
  m_debounce.stop();
  m_recheck.stop();
  if (!m_fs.directories().isEmpty()) m_fs.removePaths(m_fs.directories());
  m_poll.stop();
  m_polled.clear();
  m_pollReason.clear();
  m_pollMs = kPollMinMs;
  m_roots.clear();
  m_dirty.clear();
  m_pending.clear();
}

void RunWatcher::watch(const QStringList& roots) {
  stop();
  for (const QString& r : roots) {
    if (!QFileInfo(r).isDir()) continue;
    m_roots << cleanAbsolute(r);
    if (qEnvironmentVariableIntValue("CKPTSCOPE_POLL") != 0)
      m_pollReason.insert(m_roots.back(), QStringLiteral("CKPTSCOPE_POLL"));
    else if (const auto fs = networkFilesystem(pathToStd(m_roots.back())))
      m_pollReason.insert(m_roots.back(), fromStd(*fs));
  }
  // The folders below the roots are listed off the GUI thread (1,000 runs
  // of 50 checkpoints: 51,000 entries, a tenth of opening them), then
  // watched, or polled from their modification times then.
  m_trees.start(
      [roots = m_roots, polled = m_pollReason](JobProgress& progress) {
        std::vector<Tree> trees;
        for (const QString& root : roots) {
          if (progress.cancelled()) break;
          trees.push_back(treeOf(root, polled.contains(root)));
        }
        return trees;
      },
      [this](JobOutcome outcome, std::optional<std::vector<Tree>> trees, const QString&) {
        if (outcome != JobOutcome::Done || !trees) return;
        for (const Tree& t : *trees) addFolders(t);
        if (!m_polled.isEmpty()) m_poll.start(m_pollMs);
      });
}

bool RunWatcher::isWatched(const QString& dir) const {
  return m_polled.contains(dir) || m_fs.directories().contains(dir);
}

void RunWatcher::poll() {
  if (m_pollWatch.isRunning()) return;  // a slow server: onPolled starts the next
  m_pollWatch.setFuture(QtConcurrent::run(workPool(), [dirs = m_polled.keys()] {
    QHash<QString, qint64> stamps;
    for (const QString& d : dirs) stamps.insert(d, directoryStamp(d));
    return stamps;
  }));
}

void RunWatcher::onPolled() {
  if (m_roots.isEmpty()) return;  // stopped meanwhile
  bool changed = false;
  const QHash<QString, qint64> stamps = m_pollWatch.result();
  for (auto it = stamps.cbegin(); it != stamps.cend(); ++it) {
    const auto known = m_polled.find(it.key());
    if (known == m_polled.end() || known.value() == it.value()) continue;
    known.value() = it.value();
    onDirectoryChanged(it.key());
    changed = true;
  }
  // Back off while nothing changes; a change brings the poll back to 1 s.
  m_pollMs = changed ? kPollMinMs : std::min(m_pollMs * 2, kPollMaxMs);
  m_poll.start(m_pollMs);
}

QStringList RunWatcher::pendingFiles() const {
  QStringList out;
  for (const QStringList& files : m_pending) out << files;
  return out;
}

RunWatcher::Tree RunWatcher::treeOf(const QString& dir, bool polled) {
  Tree t;
  t.dirs = subdirectories(dir);
  t.dirs.prepend(dir);
  if (polled)
    for (const QString& d : t.dirs) t.stamps << directoryStamp(d);
  return t;
}

void RunWatcher::addTree(const QString& dir) {
  addFolders(treeOf(dir, m_pollReason.contains(rootOf(dir))));
}

void RunWatcher::addFolders(const Tree& tree) {
  if (!tree.stamps.isEmpty()) {
    for (qsizetype i = 0; i < tree.dirs.size(); ++i) m_polled.insert(tree.dirs[i], tree.stamps[i]);
    return;
  }
  const QStringList listed = m_fs.directories();
  const QSet<QString> watched(listed.begin(), listed.end());
  QStringList fresh;
  for (const QString& d : tree.dirs)
    if (!watched.contains(d)) fresh << d;
  if (!fresh.isEmpty()) m_fs.addPaths(fresh);
}

QString RunWatcher::rootOf(const QString& dir) const {
  QString best;
  for (const QString& r : m_roots)
    if ((dir == r || dir.startsWith(r + '/')) && r.size() > best.size()) best = r;
  return best;
}

QString RunWatcher::runName(const QString& root, const QString& dir) const {
  // As scanPaths names runs: relative to the root, prefixed with the root's
  // name when several directories are open.
  const QString prefix = m_roots.size() > 1 ? QFileInfo(root).fileName() + "/" : QString();
  return prefix + pathFromStd(runNameFor(pathToStd(root), pathToStd(dir)));
}

void RunWatcher::onDirectoryChanged(const QString& dir) {
  m_dirty.insert(cleanAbsolute(dir));
  m_debounce.start();
}

struct RunWatcher::Job {
  QString root, dir, name;
  int settleMs = 0;

  Result operator()() const {
    Result r;
    r.dir = dir;
    if (!QFileInfo(dir).isDir()) {
      r.gone = true;
      return r;
    }
    r.subdirs = subdirectories(dir);
    r.run.kind = BrowseGroup::Kind::Run;
    r.run.name = name;
    r.run.path = dir;
    try {
      const QDateTime now = QDateTime::currentDateTimeUtc();
      RunEntry run =
          scanRunDirectory(pathToStd(root), pathToStd(dir), [&](const CheckpointEntry& e) {
            if (e.error.empty()) return true;
            const QString path = pathFromStd(e.path);
            // Unreadable and touched a moment ago: still being written.
            const qint64 age = QFileInfo(path).lastModified().toUTC().msecsTo(now);
            if (age >= 0 && age < settleMs) {
              r.pending << path;
              return false;
            }
            return true;
          });
      takeRun(r.run, std::move(run));
    } catch (const std::exception& e) {
      r.run.error = fromStd(e.what());
    }
    return r;
  }
};

void RunWatcher::rescanDirty() {
  // A Trainer's checkpoint-<step>/ folder is a checkpoint of the run in its
  // parent (hf_trainer.h): what is written into it changes that run.
  // So are Megatron's iter_<N>/ (and their mp_rank_*/) and release/
  // folders, torchtitan's checkpoint/step-<N>/ (of the dump folder) and a
  // Lightning run's checkpoints/ folder. By name, so that a removed folder
  // still rescans its run (scanRunDirectory's list of the same folders).
  for (const QString& dir : QSet<QString>(m_dirty)) {
    const QFileInfo info(dir);
    const std::string name = pathToStd(info.fileName());
    const QString parent = info.absolutePath();
    const std::string parentName = pathToStd(QFileInfo(parent).fileName());
    if (hfCheckpointFolderStep(name) || megatronIterationOf(name) || name == "release" ||
        name == "checkpoint" || name == "checkpoints")
      m_dirty.insert(parent);
    else if (isMegatronRankName(name) || parentName == "checkpoint")
      m_dirty.insert(QFileInfo(parent).absolutePath());
    // An Accelerate save_state folder (recognised once its random_states
    // file is written: its later writes mark it again) is a checkpoint of
    // the run above it; an MLflow run's artifacts/ folders hold its checkpoints.
    else if (const std::string abs = pathToStd(info.absoluteFilePath());
             isAccelerateStateFolder(abs))
      m_dirty.insert(pathFromStd(accelerateRunOf(abs)));
    else if (const std::optional<std::string> run = mlflowRunOf(abs + "/file"))
      m_dirty.insert(pathFromStd(*run));
  }
  const QSet<QString> dirty = m_dirty;
  for (const QString& dir : dirty) {
    if (m_jobs.isRunning(dir)) continue;  // rescanned again when that job is done
    m_dirty.remove(dir);
    const QString root = rootOf(dir);
    if (root.isEmpty()) continue;
    const Job job{root, dir, runName(root, dir), m_settleMs};
    m_jobs.start(
        dir, [job](JobProgress&) { return job(); },
        [this](JobOutcome, std::optional<Result> result, const QString&) {
          if (result)
            onJobDone(*result);  // Job reports its own errors in the result
          else if (!m_dirty.isEmpty())
            m_debounce.start();
        });
  }
}

void RunWatcher::onJobDone(const Result& result) {
  m_pending.remove(result.dir);
  if (result.gone) {
    emit runRemoved(result.dir);
  } else {
    // New directories (a run copied in whole) are watched and read too.
    for (const QString& d : result.subdirs) {
      if (isWatched(d)) continue;
      addTree(d);
      m_dirty.insert(d);
    }
    if (!result.pending.isEmpty()) {
      m_pending.insert(result.dir, result.pending);
      m_recheck.start(std::max(100, m_settleMs / 4));
    }
    if (result.run.checkpoints.empty() && result.run.error.isEmpty() &&
        result.run.metricFiles.empty())
      emit runRemoved(result.dir);
    else
      emit runChanged(result.run);
  }
  if (!m_dirty.isEmpty()) m_debounce.start();
}

}  // namespace ckpt
