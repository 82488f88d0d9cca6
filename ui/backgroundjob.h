#pragma once
// The one way ui/ runs work off the GUI thread.
//
// A BackgroundJob<T> lives in a widget and runs one request at a time on
// ui/'s own thread pool (workpool.h). The newest request wins: start() cancels the job
// still running and drops its result, so a late answer to an old question
// never reaches the screen. The work reports progress and learns that it
// should stop through a JobProgress it shares with the GUI thread (atomics
// only: no pointer into a widget crosses threads). Its end is one of three
// outcomes, kept apart: done, cancelled (what was computed before the stop
// is still handed over) or failed (the exception's message). While it runs
// `onProgress` is called on the GUI thread every `intervalMs`.
//
// The owner's destructor (the job is a member) cancels and waits: the work
// returns within one progress report.

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "workpool.h"

namespace ckpt {

enum class JobOutcome { Done, Cancelled, Failed };

class JobProgress {
 public:
  // The worker's report; false once the job is cancelled or superseded.
  bool report(uint64_t done, uint64_t total) {
    m_done = done;
    m_total = total;
    return !m_cancel.load();
  }
  // Work made of parts (Drift: one pair of checkpoints after the other).
  void setPart(int part, int parts) {
    m_part = part;
    m_parts = parts;
  }
  [[nodiscard]] bool cancelled() const { return m_cancel.load(); }
  void cancel() { m_cancel = true; }
  [[nodiscard]] uint64_t done() const { return m_done.load(); }
  [[nodiscard]] uint64_t total() const { return m_total.load(); }
  [[nodiscard]] int part() const { return m_part.load(); }
  [[nodiscard]] int parts() const { return m_parts.load(); }
  // done / total in [0, 1]; 0 while the total is unknown.
  [[nodiscard]] double fraction() const {
    const uint64_t t = total();
    return t ? double(done()) / double(t) : 0.0;
  }

 private:
  std::atomic<bool> m_cancel{false};
  std::atomic<uint64_t> m_done{0};
  std::atomic<uint64_t> m_total{0};
  std::atomic<int> m_part{0};
  std::atomic<int> m_parts{0};
};

namespace detail {

// (The result is held by a pointer: a QFutureWatcher hands out copies of
// what the job returned, and a copy of a scan's 50,000 checkpoints took
// as long on the GUI thread as listing the last of them.)
template <typename T>
struct JobEnd {
  JobOutcome outcome = JobOutcome::Failed;
  std::shared_ptr<T> result;
  QString error;
  // The result, moved out (once: the one `done` given this end takes it).
  std::optional<T> take() { return result ? std::optional<T>(std::move(*result)) : std::nullopt; }
};

// Runs `work` on workPool() with `progress`; `done` gets its end on
// `context`'s thread. Both job classes below start their work here.
template <typename T>
QFuture<JobEnd<T>> launch(QObject* context, std::function<T(JobProgress&)> work,
                          std::shared_ptr<JobProgress> progress,
                          std::function<void(JobEnd<T>)> done) {
  auto* watcher = new QFutureWatcher<JobEnd<T>>(context);
  QObject::connect(watcher, &QFutureWatcherBase::finished, context,
                   [watcher, done = std::move(done)] {
                     watcher->deleteLater();
                     done(watcher->result());
                   });
  QFuture<JobEnd<T>> future =
      QtConcurrent::run(workPool(), [work = std::move(work), progress]() -> JobEnd<T> {
        JobEnd<T> end;
        try {
          end.result = std::make_shared<T>(work(*progress));
          end.outcome = progress->cancelled() ? JobOutcome::Cancelled : JobOutcome::Done;
        } catch (const std::exception& e) {
          end.outcome = progress->cancelled() ? JobOutcome::Cancelled : JobOutcome::Failed;
          end.error = QString::fromStdString(e.what());
        }
        return end;
      });
  watcher->setFuture(future);
  return future;
}

}  // namespace detail

template <typename T>
class BackgroundJob {
 public:
  // Runs on a pool thread. Throw to fail (the message is shown); return
  // early when progress.cancelled() (the outcome is then Cancelled).
  using Work = std::function<T(JobProgress& progress)>;
  // On the GUI thread, for the newest request only. `result` is empty when
  // the work failed.
  using Finish =
      std::function<void(JobOutcome outcome, std::optional<T> result, const QString& error)>;
  using Progress = std::function<void(const JobProgress& progress)>;

  explicit BackgroundJob(QObject* context, int intervalMs = 100) : m_context(context) {
    m_timer.setInterval(intervalMs);
    QObject::connect(&m_timer, &QTimer::timeout, context, [this] {
      if (m_current && m_onProgress) m_onProgress(m_current->progress);
    });
  }
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  ~BackgroundJob() {
    cancel();
    waitForFinished();
  }

  void start(Work work, Finish finish, Progress onProgress = {}) {
    cancel();  // the older job stops soon; its result is dropped
    auto run = std::make_shared<Run>();
    run->finish = std::move(finish);
    m_current = run;
    m_onProgress = std::move(onProgress);
    m_future = detail::launch<T>(m_context, std::move(work),
                                 std::shared_ptr<JobProgress>(run, &run->progress),
                                 [this, run](detail::JobEnd<T> end) {
                                   if (run != m_current) return;  // superseded by a newer request
                                   m_current.reset();
                                   m_timer.stop();
                                   if (run->finish) run->finish(end.outcome, end.take(), end.error);
                                 });
    m_timer.start();
  }

  // The running job stops at its next progress report; its finish is still called (Cancelled).
  void cancel() {
    if (m_current) m_current->progress.cancel();
  }
  // Cancels and forgets the running job: its finish is never called.
  void drop() {
    cancel();
    m_current.reset();
    m_timer.stop();
  }
  [[nodiscard]] bool isRunning() const { return m_current != nullptr; }
  [[nodiscard]] const JobProgress* progress() const {
    return m_current ? &m_current->progress : nullptr;
  }
  void waitForFinished() { m_future.waitForFinished(); }

 private:
  struct Run {
    JobProgress progress;
    Finish finish;
  };

  QObject* m_context;
  QTimer m_timer;
  std::shared_ptr<Run> m_current;
  Progress m_onProgress;
  QFuture<detail::JobEnd<T>> m_future;
};

// Many jobs at once, one per key (a run directory being re-read, a block of
// a tensor's values), for owners that keep many answers rather than the
// newest one. Per key the newest request wins: start() on a key whose job
// still runs cancels it and drops its result. dropAll() forgets every
// running job (new roots, a new tensor); the destructor cancels them all
// and waits. No progress timer: these jobs are short.
template <typename Key, typename T>
class BackgroundJobs {
 public:
  using Work = typename BackgroundJob<T>::Work;
  using Finish = typename BackgroundJob<T>::Finish;

  explicit BackgroundJobs(QObject* context) : m_context(context) {}
  BackgroundJobs(const BackgroundJobs&) = delete;
  BackgroundJobs& operator=(const BackgroundJobs&) = delete;
  ~BackgroundJobs() {
    dropAll();
    for (QFuture<detail::JobEnd<T>>& f : m_futures) f.waitForFinished();
  }

  void start(const Key& key, Work work, Finish finish) {
    if (auto it = m_running.find(key); it != m_running.end()) it->second->progress.cancel();
    auto run = std::make_shared<Run>();
    run->finish = std::move(finish);
    m_running[key] = run;
    // Finished futures are let go as new ones come: the list stays short.
    m_futures.erase(std::remove_if(m_futures.begin(), m_futures.end(),
                                   [](const auto& f) { return f.isFinished(); }),
                    m_futures.end());
    m_futures.push_back(detail::launch<T>(m_context, std::move(work),
                                          std::shared_ptr<JobProgress>(run, &run->progress),
                                          [this, key, run](detail::JobEnd<T> end) {
                                            const auto it = m_running.find(key);
                                            if (it == m_running.end() || it->second != run)
                                              return;  // dropped
                                            m_running.erase(it);
                                            if (run->finish)
                                              run->finish(end.outcome, end.take(), end.error);
                                          }));
  }
  [[nodiscard]] bool isRunning(const Key& key) const { return m_running.count(key) > 0; }
  [[nodiscard]] size_t runningCount() const { return m_running.size(); }
  // Cancels every running job; none of their finishes is called.
  void dropAll() {
    for (auto& [key, run] : m_running) run->progress.cancel();
    m_running.clear();
  }

 private:
  struct Run {
    JobProgress progress;
    Finish finish;
  };

  QObject* m_context;
  std::map<Key, std::shared_ptr<Run>> m_running;
  std::vector<QFuture<detail::JobEnd<T>>> m_futures;
};

}  // namespace ckpt
