// Stopping a run on the host (docs/REMOTE.md, "Stopping a run on the
// host"): the agent's `stop`. A request names the run's folder and what
// `launch` (a pid) or `submit` (a job id) answered. The agent signals only
// what it can tell is a ckptscope trainer training in that folder: the
// process's executable is ckptscope-train (or ckptscope-cli before its
// exec), its command resume / finetune / train, its working folder the
// run's (launch starts it there); a job's name is ckptscope-RUN and its
// working folder the run's. The trainer takes SIGTERM as Ctrl+C: it
// finishes the step in flight, writes a checkpoint to resume from and
// ends (app/train/main.cpp). Its handler goes back to the default after
// the first signal, so a second TERM would end it at once, mid-save: the
// agent sends none to a trainer that no longer catches it.
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ckpt/remote/launch_wire.h"
#include "serve.h"

namespace fs = std::filesystem;

namespace ckpt::cli::serve {
namespace {

std::string readText(const std::string& file, size_t limit = 1 << 20) {
  std::ifstream in(file, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > limit) s = s.substr(s.size() - limit);
  return s;
}

std::string linkOf(const std::string& link, std::string* error = nullptr) {
  std::error_code ec;
  const fs::path p = fs::read_symlink(link, ec);
  if (ec && error) *error = ec.message();
  return ec ? std::string() : p.string();
}

std::string realOf(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string procFile(pid_t pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

// Runs (a zombie waiting for its reaper does not).
bool running(pid_t pid) {
  const std::string stat = readText(procFile(pid, "stat"));
  if (stat.empty()) return false;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

std::vector<std::string> cmdline(pid_t pid) {
  const std::string raw = readText(procFile(pid, "cmdline"));
  std::vector<std::string> args;
  size_t at = 0;
  while (at < raw.size()) {
    const size_t end = raw.find('\0', at);
    args.push_back(raw.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return args;
}

// "" when `pid` is a ckptscope trainer working in `runDir`; else why not
// (said to the client: nothing is signalled then).
std::string notOurTrainer(pid_t pid, const std::string& runDir) {
  std::string error;
  std::string exe = linkOf(procFile(pid, "exe"), &error);
  if (exe.empty()) return "its program cannot be read (" + error + ": another user's process?)";
  static const std::string kDeleted = " (deleted)";  // the program was replaced since it started
  if (exe.size() > kDeleted.size() && exe.ends_with(kDeleted))
    exe.resize(exe.size() - kDeleted.size());
  const std::string name = fs::path(exe).filename().string();
  if (name != "ckptscope-train" && name != "ckptscope-cli") return "it runs " + exe;
  const std::vector<std::string> args = cmdline(pid);
  if (args.size() < 2 || (args[1] != "resume" && args[1] != "finetune" && args[1] != "train"))
    return "it is " + exe + " " + (args.size() < 2 ? std::string() : args[1]) + ", not a trainer";
  const std::string cwd = realOf(procFile(pid, "cwd"));
  if (cwd != runDir) return "it trains in " + (cwd.empty() ? std::string("?") : cwd);
  return {};
}

// The trainer catches SIGTERM (the stop handler); false once it took one.
bool catchesTerm(pid_t pid) {
  std::istringstream status(readText(procFile(pid, "status")));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return (mask >> (SIGTERM - 1)) & 1ULL;
  }
  return false;
}

// Every ckptscope trainer working in `runDir` (this user's that can be read).
std::vector<pid_t> trainersIn(const std::string& runDir) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end || pid == ::getpid()) continue;
    if (running(pid_t(pid)) && notOurTrainer(pid_t(pid), runDir).empty())
      found.push_back(pid_t(pid));
  }
  ::closedir(proc);
  return found;
}

// The newest ckptscope-train-*.log in `runDir` ("" when none).
std::string newestLog(const std::string& runDir) {
  std::string best;
  fs::file_time_type bestTime{};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runDir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("ckptscope-train-") || !name.ends_with(".log")) continue;
    const auto t = e.last_write_time(ec);
    if (best.empty() || t > bestTime) {
      best = e.path().string();
      bestTime = t;
    }
  }
  return best;
}

// `path` when it lies in `runDir` (the only files read here).
std::string inRunDir(const std::string& path, const std::string& runDir) {
  const std::string real = realOf(path);
  return !real.empty() && real.starts_with(runDir + "/") ? real : std::string();
}

void addEnding(Json& out, const std::string& log) {
  std::string outcome, checkpoint;
  int64_t step = -1;
  if (!log.empty() && remote::trainerEnding(readText(log, 1 << 16), outcome, step, checkpoint))
    out["ended"] = Json{{"outcome", outcome}, {"step", step}, {"checkpoint", checkpoint}};
  else
    out["ended"] = nullptr;
}

std::string programOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::access(candidate.c_str(), X_OK) == 0 && ::stat(candidate.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode))
      return candidate;
  }
  return {};
}

// Jobs this agent asked to stop: not asked twice (its log may not say yet).
std::mutex g_jobsMutex;
std::set<std::string> g_jobsAsked;

Json stopJob(Call& call, const std::string& runDir, const std::string& jobId, bool signal) {
  static const std::regex kJob("[0-9]{1,20}(_[0-9]{1,10})?");
  if (!std::regex_match(jobId, kJob))
    throw ProtocolError("bad_field", "job_id: '" + jobId + "' is not a SLURM job id");
  const std::string squeue = programOnPath("squeue");
  if (squeue.empty())
    throw ProtocolError("failed", "squeue is not on the PATH here: SLURM's jobs cannot be seen");
  // name|working folder|state, one line; nothing (or an error) once it left the queue.
  const ChildOutput q = runCollecting(call, {squeue, "-h", "-j", jobId, "-o", "%j|%Z|%T"});
  std::string line = q.exit == 0 ? q.out.substr(0, q.out.find('\n')) : std::string();
  Json out{{"run_dir", runDir}, {"job_id", jobId}, {"signalled", false}};
  const std::string log = inRunDir(runDir + "/ckptscope-train-" + jobId + ".log", runDir);
  out["log"] = log;
  if (line.empty()) {
    out["running"] = false;
    out["state"] = "";
    addEnding(out, log);
    return out;
  }
  const size_t a = line.find('|'), b = line.rfind('|');
  if (a == std::string::npos || a == b)
    throw ProtocolError("failed", "squeue -j " + jobId + " answered '" + line + "'");
  const std::string name = line.substr(0, a), dir = line.substr(a + 1, b - a - 1),
                    state = line.substr(b + 1);
  if (!name.starts_with("ckptscope-") || realOf(dir) != runDir)
    throw ProtocolError("not_ours", "job_id: job " + jobId + " (" + name + " in " + dir +
                                        ") is not a ckptscope run in " + runDir +
                                        ": nothing was signalled");
  out["state"] = state;
  out["running"] = true;
  bool asked = false;
  {
    std::lock_guard lock(g_jobsMutex);
    asked = g_jobsAsked.count(jobId) > 0;
  }
  out["already_stopping"] = asked;
  if (signal && !asked) {
    // Queued, it has run nothing: taken out of the queue. Running: the
    // batch step is the trainer (the script execs it), which gets TERM.
    std::vector<std::string> argv{programOnPath("scancel")};
    if (argv[0].empty()) throw ProtocolError("failed", "scancel is not on the PATH here");
    if (state != "PENDING") argv.insert(argv.end(), {"--batch", "--signal=TERM"});
    argv.push_back(jobId);
    const ChildOutput r = runCollecting(call, argv);
    if (r.exit != 0)
      throw ProtocolError("failed", "scancel " + jobId + " failed (exit " + std::to_string(r.exit) +
                                        "): " + r.out + r.err);
    std::lock_guard lock(g_jobsMutex);
    g_jobsAsked.insert(jobId);
    out["signalled"] = true;
  }
  return out;
}

}  // namespace

Json stop(Call& call) {
  const std::string given = call.path("run_dir");
  const std::string runDir = realOf(given);
  struct stat st {};
  if (runDir.empty() || ::stat(runDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw ProtocolError("bad_field", "run_dir: " + given + " is not a folder");
  const bool signal = !call.params.contains("signal") || call.params["signal"] != Json(false);
  const int64_t waitMs = call.integer("wait_ms", 0, 0, 600000);
  if (call.params.contains("job_id")) {
    if (call.params.contains("pid"))
      throw ProtocolError("bad_field", "pid: a run is named by its pid or its job_id, not both");
    return stopJob(call, runDir, call.text("job_id"), signal);
  }
  pid_t pid = 0;
  if (call.params.contains("pid")) {
    pid = pid_t(call.integer("pid", 0, 1, 1 << 30));
    if (running(pid)) {
      const std::string why = notOurTrainer(pid, runDir);
      if (!why.empty())
        throw ProtocolError("not_ours", "pid: " + std::to_string(pid) +
                                            " is not a ckptscope trainer running in " + runDir +
                                            " (" + why + "): nothing was signalled");
    } else {
      pid = 0;  // it has ended (or never was): how it ended is in its log
    }
  } else {
    const std::vector<pid_t> found = trainersIn(runDir);
    if (found.size() > 1) {
      std::string list;
      for (pid_t p : found) list += (list.empty() ? "" : ", ") + std::to_string(p);
      throw ProtocolError("bad_field", "pid: " + std::to_string(found.size()) +
                                           " trainers run in " + runDir + " (pids " + list +
                                           "): name one");
    }
    if (!found.empty()) pid = found.front();
  }
  Json out{{"run_dir", runDir}, {"pid", pid > 0 ? Json(pid) : Json(nullptr)}};
  // Its log: what its stdout is (launch's), else the newest in the folder.
  std::string log = pid > 0 ? inRunDir(linkOf(procFile(pid, "fd/1")), runDir) : std::string();
  if (log.empty()) log = newestLog(runDir);
  out["log"] = log;
  bool signalled = false, already = false;
  if (pid > 0) {
    // Not catching TERM: it took one already, or it is still loading (its
    // handler comes first, before it reads or writes anything of the run).
    const bool loading = readText(log, 1 << 16).find(", writing to ") == std::string::npos;
    already = !catchesTerm(pid) && !loading;
    if (signal && !already) {
      if (::kill(pid, SIGTERM) != 0)
        throw ProtocolError(
            "failed", "pid " + std::to_string(pid) + ": cannot signal it: " + std::strerror(errno));
      signalled = true;
    }
    const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs);
    while (running(pid) && std::chrono::steady_clock::now() < due && !call.cancelled)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  out["signalled"] = signalled;
  out["already_stopping"] = already;
  out["running"] = pid > 0 && running(pid);
  if (out["running"] == Json(true))
    out["ended"] = nullptr;
  else
    addEnding(out, log);
  return out;
}

}  // namespace ckpt::cli::serve
