#include "ckpt/train/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace ckpt {
namespace {

using Clock = std::chrono::steady_clock;

struct Rank {
  pid_t pid = -1;
  int out = -1, err = -1;      // read ends of its stdout / stderr
  std::string outBuf, errBuf;  // a line not yet complete
  bool exited = false;
  int status = 0;
};

// Complete lines of `buf` to `sink`; at EOF the rest too.
void takeLines(std::string& buf, bool eof, const std::function<void(const std::string&)>& sink) {
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1)
    sink(buf.substr(start, nl - start));
  buf.erase(0, start);
  if (eof && !buf.empty()) {
    sink(buf);
    buf.clear();
  }
}

std::string describe(int rank, int status) {
  if (WIFSIGNALED(status))
    return "rank " + std::to_string(rank) + " was killed by signal " +
           std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "rank " + std::to_string(rank) + " exited with code " +
         std::to_string(WEXITSTATUS(status));
}

bool failed(int status) {
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The ranks started so far, killed and reaped: a launch that cannot go on
// leaves nothing running.
void killStarted(std::vector<Rank>& ranks) {
  for (Rank& rk : ranks) {
    if (rk.pid > 0 && !rk.exited) {
      kill(rk.pid, SIGKILL);
      waitpid(rk.pid, &rk.status, 0);
      rk.exited = true;
    }
    if (rk.out >= 0) close(rk.out);
    if (rk.err >= 0) close(rk.err);
    rk.out = rk.err = -1;
  }
}

// Every rank's environment: this process's, with the world's variables.
std::vector<std::string> rankEnvironment(const LaunchOptions& o, int rank,
                                         const std::string& port) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  auto setEnv = [&](const std::string& k, const std::string& v) {
    for (std::string& e : env)
      if (e.rfind(k + "=", 0) == 0) {
        e = k + "=" + v;
        return;
      }
    env.push_back(k + "=" + v);
  };
  const bool threadsSet = std::getenv("OMP_NUM_THREADS") != nullptr;
  setEnv("RANK", std::to_string(rank));
  setEnv("LOCAL_RANK", std::to_string(rank));
  setEnv("GROUP_RANK", "0");
  setEnv("WORLD_SIZE", std::to_string(o.nproc));
  setEnv("LOCAL_WORLD_SIZE", std::to_string(o.nproc));
  setEnv("MASTER_ADDR", "127.0.0.1");
  setEnv("MASTER_PORT", port);
  setEnv("TORCHELASTIC_USE_AGENT_STORE", "True");
  setEnv("TORCHELASTIC_RESTART_COUNT", "0");
  if (!threadsSet && o.nproc > 1) setEnv("OMP_NUM_THREADS", "1");  // torchrun's default
  for (const auto& [k, v] : o.env) setEnv(k, v);
  return env;
}

// Forks and execs rank `r`; its stdout and stderr come back through pipes.
Rank startRank(const LaunchOptions& o, int r, const std::string& port) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("--nproc: pipe: ") + std::strerror(errno));
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    close(outPipe[0]);
    close(outPipe[1]);
    throw std::runtime_error(std::string("--nproc: pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is made before fork: between fork and exec
  // only async-signal-safe calls (the caller may have other threads).
  std::vector<std::string> env = rankEnvironment(o, r, port);
  std::vector<char*> argv{const_cast<char*>(o.program.c_str())}, envp;
  for (const std::string& a : o.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string cannotRun = "cannot run " + o.program + ": ";
  sigset_t none;
  sigemptyset(&none);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) close(fd);
    throw std::runtime_error(std::string("--nproc: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Signals come from this launcher only (not twice from a terminal's
    // Ctrl+C), and the rank goes when the launcher does. A thread of the
    // caller may block signals: the rank starts with none blocked.
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(outPipe[1], STDOUT_FILENO);
    dup2(errPipe[1], STDERR_FILENO);
    execve(o.program.c_str(), argv.data(), envp.data());
    const char* why = strerror(errno);
    (void)!::write(STDERR_FILENO, cannotRun.data(), cannotRun.size());
    (void)!::write(STDERR_FILENO, why, std::strlen(why));
    (void)!::write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  close(outPipe[1]);
  close(errPipe[1]);
  Rank rank;
  rank.pid = pid;
  rank.out = outPipe[0];
  rank.err = errPipe[0];
  return rank;
}

}  // namespace

LaunchResult runLocalRanks(const LaunchOptions& o, const LaunchIo& io) {
  if (o.nproc < 1)
    throw std::runtime_error("--nproc: expected at least 1 process, got " +
                             std::to_string(o.nproc));
  if (std::getenv("RANK") && std::getenv("WORLD_SIZE"))
    throw std::runtime_error("--nproc: this process is already rank " +
                             std::string(std::getenv("RANK")) + " of " + std::getenv("WORLD_SIZE") +
                             " (launched by torchrun?): drop --nproc");
  // The rendezvous store, as torchrun's agent hosts it: on a free loopback
  // port, every rank a client.
  c10d::TCPStoreOptions so;
  so.port = 0;
  so.isServer = true;
  so.waitWorkers = false;
  so.timeout = std::chrono::milliseconds(int64_t(o.timeoutSeconds * 1000));
  c10d::TCPStore store("127.0.0.1", so);
  const std::string port = std::to_string(store.getPort());

  std::vector<Rank> ranks;
  ranks.reserve(size_t(o.nproc));
  try {
    for (int r = 0; r < o.nproc; ++r) ranks.push_back(startRank(o, r, port));
  } catch (...) {
    killStarted(ranks);
    throw;
  }

  std::string firstFailure;
  std::optional<Clock::time_point> giveUpAt;  // after a failure: when the rest are terminated
  bool terminated = false, killed = false;
  for (;;) {
    if (const int signo = io.pendingSignal ? io.pendingSignal() : 0)
      for (const Rank& rk : ranks)
        if (!rk.exited) kill(rk.pid, signo);
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> which;  // rank, is stderr
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].out >= 0) {
        fds.push_back({ranks[r].out, POLLIN, 0});
        which.emplace_back(r, false);
      }
      if (ranks[r].err >= 0) {
        fds.push_back({ranks[r].err, POLLIN, 0});
        which.emplace_back(r, true);
      }
    }
    if (!fds.empty() && poll(fds.data(), fds.size(), 100) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int r = int(which[i].first);
        Rank& rk = ranks[size_t(r)];
        const bool isErr = which[i].second;
        char chunk[65536];
        const ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        std::string& buf = isErr ? rk.errBuf : rk.outBuf;
        const auto sink = [&](const std::string& line) {
          if (io.line) io.line(r, isErr, line);
        };
        if (n > 0) {
          buf.append(chunk, size_t(n));
          takeLines(buf, false, sink);
        } else {
          takeLines(buf, true, sink);
          close(fds[i].fd);
          (isErr ? rk.err : rk.out) = -1;
        }
      }
    } else if (fds.empty()) {
      usleep(100 * 1000);
    }
    bool allDone = true;
    for (size_t r = 0; r < ranks.size(); ++r) {
      Rank& rk = ranks[r];
      if (!rk.exited && waitpid(rk.pid, &rk.status, WNOHANG) == rk.pid) {
        rk.exited = true;
        if (failed(rk.status) && firstFailure.empty()) {
          firstFailure = describe(int(r), rk.status);
          giveUpAt =
              Clock::now() + std::chrono::milliseconds(int64_t(o.timeoutSeconds * 1000) + 10000);
        }
      }
      allDone = allDone && rk.exited && rk.out < 0 && rk.err < 0;
    }
    if (allDone) break;
    if (giveUpAt && Clock::now() > *giveUpAt && !killed) {
      for (const Rank& rk : ranks)
        if (!rk.exited) kill(rk.pid, terminated ? SIGKILL : SIGTERM);
      if (terminated) killed = true;
      terminated = true;
      giveUpAt = Clock::now() + std::chrono::seconds(5);
    }
  }
  LaunchResult result;
  if (firstFailure.empty()) return result;
  std::string all;
  result.everyRankRefused = true;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int status = ranks[r].status;
    if (failed(status)) all += (all.empty() ? "" : "; ") + describe(int(r), status);
    result.everyRankRefused =
        result.everyRankRefused && WIFEXITED(status) && WEXITSTATUS(status) == 2;
  }
  result.ok = false;
  result.failure = firstFailure + " first (" + all + ")";
  return result;
}

namespace {

volatile sig_atomic_t g_forward = 0;  // the signal to pass on to the ranks

void onSignal(int signo) {
  g_forward = signo;
}

void writeAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

}  // namespace

int launchLocalRanks(const LaunchOptions& o) {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction oldInt {
  }, oldTerm{};
  sigaction(SIGINT, &sa, &oldInt);
  sigaction(SIGTERM, &sa, &oldTerm);
  signal(SIGPIPE, SIG_IGN);
  LaunchIo io;
  io.line = [](int rank, bool isErr, const std::string& line) {
    writeAll(isErr ? STDERR_FILENO : STDOUT_FILENO,
             "[rank" + std::to_string(rank) + "]: " + line + "\n");
  };
  io.pendingSignal = [] {
    const int signo = g_forward;
    g_forward = 0;
    return signo == 0 ? 0 : signo == SIGTERM ? SIGTERM : SIGINT;
  };
  LaunchResult r;
  try {
    r = runLocalRanks(o, io);
  } catch (...) {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
    throw;
  }
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  if (r.ok) return 0;
  writeAll(STDERR_FILENO, "ckptscope-cli: " + r.failure + "\n");
  return r.everyRankRefused ? 2 : 1;
}

}  // namespace ckpt
