// The agent's `report` method (docs/REMOTE.md): the text output of a read
// command, produced by running that command on the host. The text printers
// read the open files as they print (info's tensor table, diff's blocks),
// so rather than send a second copy of every printer's data over the wire,
// the agent runs its own program with the command and sends back what it
// printed: the client's output is then the host's, byte for byte.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "serve.h"

namespace ckpt::cli::serve {
namespace {

// Text reports are for people: past this, the client should use --json
// (or run the command on the host), not hold it all in one line.
constexpr size_t kMaxReportBytes = size_t(64) << 20;

// The program the agent runs: itself, the same build that answers the
// other methods (the file may have been replaced on disk since it started:
// /proc/self/exe still names the one that runs).
constexpr const char* kSelf = "/proc/self/exe";

// The child and the read ends of its pipes. However the request ends
// (answered, cancelled, too large, an error), the child is killed if it
// still runs and is reaped, and the pipes are closed.
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;

  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

void closeBoth(int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

// argv without a shell: the paths are words of their own, after "--", so
// a file named "--top" or "-r" is read as a file.
std::vector<std::string> commandLine(const std::string& command,
                                     const std::vector<std::string>& paths, int64_t top,
                                     bool recursive) {
  std::vector<std::string> argv{"ckptscope-cli", command};
  if (top > 0) {
    argv.push_back("--top");
    argv.push_back(std::to_string(top));
  }
  if (recursive) argv.push_back("--recursive");
  argv.push_back("--");
  argv.insert(argv.end(), paths.begin(), paths.end());
  return argv;
}

// Starts `argv` as `program` (in `cwd` when not empty) with stdin from
// /dev/null (the agent's stdin is the protocol) and stdout, stderr into pipes.
void start(Child& child, const std::string& program, const std::vector<std::string>& argv,
           const std::string& cwd = {}) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Everything the child needs is made before fork: the agent has other
  // threads, so between fork and exec the child makes no allocation.
  struct sigaction defaultPipe {};
  defaultPipe.sa_handler = SIG_DFL;
  const std::string execFailed = "ckptscope-cli: the agent cannot run " + program + "\n";
  const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) throw std::runtime_error(std::string("/dev/null: ") + std::strerror(errno));
  int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
  if (::pipe2(outPipe, O_CLOEXEC) != 0 || ::pipe2(errPipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(devNull);
    closeBoth(outPipe);
    closeBoth(errPipe);
    throw std::runtime_error(std::string("cannot make pipes: ") + std::strerror(e));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(devNull, STDIN_FILENO);
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::dup2(errPipe[1], STDERR_FILENO);
    // The agent ignores SIGPIPE (serve.cpp), and an ignored signal stays
    // ignored across exec: the command gets the default a shell gives it.
    ::sigaction(SIGPIPE, &defaultPipe, nullptr);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::execv(program.c_str(), args.data());
    if (::write(STDERR_FILENO, execFailed.data(), execFailed.size()) < 0) {
    }
    ::_exit(127);
  }
  const int forkErrno = errno;
  ::close(devNull);
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  if (pid < 0) {
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    throw std::runtime_error(std::string("cannot start a process: ") + std::strerror(forkErrno));
  }
  child.pid = pid;
  child.out = outPipe[0];
  child.err = errPipe[0];
}

// Reads the child's stdout and stderr to their ends. Checks for a cancel
// every 50 ms; a cancel or too much output throws, and the caller's Child
// then kills the command.
void collect(const Call& call, Child& child, const std::string& command, std::string& out,
             std::string& err) {
  struct pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
  std::string* into[2] = {&out, &err};
  char buf[65536];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    throwIfCancelled(call);
    const int ready = ::poll(fds, 2, 50);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = ::read(fds[k].fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fds[k].fd = -1;  // at its end (poll skips it); Child closes it
        continue;
      }
      into[k]->append(buf, size_t(got));
      if (out.size() + err.size() > kMaxReportBytes)
        throw ProtocolError("too_large", command + ": the text report is longer than " +
                                             std::to_string(kMaxReportBytes >> 20) +
                                             " MiB: stopped (use --json, or run it on the host)");
    }
  }
}

// Waits for the child to exit; its status as a shell gives it (128 +
// the signal when one ended it).
int waitExit(const Call& call, Child& child) {
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(child.pid, &status, WNOHANG);
    if (w == child.pid) break;
    if (w < 0 && errno != EINTR)
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    // Its output has ended, so it is exiting; a cancel still stops it.
    throwIfCancelled(call);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  child.pid = -1;  // reaped: nothing for ~Child to kill
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

Json report(Call& call) {
  const std::string command = call.text("command");
  if (command != "ls" && command != "info" && command != "verify" && command != "diff" &&
      command != "scan")
    throw ProtocolError("bad_field",
                        "command: '" + command + "' is not one of ls, info, verify, diff, scan");
  std::vector<std::string> paths = call.texts("paths", true);
  if (command == "diff" && paths.size() != 2)
    throw ProtocolError("bad_field", "paths: diff takes exactly two paths, A and B (got " +
                                         std::to_string(paths.size()) + ")");
  if ((command == "ls" || command == "info" || command == "verify") && paths.size() != 1)
    throw ProtocolError("bad_field", "paths: " + command + " takes exactly one path (got " +
                                         std::to_string(paths.size()) + ")");
  const int64_t top = call.integer("top", 0, 0, 1 << 20);
  if (top > 0 && command != "diff") throw ProtocolError("bad_field", "top: only diff takes it");
  bool recursive = false;
  if (call.params.contains("recursive")) {
    if (!call.params["recursive"].is_boolean())
      throw ProtocolError("bad_field", "recursive: true or false is needed");
    recursive = call.params["recursive"].get<bool>();
  }
  if (recursive && command != "scan")
    throw ProtocolError("bad_field", "recursive: only scan takes it");
  // The path as given goes to the command (it prints it as the local
  // command would), once it is known to lie inside a root.
  for (std::string& p : paths) p = call.roots.check(p, "paths");
  throwIfCancelled(call);

  Child child;
  start(child, kSelf, commandLine(command, paths, top, recursive));
  std::string out, err;
  collect(call, child, command, out, err);
  const int status = waitExit(call, child);
  // Raw bytes: the agent writes every string through dumpJson, which keeps
  // a byte that is not UTF-8 as \udcXY; the client's parseJsonText gives
  // the byte back.
  return Json{{"stdout", std::move(out)}, {"stderr", std::move(err)}, {"exit", status}};
}

ChildOutput runCollecting(const Call& call, const std::vector<std::string>& argv,
                          const std::string& cwd) {
  Child child;
  start(child, argv.at(0), argv, cwd);
  ChildOutput r;
  collect(call, child, argv.at(0), r.out, r.err);
  r.exit = waitExit(call, child);
  return r;
}

}  // namespace ckpt::cli::serve
