#include "remote/remotewatch.h"

#include <QMetaObject>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "ckpt/remote/agent_client.h"
#include "ckpt/version.h"
#include "remote/sshquestions.h"
#include "textformat.h"

namespace ckpt {

using Json = nlohmann::ordered_json;

// What the watch's thread and the window share. The thread outlives the
// RemoteWatch when it is stopped while ssh is still connecting: it only
// touches this, and posts to `owner` while that is set.
struct RemoteWatch::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  RemoteWatch* owner = nullptr;          // null once stopped
  remote::AgentClient* agent = nullptr;  // the connection now, for interrupt()
  std::atomic<bool> stopping{false};
  bool finished = false;  // the thread has returned

  // Calls `f` on the owner's (GUI) thread, unless stopped by then.
  // (A call still queued when the owner is deleted is dropped with it.)
  template <typename F>
  void post(F f) {
    std::lock_guard lock(mutex);
    if (!owner) return;
    QMetaObject::invokeMethod(
        owner, [w = owner, f = std::move(f)] { f(w); }, Qt::QueuedConnection);
  }
};

namespace {

// How long ago `listedAt` was, with a margin for the host's file times
// (coarse on some network filesystems) and for when the host listed it;
// capped: a watch started long after has little to catch up on.
int64_t recentMs(std::chrono::steady_clock::time_point listedAt) {
  if (listedAt == std::chrono::steady_clock::time_point{}) return 0;
  const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - listedAt);
  return std::clamp<int64_t>(ago.count() + 2000, 0, 600000);
}

void follow(std::shared_ptr<RemoteWatch::Shared> shared, remote::RemotePath where,
            std::chrono::steady_clock::time_point listedAt, int intervalMs) {
  int failures = 0;
  bool again = false;
  while (!shared->stopping) {
    QString why;
    bool loginFailed = false;
    try {
      // On the window's login to the host (connectAppAgent): it waits while
      // another connection there is logging in, and gives up if stopped meanwhile.
      const std::unique_ptr<remote::AgentClient> connected =
          connectAppAgent(where, std::string("ckptscope ") + CKPT_VERSION + " (watch)",
                          [&shared] { return shared->stopping.load(); });
      if (!connected) break;
      remote::AgentClient& agent = *connected;
      {
        std::lock_guard lock(shared->mutex);
        if (shared->stopping) break;
        shared->agent = &agent;
      }
      // The path as the window's requests name it: as given when absolute,
      // else the real path the agent opened (ssh://host/~/x).
      const Json opened = agent.call("open", Json{{"path", where.path}});
      std::string path = where.path;
      if (path.empty() || path.front() != '/') path = opened.value("root", where.path);
      // Once: after a lost connection everything is read again (`again`).
      Json params{{"path", path}, {"interval_ms", intervalMs}};
      if (!again)
        if (const int64_t recent = recentMs(listedAt)) params["recent_ms"] = recent;
      agent.call(
          "watch", std::move(params), {}, [&shared] { return shared->stopping.load(); },
          [&](const Json& event) {
            if (event.contains("watching")) {
              failures = 0;
              shared->post([again](RemoteWatch* w) { emit w->watching(again); });
              return;
            }
            QStringList paths;
            for (const char* kind : {"added", "changed", "removed"})
              if (event.contains(kind) && event[kind].is_array())
                for (const Json& p : event[kind])
                  if (p.is_string()) paths << pathFromStd(p.get<std::string>());
            if (!paths.isEmpty()) shared->post([paths](RemoteWatch* w) { emit w->changed(paths); });
          });
      why = QObject::tr("the host stopped watching %1").arg(pathFromStd(path));
    } catch (const remote::RemoteError& e) {
      why = fromStd(e.what());
      // ssh could not log in (a question cancelled or answered no): asking
      // again every few seconds would put the same dialog up again and
      // again. The window's next listing (F5) starts the watch anew.
      loginFailed = e.code() == "login";
    } catch (const std::exception& e) {
      why = fromStd(e.what());
    }
    {
      std::lock_guard lock(shared->mutex);
      shared->agent = nullptr;
    }
    if (shared->stopping) break;
    if (loginFailed) {
      shared->post([why](RemoteWatch* w) { emit w->lost(why, -1); });
      break;
    }
    const int wait = RemoteWatch::backoffMs(failures++);
    again = true;
    shared->post([why, wait](RemoteWatch* w) { emit w->lost(why, wait); });
    std::unique_lock lock(shared->mutex);
    shared->wake.wait_for(lock, std::chrono::milliseconds(wait),
                          [&shared] { return shared->stopping.load(); });
  }
  std::lock_guard lock(shared->mutex);
  shared->finished = true;
  shared->wake.notify_all();
}

}  // namespace

RemoteWatch::RemoteWatch(QObject* parent) : QObject(parent) {}

RemoteWatch::~RemoteWatch() {
  stop();
}

int RemoteWatch::backoffMs(int failures) {
  return std::min(30000, 1000 << std::clamp(failures, 0, 5));
}

void RemoteWatch::start(const remote::RemotePath& where,
                        std::chrono::steady_clock::time_point listedAt, int intervalMs) {
  stop();
  m_location = pathFromStd(where.display());
  m_shared = std::make_shared<Shared>();
  m_shared->owner = this;
  std::thread(follow, m_shared, where, listedAt, intervalMs).detach();
}

void RemoteWatch::stop() {
  m_location.clear();
  if (!m_shared) return;
  std::shared_ptr<Shared> shared = std::move(m_shared);
  std::unique_lock lock(shared->mutex);
  shared->owner = nullptr;
  shared->stopping = true;
  if (shared->agent) shared->agent->interrupt();
  shared->wake.notify_all();
  // Ends within moments once interrupted; one still connecting (ssh waiting
  // for a host that does not answer) is left to end on its own, posting nothing.
  shared->wake.wait_for(lock, std::chrono::seconds(2), [&shared] { return shared->finished; });
}

}  // namespace ckpt
