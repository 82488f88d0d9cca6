#include "ckpt/remote/ssh_sharing.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ckpt::remote {
namespace {

// A Unix socket's path: 108 bytes with its NUL. ssh binds
// "PATH.<16 random characters>" first and links it to PATH, and %C is 40
// hex digits: the folder may take what is left.
constexpr size_t kMaxSocketPath = 107;
constexpr size_t kMaxDirLength = kMaxSocketPath - 1 - 40 - 17;

// What `ssh -G` may print (its whole config) and how long it may take: it
// reads files and needs no network, but a config's `Match exec` runs a
// command, which must not hold a connection up.
constexpr size_t kMaxProbeOutput = 1 << 20;
constexpr int kProbeTimeoutMs = 5000;

bool usableDir(const std::string& dir, std::string* why) {
  const auto refuse = [&](const std::string& what) {
    if (why) *why += (why->empty() ? "" : "; ") + dir + ": " + what;
    return false;
  };
  if (dir.size() > kMaxDirLength)
    return refuse("too long for a socket path (at most " + std::to_string(kMaxDirLength) +
                  " bytes)");
  // ssh reads ControlPath's value as words and expands %-tokens in it.
  if (dir.find_first_of("% \t\n\"'\\") != std::string::npos)
    return refuse("holds a character ssh would read in a ControlPath ('%', a space, a quote)");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return refuse(std::string("cannot be made: ") + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return refuse(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return refuse("not a folder (a symlink or a file is not used)");
  if (st.st_uid != ::getuid()) return refuse("owned by another user");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return refuse(std::string("open to others (mode ") + mode + ", not 0700)");
  }
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Runs `argv` (no shell, no terminal: a session of its own, stdin and
// stderr /dev/null) and returns its stdout; false when it cannot start,
// exits other than 0, says too much or takes too long (then it is killed).
bool runForOutput(std::vector<std::string> argv, std::string* out) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return false;
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(pipeFds[1], 1);
    ::dup2(null, 2);
    ::setsid();
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipeFds[1]);
  if (pid < 0) {
    ::close(pipeFds[0]);
    return false;
  }
  bool ok = true;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kProbeTimeoutMs);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      ok = false;
      break;
    }
    pollfd p{pipeFds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, int(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char b[4096];
    const ssize_t n = ::read(pipeFds[0], b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(b, size_t(n));
    if (out->size() > kMaxProbeOutput) {
      ok = false;
      break;
    }
  }
  ::close(pipeFds[0]);
  if (!ok) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string sshControlDir(std::string* why) {
  if (why) why->clear();
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run == '/') {
    std::string dir = run;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    dir += "/ckptscope-ssh";
    if (usableDir(dir, why)) return dir;
  }
  const std::string dir = "/tmp/ckptscope-ssh-" + std::to_string(::getuid());
  if (usableDir(dir, why)) return dir;
  return {};
}

bool sshMultiplexesAlready(const AgentCommand& cmd) {
  if (cmd.programWords == 0 || cmd.programWords > cmd.argv.size()) return false;
  std::vector<std::string> argv(cmd.argv.begin(), cmd.argv.begin() + long(cmd.programWords));
  // Options given with the program (CKPTSCOPE_SSH="ssh -o ControlPath=none"):
  // ssh keeps the first value an option gets, so they decide.
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (lower(w).find("control") != std::string::npos || w == "-M" || w.rfind("-S", 0) == 0)
      return true;
  }
  argv.emplace_back("-G");
  if (cmd.port) {
    argv.emplace_back("-p");
    argv.push_back(std::to_string(cmd.port));
  }
  argv.emplace_back("--");
  argv.push_back(cmd.destination);
  std::string config;
  if (!runForOutput(argv, &config)) return false;
  std::istringstream lines(config);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string key, value;
    words >> key >> value;
    key = lower(key);
    // `ssh -G` prints "controlmaster false" when it is not set, and no
    // controlpath line when there is none (or "none").
    if (key == "controlmaster" && lower(value) != "false" && lower(value) != "no") return true;
    if (key == "controlpath" && !value.empty() && lower(value) != "none") return true;
  }
  return false;
}

bool shareLogin(AgentCommand& cmd) {
  if (cmd.destination.empty() || sshMultiplexesAlready(cmd)) return false;
  const std::string dir = sshControlDir();
  if (dir.empty()) return false;
  std::vector<std::string>& argv = cmd.argv;
  // Before "--" (the destination and the remote command follow it).
  const auto at = std::find(argv.begin() + long(std::min(cmd.programWords, argv.size())),
                            argv.end(), std::string("--"));
  cmd.controlPath = dir + "/%C";
  const std::vector<std::string> options{
      "-o", "ControlMaster=auto",
      "-o", "ControlPath=" + cmd.controlPath,
      "-o", "ControlPersist=" + std::to_string(kSharedLoginPersistSeconds) + "s"};
  argv.insert(at, options.begin(), options.end());
  return true;
}

}  // namespace ckpt::remote
