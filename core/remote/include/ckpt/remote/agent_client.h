#pragma once
// The client end of the agent protocol (docs/REMOTE.md): starts
// `ckptscope-cli serve --stdio` (through ssh, or any program: the tests
// start it directly), says hello, and sends one request at a time.
// Everything a person must do to make it work (install the agent, accept a
// host key, load a key) comes back as a RemoteError that says so. No Qt:
// the app's Open Remote will drive the same class from a worker thread.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ckpt/remote/remote_path.h"
#include "ckpt/remote/ssh_command.h"

namespace ckpt::remote {

// An error the agent answered with ({code, message}), or why there is no
// agent to ask: code "login" when ssh could not log in (a host key not
// accepted, no key or password it could use), "connection" for the rest.
class RemoteError : public std::runtime_error {
 public:
  RemoteError(std::string code, const std::string& message)
      : std::runtime_error(message), m_code(std::move(code)) {}
  [[nodiscard]] const std::string& code() const { return m_code; }

 private:
  std::string m_code;
};

// The install hint every "not installed / too old" message ends with.
std::string installHint();

class AgentClient {
 public:
  using Json = nlohmann::ordered_json;
  using ProgressFn = std::function<void(const Json& progress)>;
  // Asked while waiting (every ~50 ms); true: the request is no longer wanted.
  using CancelFn = std::function<bool()>;
  // A watch's events ({watching, ...}, then {added, changed, removed}).
  using EventFn = std::function<void(const Json& event)>;
  // An event as the agent wrote it (its JSON text, unparsed).
  using EventTextFn = std::function<void(std::string_view event)>;

  // Starts `argv` (execvp) with pipes on its stdin, stdout and stderr and
  // exchanges hello; `what` names the other end in messages ("host
  // 127.0.0.1"). Throws RemoteError: the program cannot start, is missing
  // on the host, is too old, or ssh cannot log in.
  AgentClient(std::vector<std::string> argv, std::string what, std::string clientVersion);
  // As above, for a command made by sshAgentCommand: its environment and
  // session applied, and ssh's failures worded for how it could ask.
  AgentClient(AgentCommand command, std::string what, std::string clientVersion);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // What the agent said to hello: {protocol, version, program}.
  [[nodiscard]] const Json& hello() const { return m_hello; }

  // Sends {id, method, params} and waits for its result; progress
  // messages go to `progress`. Throws RemoteError with the agent's error,
  // or code "connection" when the connection drops first. Once `cancelled`
  // says so, the agent is sent `cancel` with the request's id (once) and
  // its answer is still read, so the connection stays in step; a request
  // the agent stopped throws RemoteError("cancelled"). The request's events
  // (a watch's) go to `event`.
  Json call(const std::string& method, Json params, const ProgressFn& progress = {},
            const CancelFn& cancelled = {}, const EventFn& event = {});

  // As call(), the result handed back as its JSON text, not parsed (the
  // agent's `metrics` answer is tens of megabytes: metricsResultFromText
  // reads it without a tree). Errors, progress and events as call().
  std::string callText(const std::string& method, Json params, const ProgressFn& progress = {},
                       const CancelFn& cancelled = {});

  // As call(), each event handed over as its JSON text, unparsed (a
  // tensor's bytes come as events of a megabyte of base64: parsing them
  // into a tree cost more than the bytes, ckpt/remote/cross_diff.h).
  Json callEventText(const std::string& method, Json params, const ProgressFn& progress,
                     const CancelFn& cancelled, const EventTextFn& eventText);

  // Sends {id, method, params} now and returns its id without waiting for
  // the answer. The agent runs requests one at a time, in the order they
  // came, so requests posted one after another are answered in that order:
  // a second is on its way (and computed on the host) while the first's
  // answer is read here, and a network's round trip is paid once for both.
  // Each posted request's answer must be taken with await() or awaitText(),
  // in the order they were posted (a later one's wait skips an earlier
  // answer nobody took).
  int64_t post(const std::string& method, Json params);
  // The answer to a posted request, as call() and callText() give theirs
  // (`method` names it in messages).
  Json await(int64_t id, const std::string& method, const ProgressFn& progress = {},
             const CancelFn& cancelled = {});
  // awaitText hands the request's events to `eventText` as their text.
  std::string awaitText(int64_t id, const std::string& method, const ProgressFn& progress = {},
                        const CancelFn& cancelled = {}, const EventTextFn& eventText = {});

  // From any thread: ends the connection now (the program, ssh, is sent
  // SIGTERM), so a call waiting on it throws RemoteError("connection") at
  // once, whatever the link does. For a watch that must stop.
  void interrupt();

 private:
  void send(const Json& message);
  // call() and callText(): `resultText` null, the result parsed and
  // returned; else the result's text put there.
  Json exchange(const std::string& method, Json params, const ProgressFn& progress,
                const CancelFn& cancelled, const EventFn& event, std::string* resultText,
                const EventTextFn& eventText = {});
  // The reading half of exchange(): the answer to request `id`.
  Json receive(int64_t id, const std::string& method, const ProgressFn& progress,
               const CancelFn& cancelled, const EventFn& event, std::string* resultText,
               const EventTextFn& eventText);
  // The next complete line from the agent's stdout; false at end of file.
  // `idle` is called every ~50 ms while none comes.
  bool readLine(std::string& line, const std::function<void()>& idle = {});
  // Why the agent went away: its exit status and what it wrote to stderr,
  // turned into what a person should do.
  [[noreturn]] void connectionLost(const std::string& when);
  void stop();

  // Reaps the program (waitpid) without blocking; true once it is gone
  // (`status` then holds its status).
  bool reap(int* status);

  std::string m_what;
  SshQuestions::Mode m_questions = SshQuestions::Mode::Refuse;
  // Where ssh goes (AgentCommand's), for the commands the messages name.
  std::string m_ssh, m_destination, m_host;
  int m_port = 0;
  std::mutex m_pidMutex;  // m_pid: interrupt() may kill it from another thread
  pid_t m_pid = -1;
  int m_in = -1, m_out = -1;  // the agent's stdin (we write), stdout (we read)
  std::string m_buf;          // read but not yet a whole line
  struct ErrorText;           // what the agent (or ssh) wrote to stderr, collected by m_errThread
  std::shared_ptr<ErrorText> m_stderr;
  std::thread m_errThread;
  int64_t m_nextId = 1;
  Json m_hello;
};

}  // namespace ckpt::remote
