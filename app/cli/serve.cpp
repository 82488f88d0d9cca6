// ckptscope-cli serve --stdio: the agent (docs/REMOTE.md). One JSON object
// per line each way. stdin is read on the main thread, so `cancel` is seen
// while a request runs; requests run in order on one worker thread; each
// watch polls on a thread of its own. End of input ends the agent: watches
// stop, requests already sent are answered (a script may send its requests
// and close its end). A client that went away (a write fails: ssh dropped)
// cancels everything at once.
#include <limits.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <thread>

#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/json_text.h"
#include "ckpt/remote/protocol.h"
#include "ckpt/version.h"
#include "common.h"
#include "serve.h"

namespace ckpt::cli {
namespace serve {

// ------------------------------------------------------------------ roots

namespace {

// Files `metrics` may name for `since` beyond the roots, at most.
constexpr size_t kMaxFollowedFiles = size_t(1) << 20;

std::string realPath(const std::string& path, const std::string& field) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    throw ProtocolError("not_found", field + ": " + path + ": " + std::strerror(errno));
  return buf;
}

}  // namespace

std::string Roots::open(const std::string& path) {
  const std::string real = realPath(path, "path");
  std::lock_guard lock(m_mutex);
  if (std::find(m_roots.begin(), m_roots.end(), real) == m_roots.end()) m_roots.push_back(real);
  return real;
}

std::string Roots::check(const std::string& path, const std::string& field) const {
  const std::string real = realPath(path, field);
  std::lock_guard lock(m_mutex);
  for (const std::string& root : m_roots)
    if (real == root || root == "/" ||
        (real.size() > root.size() && real.compare(0, root.size(), root) == 0 &&
         real[root.size()] == '/'))
      return path;
  throw ProtocolError("outside_roots", field + ": " + path + " (" + real +
                                           ") is outside every folder opened with `open`");
}

void Roots::follow(const std::string& file) {
  std::lock_guard lock(m_mutex);
  if (m_followed.size() < kMaxFollowedFiles) m_followed.insert(file);
}

std::string Roots::checkFollowed(const std::string& path, const std::string& field) const {
  {
    std::lock_guard lock(m_mutex);
    if (m_followed.count(path)) return path;
  }
  return check(path, field);
}

// ------------------------------------------------------------------ params

std::string Call::text(const char* field) const {
  if (!params.contains(field))
    throw ProtocolError("missing_field", std::string(field) + ": missing");
  if (!params[field].is_string())
    throw ProtocolError("bad_field", std::string(field) + ": a string is needed");
  return params[field].get<std::string>();
}

std::vector<std::string> Call::texts(const char* field, bool required) const {
  if (!params.contains(field)) {
    if (required) throw ProtocolError("missing_field", std::string(field) + ": missing");
    return {};
  }
  const Json& a = params[field];
  std::vector<std::string> out;
  if (a.is_array())
    for (const Json& s : a) {
      if (!s.is_string()) break;
      out.push_back(s.get<std::string>());
    }
  if (!a.is_array() || out.size() != a.size() || (required && out.empty()))
    throw ProtocolError("bad_field",
                        std::string(field) + ": a non-empty array of strings is needed");
  return out;
}

int64_t Call::integer(const char* field, int64_t fallback, int64_t lo, int64_t hi) const {
  if (!params.contains(field)) return fallback;
  const Json& v = params[field];
  if (!v.is_number_integer() && !v.is_number_unsigned())
    throw ProtocolError("bad_field", std::string(field) + ": an integer is needed");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw ProtocolError("bad_field", std::string(field) + ": too large");
  const int64_t n = v.get<int64_t>();
  if (n < lo || n > hi)
    throw ProtocolError("bad_field", std::string(field) + ": " + std::to_string(n) +
                                         " is outside " + std::to_string(lo) + ".." +
                                         std::to_string(hi));
  return n;
}

std::string Call::path(const char* field) const {
  return roots.check(text(field), field);
}

void throwIfCancelled(const Call& call) {
  if (call.cancelled) throw ProtocolError("cancelled", "cancelled");
}

// ------------------------------------------------------------------ transport

namespace {

struct Request {
  Json id;
  std::string method;
  Json params;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  ScanShare::Clock::time_point received = ScanShare::Clock::now();
};

class Agent {
 public:
  int run();

 private:
  void send(const Json& message);
  // A message already written as JSON text (no newline).
  void sendLine(std::string_view line);
  // The line `head` + `body` + `tail`, written from where the parts are
  // (one writev): nothing is copied into a line first (a tensor's events
  // are a megabyte each, a sweep's metrics tens of megabytes; a new string
  // for each cost more in page faults than making the text).
  void sendLine(std::string_view head, std::string_view body, std::string_view tail);
  // Writes `head`, `body` and `tail`, then a newline (m_outMutex held).
  void writeAll(std::string_view head, std::string_view body = {}, std::string_view tail = {});
  void error(const Json& id, const std::string& code, const std::string& message) {
    send(Json{{"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }
  void handleLine(const std::string& line, size_t lineNo);
  void cancelAll() {
    std::lock_guard lock(m_mutex);
    for (auto& [id, flag] : m_live) *flag = true;
  }
  void execute(const Request& r);
  void work();

  std::mutex m_outMutex;  // one line at a time on stdout
  bool m_outBroken = false;
  Roots m_roots;
  ScanShare m_scans;
  bool m_hello = false;

  std::mutex m_mutex;  // the queue, the running requests
  std::condition_variable m_wake;
  std::deque<Request> m_queue;
  bool m_closing = false;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>>
      m_live;  // by id text: cancel finds them
  std::vector<std::thread> m_watches;
  std::vector<std::shared_ptr<std::atomic<bool>>> m_watchFlags;  // end of input stops them
};

void Agent::send(const Json& message) {
  sendLine(dumpJson(message));
}

void Agent::sendLine(std::string_view line) {
  std::lock_guard lock(m_outMutex);
  writeAll(line);
}

void Agent::sendLine(std::string_view head, std::string_view body, std::string_view tail) {
  std::lock_guard lock(m_outMutex);
  writeAll(head, body, tail);
}

void Agent::writeAll(std::string_view head, std::string_view body, std::string_view tail) {
  if (m_outBroken) return;
  std::array<iovec, 4> io{};
  size_t count = 0;
  for (const std::string_view part : {head, body, tail, std::string_view("\n")})
    if (!part.empty()) io[count++] = iovec{const_cast<char*>(part.data()), part.size()};
  for (iovec* at = io.data(); count > 0;) {
    const ssize_t n = ::writev(STDOUT_FILENO, at, int(count));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      m_outBroken = true;  // the client went away: nobody reads answers any more
      cancelAll();
      return;
    }
    // Past what was written: whole parts, then into the one it stopped in.
    size_t left = size_t(n);
    while (count > 0 && left >= at->iov_len) {
      left -= at->iov_len;
      ++at;
      --count;
    }
    if (count > 0) {
      at->iov_base = static_cast<char*>(at->iov_base) + left;
      at->iov_len -= left;
    }
  }
}

void Agent::handleLine(const std::string& line, size_t lineNo) {
  Json msg;
  try {
    msg = parseJsonText(line);
  } catch (const std::exception& e) {
    error(nullptr, "parse_error", "line " + std::to_string(lineNo) + ": " + e.what());
    return;
  }
  if (!msg.is_object() || !msg.contains("id") ||
      !(msg["id"].is_number() || msg["id"].is_string())) {
    error(nullptr, "invalid_request",
          "line " + std::to_string(lineNo) +
              ": a request is an object with an id (a number or a string)");
    return;
  }
  Request r;
  r.id = msg["id"];
  if (!msg.contains("method") || !msg["method"].is_string()) {
    error(r.id, "invalid_request", "method: missing, or not a string");
    return;
  }
  r.method = msg["method"].get<std::string>();
  r.params = msg.contains("params") ? msg["params"] : Json::object();
  if (!r.params.is_object()) {
    error(r.id, "invalid_request", "params: an object is needed");
    return;
  }
  if (r.method == "hello") {
    m_hello = true;
    send(Json{{"id", r.id},
              {"result",
               {{"protocol", remote::kProtocolVersion},
                {"version", CKPT_VERSION},
                {"program", "ckptscope-cli"},
                {"max_request_bytes", remote::kMaxRequestBytes},
                {"max_slice_elements", remote::kMaxSliceElements},
                // Training on the host can be a SLURM job here (`submit`).
                {"sbatch", !sbatchProgram().empty()}}}});
    return;
  }
  if (!m_hello) {
    error(r.id, "no_hello", "the first request must be hello");
    return;
  }
  if (r.method == "cancel") {
    if (!r.params.contains("id")) {
      error(r.id, "missing_field", "id: the id of the request to cancel");
      return;
    }
    bool found = false;
    {
      std::lock_guard lock(m_mutex);
      const auto it = m_live.find(dumpJson(r.params["id"]));
      if (it != m_live.end()) {
        *it->second = true;
        found = true;
      }
    }
    send(Json{{"id", r.id}, {"result", {{"cancelled", found}}}});
    return;
  }
  // (Nothing is sent while m_mutex is held: send() takes it when a write fails.)
  std::unique_lock lock(m_mutex);
  const std::string key = dumpJson(r.id);
  if (m_live.count(key)) {
    lock.unlock();
    error(r.id, "invalid_request", "id " + key + " is already in use by a running request");
    return;
  }
  m_live[key] = r.cancelled;
  if (r.method == "watch") {
    // A watch lasts until cancelled: it polls on its own thread.
    m_watchFlags.push_back(r.cancelled);
    m_watches.emplace_back([this, r] { execute(r); });
    return;
  }
  m_queue.push_back(std::move(r));
  m_wake.notify_one();
}

void Agent::execute(const Request& r) {
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  Call call{r.params, *r.cancelled, m_roots, {}, {}, {}, {}, r.received, &m_scans};
  call.progress = [&](uint64_t done, uint64_t total) {
    // A few messages a second are enough to draw a bar.
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(200) && done != total) return;
    last = now;
    send(Json{{"id", r.id}, {"progress", {{"done", done}, {"total", total}}}});
  };
  call.event = [&](Json event) { send(Json{{"id", r.id}, {"event", std::move(event)}}); };
  const std::string eventHead = "{\"id\":" + dumpJson(r.id) + ",\"event\":";
  call.eventText = [&](const std::string& event) { sendLine(eventHead, event, "}"); };
  Json answer;
  bool asText = false;  // the method wrote its result as text (call.resultText)
  try {
    throwIfCancelled(call);
    Json result = runMethod(r.method, call);
    asText = !call.resultText.empty();
    if (!asText) answer = Json{{"id", r.id}, {"result", std::move(result)}};
  } catch (const ProtocolError& e) {
    answer = Json{{"id", r.id}, {"error", {{"code", e.code()}, {"message", e.what()}}}};
  } catch (const std::exception& e) {
    // A reader error names the file and byte; the agent keeps serving.
    answer = Json{{"id", r.id}, {"error", {{"code", "failed"}, {"message", e.what()}}}};
  }
  // Done before the answer leaves: a client may reuse the id (or cancel it)
  // as soon as it has read it.
  {
    std::lock_guard lock(m_mutex);
    m_live.erase(dumpJson(r.id));
  }
  if (asText)
    sendLine("{\"id\":" + dumpJson(r.id) + ",\"result\":", call.resultText, "}");
  else
    send(answer);
}

void Agent::work() {
  for (;;) {
    Request r;
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [this] { return m_closing || !m_queue.empty(); });
      if (m_queue.empty()) return;
      r = std::move(m_queue.front());
      m_queue.pop_front();
    }
    execute(r);
    const std::lock_guard lock(m_mutex);
    if (m_queue.empty()) m_scans.clear();  // no request waits to share its scan
  }
}

int Agent::run() {
  std::thread worker([this] { work(); });
  std::string buf;
  size_t lineNo = 0;
  bool skipping = false;  // inside a line past the limit: dropped up to its newline
  char block[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < size_t(n); ++i) {
      if (block[i] != '\n') continue;
      if (!skipping) {
        buf.append(block + start, i - start);
        ++lineNo;
        if (!buf.empty() && buf.back() == '\r') buf.pop_back();
        if (!buf.empty()) handleLine(buf, lineNo);
      } else {
        skipping = false;
      }
      buf.clear();
      start = i + 1;
    }
    if (!skipping) buf.append(block + start, size_t(n) - start);
    if (!skipping && buf.size() > remote::kMaxRequestBytes) {
      ++lineNo;
      error(nullptr, "line_too_long",
            "line " + std::to_string(lineNo) + ": longer than " +
                std::to_string(remote::kMaxRequestBytes) + " bytes: dropped");
      buf.clear();
      buf.shrink_to_fit();
      skipping = true;
    }
  }
  {
    std::lock_guard lock(m_mutex);
    m_closing = true;
    for (auto& flag : m_watchFlags) *flag = true;
    m_wake.notify_all();
  }
  worker.join();
  for (std::thread& t : m_watches) t.join();
  return kExitOk;
}

}  // namespace
}  // namespace serve

int runServe(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {"--stdio"}, args, problem)) return usageError(problem, "serve");
  if (!args.positional.empty() || !args.has("--stdio"))
    return usageError("serve takes --stdio (and nothing else)", "serve");
  // A client that goes away must end the agent through end of input, not
  // kill it mid-write.
  ::signal(SIGPIPE, SIG_IGN);
  serve::Agent agent;
  return agent.run();
}

}  // namespace ckpt::cli
