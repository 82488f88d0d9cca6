#include "remote/sshquestions.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>

#include "ckpt/remote/ssh_sharing.h"
#include "textformat.h"

namespace ckpt {
namespace {

std::mutex g_mutex;
std::optional<QString> g_program;  // set, or found once

// The hosts ([user@]host[:port]) a connection is being made to now, in
// the whole process (every window's, every watch's): the next connection
// to one waits for its turn (connectAppAgent).
std::mutex g_turnMutex;
std::condition_variable g_turnDone;
std::set<std::string> g_connecting;

// A connection's turn to `endpoint`, held until it is destroyed.
class ConnectingTurn {
 public:
  ConnectingTurn(const ConnectingTurn&) = delete;
  ConnectingTurn& operator=(const ConnectingTurn&) = delete;
  explicit ConnectingTurn(std::string endpoint) : m_endpoint(std::move(endpoint)) {}
  ~ConnectingTurn() {
    if (!m_held) return;
    std::lock_guard lock(g_turnMutex);
    g_connecting.erase(m_endpoint);
    g_turnDone.notify_all();
  }
  // Waits until no other connection to the host is being made; false when
  // `abandoned` said so first.
  bool take(const std::function<bool()>& abandoned) {
    std::unique_lock lock(g_turnMutex);
    while (g_connecting.count(m_endpoint)) {
      if (abandoned && abandoned()) return false;
      g_turnDone.wait_for(lock, std::chrono::milliseconds(50));
    }
    g_connecting.insert(m_endpoint);
    m_held = true;
    return true;
  }

 private:
  std::string m_endpoint;
  bool m_held = false;
};

}  // namespace

QString sshAskpassProgram() {
  std::lock_guard lock(g_mutex);
  if (!g_program) {
    const QFileInfo next(QCoreApplication::applicationDirPath() +
                         QStringLiteral("/ckptscope-askpass"));
    g_program = next.isExecutable() ? next.absoluteFilePath() : QString();
  }
  return *g_program;
}

void setSshAskpassProgram(const QString& program) {
  std::lock_guard lock(g_mutex);
  g_program = program;
}

remote::AgentCommand appAgentCommand(const remote::RemotePath& where) {
  remote::SshQuestions q;
  q.mode = remote::SshQuestions::Mode::Askpass;
  q.askpass = pathToStd(sshAskpassProgram());
  return remote::sshAgentCommand(where, {}, q);
}

std::unique_ptr<remote::AgentClient> connectAppAgent(const remote::RemotePath& where,
                                                     const std::string& clientVersion,
                                                     const std::function<bool()>& abandoned) {
  // With ControlMaster=auto a connection started while another is still
  // logging in finds no master to join, and logs in (asks) itself: hence
  // one at a time. Once the first has answered hello its master listens.
  ConnectingTurn turn(where.endpoint());
  if (!turn.take(abandoned)) return nullptr;
  remote::AgentCommand command = appAgentCommand(where);
  remote::shareLogin(command);
  return std::make_unique<remote::AgentClient>(std::move(command), "host " + where.host,
                                               clientVersion);
}

}  // namespace ckpt
