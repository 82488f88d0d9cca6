// Training on the host (docs/REMOTE.md): the agent's `launchPlan`,
// `launch` and `submit`. A request names a checkpoint and structured
// fields; every path is checked against the roots the client opened, and
// the trainer's argv is built here, word by word: nothing goes through a
// shell. `launch` starts the trainer detached from the connection (its own
// session, stdin /dev/null, stdout and stderr into a log in the run's
// folder), so it keeps training when ssh drops; `submit` hands the same
// command to SLURM (sbatch SCRIPT ARGV..., the script the person edited
// running it as "$@"). Nothing existing is overwritten: a fine-tune's
// folder must be new, the log and script files are created exclusively.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "ckpt/index/experiment.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/remote/launch_wire.h"
#include "serve.h"

namespace fs = std::filesystem;

namespace ckpt::cli::serve {
namespace {

// The agent's own program, by its real path (a SLURM job starts it on
// another node, where /proc/self/exe names something else).
std::string selfPath() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("/proc/self/exe: " + ec.message());
  return self.string();
}

std::string realPath(const std::string& path, const std::string& field) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    throw ProtocolError("not_found", field + ": " + path + ": " + std::strerror(errno));
  return buf;
}

// params[field], an existing path inside the roots, as its real path (the
// trainer is started elsewhere than the agent's folder: it gets absolute
// paths, which never start with '-').
std::string checkedReal(const Call& call, const char* field) {
  return realPath(call.path(field), field);
}

bool isRegularFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// `dir` (which may not exist yet) inside the roots: its parent must be.
std::string checkedNewDir(const Call& call, std::string dir, const std::string& field) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const fs::path p(dir);
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw ProtocolError("bad_field", field + ": " + dir + " does not name a new folder");
  const std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
  (void)call.roots.check(parent, field);
  return (fs::path(realPath(parent, field)) / name).string();
}

// "YYYYmmdd-HHMMSS" (UTC): the log's and the script's names.
std::string stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// A new file `dir/<stem>-<stamp><ext>` ("-2", ... when taken), created
// exclusively: an existing file is never written over. Returns its fd.
int createNew(const std::string& dir, const std::string& stem, const std::string& ext,
              std::string& path) {
  const std::string base = (fs::path(dir) / (stem + "-" + stamp())).string();
  for (int n = 1; n < 1000; ++n) {
    path = base + (n > 1 ? "-" + std::to_string(n) : "") + ext;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST)
      throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  }
  throw std::runtime_error(base + ext + ": cannot find a free name");
}

std::string sbatchOnPath() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/sbatch";
    if (::access(candidate.c_str(), X_OK) == 0 && isRegularFile(candidate)) return candidate;
  }
  return {};
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// What a request asks, checked, and what it will do.
struct Plan {
  std::string command, checkpoint, runDir, runName;
  bool newDir = false;  // runDir is made by the launch (a fine-tune, a branch)
  std::vector<std::string> argv;
};

std::string numberText(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

Plan plan(const Call& call) {
  Plan p;
  p.command = call.text("command");
  if (p.command != "resume" && p.command != "finetune")
    throw ProtocolError("bad_field", "command: '" + p.command + "' is not one of resume, finetune");
  const bool finetune = p.command == "finetune";
  for (const char* field : {"out", "stage", "lr"})
    if (!finetune && call.params.contains(field))
      throw ProtocolError("bad_field", std::string(field) + ": only finetune takes it");
  p.checkpoint = checkedReal(call, "checkpoint");
  if (!isRegularFile(p.checkpoint))
    throw ProtocolError("bad_field", "checkpoint: " + call.text("checkpoint") +
                                         " is not a checkpoint file (name the .pt)");
  // Where the run goes: the rules the trainer follows (run_plan.h).
  const ResumePlan resume = planResume(p.checkpoint);  // names the file when unreadable
  std::vector<std::string> args{selfPath(), p.command};
  std::string data;
  if (call.params.contains("data")) {
    data = checkedReal(call, "data");
  } else if (finetune) {
    throw ProtocolError("missing_field", "data: a fine-tune needs its data (a file on the host)");
  }
  if (!data.empty()) args.insert(args.end(), {"--data", data});
  if (finetune) {
    const std::string stage = call.params.contains("stage") ? call.text("stage") : "sft";
    static const std::regex kName("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
    if (!std::regex_match(stage, kName))
      throw ProtocolError("bad_field",
                          "stage: '" + stage + "' is not a stage name (letters, digits, _ . -)");
    p.runName = stageRunName(resume.runName, stage);
    const std::string out =
        call.params.contains("out")
            ? call.text("out")
            : (fs::path(p.checkpoint).parent_path().parent_path() / p.runName).string();
    p.runDir = checkedNewDir(call, out, "out");
    if (exists(p.runDir))
      throw ProtocolError("exists", "out: " + p.runDir +
                                        " already exists: nothing is overwritten (choose another "
                                        "folder with out)");
    p.newDir = true;
    args.insert(args.end(), {"--out", p.runDir, "--stage", stage});
    if (call.params.contains("lr")) {
      const Json& lr = call.params["lr"];
      if (!lr.is_number() || !std::isfinite(lr.get<double>()) || lr.get<double>() <= 0)
        throw ProtocolError("bad_field", "lr: a positive number is needed");
      args.insert(args.end(), {"--lr", numberText(lr.get<double>())});
    }
  } else if (resume.isNewest) {
    p.runDir = resume.runDir;
    p.runName = resume.runName;
  } else {
    // A branch "<run>@<step>" beside the parent, which stays as it is.
    p.runDir = checkedNewDir(call, resume.branchDir, "checkpoint");
    p.runName = resume.branchRunName;
    p.newDir = true;
  }
  if (call.params.contains("max_steps"))
    args.insert(args.end(),
                {"--max-steps", std::to_string(call.integer("max_steps", 0, 1, int64_t(1) << 50))});
  if (call.params.contains("device")) {
    const std::string device = call.text("device");
    static const std::regex kDevice("auto|cpu|cuda|cuda:[0-9]{1,3}");
    if (!std::regex_match(device, kDevice))
      throw ProtocolError("bad_field",
                          "device: '" + device + "' is not one of auto, cpu, cuda, cuda:N");
    args.insert(args.end(), {"--device", device});
  }
  args.push_back(p.checkpoint);
  p.argv = std::move(args);
  // The trainer must be there: ckptscope-cli hands these commands to it.
  const std::string trainer = (fs::path(p.argv[0]).parent_path() / "ckptscope-train").string();
  if (::access(trainer.c_str(), X_OK) != 0)
    throw ProtocolError("failed", trainer + " is missing on " + hostName() +
                                      ": this ckptscope-cli was built without LibTorch, and "
                                      "cannot train");
  return p;
}

// A word as a person reads it in a comment: quoted when it needs it, and
// no control character (a newline would end the comment).
std::string shown(const std::string& word) {
  std::string out;
  bool plain = !word.empty();
  for (char c : word) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      out += '?';
    else
      out += c;
    if (!(std::isalnum(u) || std::strchr("/._-:=@%+,", c))) plain = false;
  }
  if (plain) return out;
  std::string quoted = "'";
  for (char c : out) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// sbatch's own arguments: the job's name, its log and its folder.
std::vector<std::string> sbatchOptions(const Plan& p) {
  return {"--job-name=ckptscope-" + p.runName,
          "--output=" + (fs::path(p.runDir) / "ckptscope-train-%j.log").string(),
          "--chdir=" + p.runDir};
}

std::string proposedScript(const Plan& p) {
  std::string s = "#!/bin/bash\n";
  s += "# CkptScope: " + std::string(p.command == "resume" ? "resume of " : "fine-tune of ") +
       shown(p.checkpoint) + "\n# into " + shown(p.runDir) + ", as a SLURM job.\n";
  s += "#\n# The agent submits this script as\n#   sbatch";
  for (const std::string& o : sbatchOptions(p)) s += " " + shown(o);
  s += " SCRIPT \\\n#     ";
  for (size_t i = 0; i < p.argv.size(); ++i) s += (i ? " " : "") + shown(p.argv[i]);
  s += "\n# so the trainer's command reaches it as its arguments (\"$@\"), never read by a\n"
       "# shell. Edit the resources below (and load modules before the exec).\n"
       "#SBATCH --nodes=1\n"
       "#SBATCH --ntasks=1\n"
       "#SBATCH --cpus-per-task=4\n"
       "#SBATCH --time=24:00:00\n"
       "##SBATCH --gres=gpu:1\n"
       "exec \"$@\"\n";
  return s;
}

Json planJson(const Plan& p) {
  const std::string sbatch = sbatchOnPath();
  return Json{{"host", hostName()},
              {"run_dir", p.runDir},
              {"run_name", p.runName},
              {"metrics", (fs::path(p.runDir) / "metrics.jsonl").string()},
              {"argv", p.argv},
              {"script", proposedScript(p)},
              {"sbatch", sbatch.empty() ? Json(nullptr) : Json(sbatch)}};
}

void makeRunDir(const Plan& p) {
  if (!p.newDir) return;
  if (::mkdir(p.runDir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error(p.runDir + ": cannot make the run's folder: " + std::strerror(errno));
}

// The last lines of the log, for a launch that failed.
std::string tail(const std::string& file, size_t bytes = 4000) {
  std::ifstream in(file, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > bytes) s = "..." + s.substr(s.size() - bytes);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The process runs (a zombie waiting for its reaper does not).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return ::kill(pid, 0) == 0;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Starts argv detached: fork, setsid, fork again (the trainer is nobody's
// child here, its own session's member: ssh's hangup does not reach it),
// stdin /dev/null, stdout and stderr into `logFd`, in `dir`. Returns its
// pid once exec succeeded; throws with exec's error.
pid_t startDetached(const std::vector<std::string>& argv, int logFd, const std::string& dir) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) throw std::runtime_error(std::string("/dev/null: ") + std::strerror(errno));
  // The grandchild's pid, then (only when exec fails) its errno; end of
  // file once exec succeeded (the pipe closes on exec).
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(devNull);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigset_t none;
  sigemptyset(&none);
  const pid_t middle = ::fork();
  if (middle == 0) {
    ::setsid();
    const pid_t trainer = ::fork();
    if (trainer == 0) {
      ::dup2(devNull, STDIN_FILENO);
      ::dup2(logFd, STDOUT_FILENO);
      ::dup2(logFd, STDERR_FILENO);
      // The agent ignores SIGPIPE; a trainer gets the defaults a shell gives.
      ::sigaction(SIGPIPE, &defaults, nullptr);
      ::sigaction(SIGHUP, &defaults, nullptr);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      if (::chdir(dir.c_str()) != 0) {
      }
      ::execv(args[0], args.data());
      const int e = errno;
      if (::write(report[1], &e, sizeof e) < 0) {
      }
      ::_exit(127);
    }
    if (::write(report[1], &trainer, sizeof trainer) < 0) {
    }
    ::_exit(trainer > 0 ? 0 : 1);
  }
  ::close(devNull);
  ::close(report[1]);
  if (middle < 0) {
    ::close(report[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t trainer = -1;
  int execErrno = 0;
  char buf[sizeof(pid_t) + sizeof(int)];
  size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(report[0], buf + got, sizeof buf - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
    if (got == sizeof buf) break;
  }
  ::close(report[0]);
  if (got >= sizeof(pid_t)) std::memcpy(&trainer, buf, sizeof(pid_t));
  if (got == sizeof buf) std::memcpy(&execErrno, buf + sizeof(pid_t), sizeof(int));
  if (trainer <= 0) throw std::runtime_error("cannot start a detached process");
  if (execErrno) throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(execErrno));
  return trainer;
}

}  // namespace

std::string sbatchProgram() {
  return sbatchOnPath();
}

Json launchPlan(Call& call) {
  return planJson(plan(call));
}

Json launch(Call& call) {
  const Plan p = plan(call);
  const int64_t waitMs = call.integer("wait_ms", 120000, 0, 600000);
  makeRunDir(p);
  std::string log;
  const int logFd = createNew(p.runDir, "ckptscope-train", ".log", log);
  pid_t pid = -1;
  try {
    pid = startDetached(p.argv, logFd, p.runDir);
  } catch (...) {
    ::close(logFd);
    throw;
  }
  ::close(logFd);
  // Started means the trainer said so: "run NAME on DEVICE from step A to
  // B, writing to DIR" (after it read the checkpoint and the data). A
  // trainer that ends before it is a failed launch, said with its log.
  bool started = false;
  const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs);
  for (;;) {
    const std::string text = tail(log, 1 << 16);
    if (text.find(", writing to ") != std::string::npos &&
        (text.rfind("run ", 0) == 0 || text.find("\nrun ") != std::string::npos)) {
      started = true;
      break;
    }
    if (!running(pid)) {
      if (tail(log).find(", writing to ") != std::string::npos) {
        started = true;  // a short run that is already over
        break;
      }
      throw ProtocolError(
          "failed", "the trainer ended before it started (its log " + log + "):\n" + tail(log));
    }
    if (std::chrono::steady_clock::now() >= due || call.cancelled) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Json out = planJson(p);
  out.erase("script");
  out["pid"] = pid;
  out["log"] = log;
  out["started"] = started;
  return out;
}

Json submit(Call& call) {
  const Plan p = plan(call);
  const std::string script = call.text("script");
  if (script.rfind("#!", 0) != 0)
    throw ProtocolError("bad_field",
                        "script: a batch script starts with its interpreter (#!/bin/bash)");
  const std::string sbatch = sbatchOnPath();
  if (sbatch.empty())
    throw ProtocolError("failed", "sbatch is not on the PATH on " + hostName() +
                                      ": SLURM cannot take the job here (launch it instead)");
  makeRunDir(p);
  std::string scriptFile;
  const int fd = createNew(p.runDir, "ckptscope-train", ".sbatch", scriptFile);
  for (size_t done = 0; done < script.size();) {
    const ssize_t n = ::write(fd, script.data() + done, script.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error(scriptFile + ": cannot write: " + std::strerror(errno));
    }
    done += size_t(n);
  }
  ::close(fd);
  // sbatch OPTIONS SCRIPT TRAINER-ARGV: the script runs them as "$@".
  std::vector<std::string> argv{sbatch};
  for (const std::string& o : sbatchOptions(p)) argv.push_back(o);
  argv.push_back(scriptFile);
  argv.insert(argv.end(), p.argv.begin(), p.argv.end());
  const ChildOutput r = runCollecting(call, argv, p.runDir);
  const std::string jobId = remote::sbatchJobId(r.out);
  if (r.exit != 0 || jobId.empty())
    throw ProtocolError("failed", "sbatch " + scriptFile + " failed (exit " +
                                      std::to_string(r.exit) + "): " + r.out + r.err +
                                      " (the script stays there)");
  Json out = planJson(p);
  out.erase("script");
  out["job_id"] = jobId;
  out["script_file"] = scriptFile;
  out["log"] = (fs::path(p.runDir) / ("ckptscope-train-" + jobId + ".log")).string();
  out["sbatch_output"] = r.out;
  return out;
}

}  // namespace ckpt::cli::serve
