#include "ckpt/remote/agent_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "ckpt/format/json_export.h"
#include "ckpt/format/json_text.h"
#include "ckpt/remote/protocol.h"

namespace ckpt::remote {

struct AgentClient::ErrorText {
  std::mutex mutex;
  std::string text;
  // The program has ended (reaped). Its stderr is then read until its end
  // or for kStderrGraceMs more: a shared ssh connection's master (ssh's
  // ControlMaster, docs/REMOTE.md) holds a copy of a session's stderr until
  // the host closes the session, which a link that died does not do for
  // 45 s (ServerAlive); a client that stops must not wait for that.
  std::atomic<bool> programEnded{false};
  [[nodiscard]] std::string get() {
    std::lock_guard lock(mutex);
    return text;
  }
};

std::string installHint() {
  return "install ckptscope-cli there: copy the package and run `sudo apt install "
         "./ckptscope_<version>_amd64.deb` (made by `packaging/bootstrap.sh package`), or build "
         "it from source there with `packaging/bootstrap.sh` in a checkout; or name the program "
         "with --remote-cli PATH or CKPTSCOPE_REMOTE_CLI";
}

namespace {

// How long stderr is read on after the program ended (ErrorText).
constexpr int kStderrGraceMs = 1000;

bool contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

// The last few lines of stderr, for a message.
std::string tail(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  size_t start = t.size();
  for (int lines = 0; start > 0 && lines < 4; --start)
    if (t[start - 1] == '\n') ++lines;
  return t.substr(start == 0 ? 0 : start + 1);
}

AgentCommand plainCommand(std::vector<std::string> argv) {
  AgentCommand c;
  c.argv = std::move(argv);
  return c;
}

// The environment the program gets: ours, with `changes` set (replacing
// the same name's entry). Made before fork: the child only execs.
std::vector<std::string> environmentWith(
    const std::vector<std::pair<std::string, std::string>>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& [name, value] : changes)
      replaced = replaced || entry.compare(0, name.size() + 1, name + "=") == 0;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : changes) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

AgentClient::AgentClient(std::vector<std::string> argv, std::string what, std::string clientVersion)
    : AgentClient(plainCommand(std::move(argv)), std::move(what), std::move(clientVersion)) {}

AgentClient::AgentClient(AgentCommand command, std::string what, std::string clientVersion)
    : m_what(std::move(what)),
      m_questions(command.questions),
      m_ssh(command.ssh),
      m_destination(command.destination),
      m_host(command.host),
      m_port(command.port),
      m_stderr(std::make_shared<ErrorText>()) {
  std::vector<std::string>& argv = command.argv;
  // A write to an agent that went away must be an error we report, not a
  // signal that ends this program.
  ::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw RemoteError("connection", "cannot make pipes: " + std::string(std::strerror(errno)));
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env = environmentWith(command.env);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  m_pid = ::fork();
  if (m_pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    // Askpass: no controlling terminal, so ssh (and what it starts) can
    // only ask through SSH_ASKPASS, never on a terminal the app was started from.
    if (command.ownSession) ::setsid();
    ::execvpe(args[0], args.data(), envp.data());
    const std::string msg = std::string(args[0]) + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (m_pid < 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    throw RemoteError("connection", "cannot start " + argv.front() + ": " + std::strerror(errno));
  }
  m_in = in[1];
  m_out = out[0];
  m_errThread = std::thread([fd = err[0], text = m_stderr] {
    char b[4096];
    std::optional<std::chrono::steady_clock::time_point> until;
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) {
        if (!text->programEnded) continue;
        const auto now = std::chrono::steady_clock::now();
        if (!until) until = now + std::chrono::milliseconds(kStderrGraceMs);
        if (now >= *until) break;
        continue;
      }
      const ssize_t n = ::read(fd, b, sizeof b);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      std::lock_guard lock(text->mutex);
      // Enough to explain a failure; a chatty agent cannot fill memory.
      if (text->text.size() < 65536) text->text.append(b, size_t(n));
    }
    ::close(fd);
  });

  try {
    m_hello = call("hello", Json{{"protocol", kProtocolVersion}, {"client", clientVersion}});
  } catch (const RemoteError& e) {
    stop();
    throw;
  }
  const Json& p = m_hello.contains("protocol") ? m_hello["protocol"] : Json();
  const int theirs = p.is_number_integer() ? p.get<int>() : 0;
  const std::string version = m_hello.contains("version") && m_hello["version"].is_string()
                                  ? m_hello["version"].get<std::string>()
                                  : "?";
  if (theirs < kProtocolVersion) {
    stop();
    throw RemoteError("version", m_what + " runs ckptscope-cli " + version + " (agent protocol " +
                                     std::to_string(theirs) + "); this ckptscope-cli (" +
                                     clientVersion + ") needs protocol " +
                                     std::to_string(kProtocolVersion) +
                                     " or newer: " + installHint());
  }
}

AgentClient::~AgentClient() {
  stop();
}

bool AgentClient::reap(int* status) {
  // Under the lock: once reaped its pid may be another process's, which
  // interrupt() must then not signal.
  std::lock_guard lock(m_pidMutex);
  if (m_pid <= 0) return true;
  if (::waitpid(m_pid, status, WNOHANG) != m_pid) return false;
  m_pid = -1;
  m_stderr->programEnded = true;
  return true;
}

void AgentClient::interrupt() {
  std::lock_guard lock(m_pidMutex);
  if (m_pid > 0) ::kill(m_pid, SIGTERM);
}

void AgentClient::stop() {
  if (m_in >= 0) ::close(m_in);  // end of input: the agent ends
  m_in = -1;
  // Give it a moment to leave on its own, then make sure it does.
  int status = 0;
  for (int i = 0; i < 200 && !reap(&status); ++i) ::usleep(10000);
  if (!reap(&status)) {
    interrupt();
    while (!reap(&status)) ::usleep(2000);
  }
  if (m_out >= 0) ::close(m_out);
  m_out = -1;
  if (m_errThread.joinable()) m_errThread.join();
}

void AgentClient::send(const Json& message) {
  std::string line = dumpJson(message);
  line += '\n';
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(m_in, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) connectionLost("sending a request");
    done += size_t(n);
  }
}

bool AgentClient::readLine(std::string& line, const std::function<void()>& idle) {
  // Searched from where the last search stopped: a 30 MB answer comes in
  // 64 kB reads, and searching it from its start after each was quadratic.
  size_t searched = 0;
  for (;;) {
    const size_t nl = m_buf.find('\n', searched);
    if (nl != std::string::npos) {
      line.assign(m_buf, 0, nl);
      m_buf.erase(0, nl + 1);
      return true;
    }
    searched = m_buf.size();
    if (m_buf.size() > kMaxResponseBytes)
      throw RemoteError("connection", m_what + ": a reply longer than " +
                                          std::to_string(kMaxResponseBytes) + " bytes");
    if (idle) {
      pollfd p{m_out, POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        idle();
        continue;
      }
    }
    char b[65536];  // what a pipe gives at a time
    const ssize_t n = ::read(m_out, b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    m_buf.append(b, size_t(n));
  }
}

void AgentClient::connectionLost(const std::string& when) {
  if (m_in >= 0) ::close(m_in);
  m_in = -1;
  int status = 0, code = -1;
  bool reaped = false;
  {
    std::lock_guard lock(m_pidMutex);
    reaped = m_pid <= 0;
  }
  if (!reaped) {
    // Its output ended: it is leaving (ssh once the host closed; SIGKILL
    // after 10 s for one that does not).
    for (int i = 0; i < 1000 && !(reaped = reap(&status)); ++i) ::usleep(10000);
    if (!reaped) {
      {
        std::lock_guard lock(m_pidMutex);
        if (m_pid > 0) ::kill(m_pid, SIGKILL);
      }
      while (!(reaped = reap(&status))) ::usleep(2000);
    } else {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
  }
  if (m_errThread.joinable()) m_errThread.join();
  const std::string err = m_stderr->get();
  // The commands the messages name, for this host and port ("HOST" for a
  // program started directly).
  const std::string portArg = m_port ? "-p " + std::to_string(m_port) + " " : "";
  const std::string dest = m_destination.empty() ? "HOST" : m_destination;
  // `ssh` as CKPTSCOPE_SSH names it: its -F config's known_hosts is the one that matters.
  const std::string sshHost = (m_ssh.empty() ? "ssh" : m_ssh) + " " + portArg + dest;
  const std::string copyId = "ssh-copy-id " + portArg + dest;
  const std::string hostOnly = m_host.empty() ? "HOST" : m_host;
  const std::string knownName =
      m_port ? "'[" + hostOnly + "]:" + std::to_string(m_port) + "'" : hostOnly;
  const bool refused = m_questions == SshQuestions::Mode::Refuse;
  if (contains(err, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
    throw RemoteError("login",
                      m_what +
                          ": the host's key is not the one ~/.ssh/known_hosts holds for it "
                          "(ssh refuses: someone may be in between, or the host was "
                          "reinstalled). If you know it was reinstalled, remove the old "
                          "entry with `ssh-keygen -R " +
                          knownName + "` and connect again");
  // ssh_config's StrictHostKeyChecking yes: ssh refuses an unknown host
  // without asking, whatever the mode.
  const bool keyRefused = refused || contains(err, "you have requested strict checking");
  if (contains(err, "Host key verification failed"))
    throw RemoteError(
        "login",
        m_what + (keyRefused
                      ? ": ssh cannot check the host's key without asking: connect "
                        "once with `" +
                            sshHost +
                            "` in a terminal to accept it into ~/.ssh/known_hosts, or set "
                            "`StrictHostKeyChecking accept-new` for the host in ~/.ssh/config"
                      : ": the host's key was not accepted (ssh asked whether to trust a host "
                        "it has not seen, and the answer was no): try again and answer "
                        "yes if it is the host you meant, or connect once with `" +
                            sshHost + "` in a terminal to accept it into ~/.ssh/known_hosts"));
  if (contains(err, "Permission denied") || contains(err, "Too many authentication failures"))
    throw RemoteError(
        "login",
        m_what +
            (refused ? ": ssh cannot log in without asking for a password or passphrase "
                       "(BatchMode): load your key with `ssh-add`, or set one up with `" +
                           copyId + "`"
                     : ": ssh could not log in (a password or passphrase was refused or not "
                       "given): try again, load your key with `ssh-add` "
                       "first, or set one up with `" +
                           copyId + "`") +
            " (ssh: " + tail(err) + ")");
  if (code == 127 || contains(err, "command not found") || contains(err, "No such file"))
    throw RemoteError("not_installed", m_what + ": ckptscope-cli was not found there (" +
                                           tail(err) + "): " + installHint());
  if (contains(err, "unknown command 'serve'"))
    throw RemoteError("version", m_what +
                                     ": its ckptscope-cli has no agent mode (too old for "
                                     "protocol " +
                                     std::to_string(kProtocolVersion) + "): " + installHint());
  throw RemoteError("connection", m_what + ": the connection closed while " + when +
                                      (code >= 0 ? " (exit status " + std::to_string(code) + ")"
                                                 : std::string()) +
                                      (err.empty() ? std::string() : ": " + tail(err)));
}

AgentClient::Json AgentClient::call(const std::string& method, Json params,
                                    const ProgressFn& progress, const CancelFn& cancelled,
                                    const EventFn& event) {
  return exchange(method, std::move(params), progress, cancelled, event, nullptr);
}

std::string AgentClient::callText(const std::string& method, Json params,
                                  const ProgressFn& progress, const CancelFn& cancelled) {
  std::string text;
  exchange(method, std::move(params), progress, cancelled, {}, &text);
  return text;
}

AgentClient::Json AgentClient::callEventText(const std::string& method, Json params,
                                             const ProgressFn& progress, const CancelFn& cancelled,
                                             const EventTextFn& eventText) {
  return exchange(method, std::move(params), progress, cancelled, {}, nullptr, eventText);
}

AgentClient::Json AgentClient::exchange(const std::string& method, Json params,
                                        const ProgressFn& progress, const CancelFn& cancelled,
                                        const EventFn& event, std::string* resultText,
                                        const EventTextFn& eventText) {
  return receive(post(method, std::move(params)), method, progress, cancelled, event, resultText,
                 eventText);
}

int64_t AgentClient::post(const std::string& method, Json params) {
  if (m_in < 0) throw RemoteError("connection", m_what + ": the connection is closed");
  const int64_t id = m_nextId++;
  send(Json{{"id", id}, {"method", method}, {"params", std::move(params)}});
  return id;
}

AgentClient::Json AgentClient::await(int64_t id, const std::string& method,
                                     const ProgressFn& progress, const CancelFn& cancelled) {
  return receive(id, method, progress, cancelled, {}, nullptr, {});
}

std::string AgentClient::awaitText(int64_t id, const std::string& method,
                                   const ProgressFn& progress, const CancelFn& cancelled,
                                   const EventTextFn& eventText) {
  std::string text;
  receive(id, method, progress, cancelled, {}, &text, eventText);
  return text;
}

AgentClient::Json AgentClient::receive(int64_t id, const std::string& method,
                                       const ProgressFn& progress, const CancelFn& cancelled,
                                       const EventFn& event, std::string* resultText,
                                       const EventTextFn& eventText) {
  bool cancelSent = false;
  const auto idle = [&] {
    if (cancelSent || !cancelled()) return;
    // Its own answer ({cancelled}) has another id: the loop below skips it.
    send(Json{{"id", m_nextId++}, {"method", "cancel"}, {"params", {{"id", id}}}});
    cancelSent = true;
  };
  // The agent writes a result as {"id":ID,"result":...} (dumpJson's
  // layout): such a line's result is taken as text, unparsed. Any other
  // line is parsed (a result laid out otherwise is written back as text).
  const std::string resultHead = "{\"id\":" + dumpJson(Json(id)) + ",\"result\":";
  // Events likewise, for eventText: {"id":ID,"event":...}.
  const std::string eventHead = "{\"id\":" + dumpJson(Json(id)) + ",\"event\":";
  std::string line;
  for (;;) {
    if (!readLine(line, cancelled ? std::function<void()>(idle) : std::function<void()>()))
      connectionLost("waiting for the answer to " + method);
    if (cancelled) idle();  // a steady stream of progress never leaves readLine idle
    if (resultText && line.size() > resultHead.size() && line.back() == '}' &&
        line.compare(0, resultHead.size(), resultHead) == 0) {
      resultText->assign(line, resultHead.size(), line.size() - resultHead.size() - 1);
      return Json();
    }
    if (eventText && line.size() > eventHead.size() && line.back() == '}' &&
        line.compare(0, eventHead.size(), eventHead) == 0) {
      eventText(
          std::string_view(line).substr(eventHead.size(), line.size() - eventHead.size() - 1));
      continue;
    }
    Json msg;
    try {
      msg = parseJsonText(line);
    } catch (const std::exception& e) {
      throw RemoteError("connection",
                        m_what + ": the agent sent a line that is not JSON (" + e.what() + ")");
    }
    if (!msg.is_object() || !msg.contains("id") || msg["id"] != id) continue;  // a watch's event
    if (msg.contains("event")) {
      if (event) event(msg["event"]);
      if (eventText) eventText(dumpJson(msg["event"]));  // laid out otherwise: written back
      continue;
    }
    if (msg.contains("progress")) {
      if (progress) progress(msg["progress"]);
      continue;
    }
    if (msg.contains("error")) {
      const Json& e = msg["error"];
      const std::string code = e.value("code", std::string("error"));
      throw RemoteError(code, e.value("message", std::string("(no message)")));
    }
    if (msg.contains("result")) {
      if (!resultText) return std::move(msg["result"]);
      *resultText = dumpJson(msg["result"]);
      return Json();
    }
  }
}

}  // namespace ckpt::remote
