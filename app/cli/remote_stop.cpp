// `ckptscope-cli stop ssh://host/RUN_DIR`: a run that `resume` or
// `finetune` of a remote checkpoint started there (detached, or as a SLURM
// job) asked to stop as Ctrl+C would: the step in flight finishes, a
// checkpoint to resume from is written, the trainer ends. The agent there
// signals only a ckptscope trainer working in that folder (`stop`,
// docs/REMOTE.md); this waits for it to end and says where it saved.
#include <cstdio>

#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/launch_wire.h"
#include "ckpt/version.h"
#include "common.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

using Json = nlohmann::ordered_json;

const char* kStopUsage =
    "usage: ckptscope-cli stop REMOTE-RUN-DIR [--pid N | --job ID] [--wait SECONDS | --no-wait]\n"
    "                          [--json]\n"
    "  REMOTE-RUN-DIR: ssh://[user@]host[:port]/path or host:/path, the run's folder on the\n"
    "  host (what `resume` / `finetune` printed as run:). Its trainer finishes the step in\n"
    "  flight, writes a checkpoint to resume from and ends, as on Ctrl+C.\n"
    "  --pid N     the trainer's pid (what they printed); default: the one trainer running\n"
    "              in that folder\n"
    "  --job ID    a SLURM job (--sbatch): scancel --batch --signal=TERM ID (a queued job is\n"
    "              taken out of the queue)\n"
    "  --wait S    wait up to S seconds (default 300, at most 600) for it to end and say at\n"
    "              which step it stopped; --no-wait: only ask\n"
    "  --json      the agent's answer as JSON\n"
    "Only a ckptscope trainer working in that folder is signalled; a second stop does not\n"
    "signal it again. Exit status: 0 it stopped (or was asked, --no-wait), 1 it was refused,\n"
    "nothing runs there, or it still runs after the wait, 2 usage error.\n";

int usage(const std::string& problem) {
  std::fprintf(stderr, "ckptscope-cli: %s\n%s", problem.c_str(), kStopUsage);
  return kExitUsage;
}

bool toInteger(const std::string& text, int64_t lo, int64_t hi, int64_t& into) {
  try {
    size_t used = 0;
    into = std::stoll(text, &used);
    return used == text.size() && into >= lo && into <= hi;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int runRemoteStop(int argc, char** argv) {
  remote::StopRequest request;
  request.waitMs = 300000;
  std::optional<remote::RemotePath> where;
  bool json = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= argc) return false;
      into = argv[++i];
      return true;
    };
    std::string v;
    int64_t n = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kStopUsage, stdout);
      return kExitOk;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-wait") {
      request.waitMs = 0;
    } else if (a == "--wait") {
      if (!value(v) || !toInteger(v, 0, 600, n))
        return usage("--wait: expected seconds from 0 to 600, got '" + v + "'");
      request.waitMs = n * 1000;
    } else if (a == "--pid") {
      if (!value(v) || !toInteger(v, 1, int64_t(1) << 30, n))
        return usage("--pid: expected a process id, got '" + v + "'");
      request.pid = n;
    } else if (a == "--job") {
      if (!value(request.jobId) || request.jobId.empty()) return usage("--job needs a job id");
    } else if (a.rfind("--", 0) == 0) {
      return usage("unknown option " + a);
    } else if (where) {
      return usage("stop takes exactly one run folder");
    } else {
      try {
        where = remote::parseRemotePath(a);
      } catch (const std::invalid_argument& e) {
        return usage(e.what());
      }
      if (!where)
        return usage(a +
                     ": not on another machine (stop a run here with Ctrl+C, or kill PID: it "
                     "saves a checkpoint first)");
    }
  }
  if (!where) return usage("stop needs the run's folder on the host");
  if (request.pid > 0 && !request.jobId.empty()) return usage("--pid or --job, not both");
  request.runDir = where->path;
  const std::string host = where->endpoint();
  try {
    remote::AgentClient agent(
        remote::sshAgentCommand(*where, remoteCli(), remote::cliSshQuestions()), "host " + host,
        std::string("ckptscope-cli ") + CKPT_VERSION);
    agent.call("open", Json{{"path", request.runDir}});
    const Json answer = agent.call("stop", remote::stopParams(request));
    if (json) printJson(answer, 2);
    const remote::StopResult r = remote::stopResultFromJson(answer);
    const std::string who = !r.jobId.empty() ? "job " + r.jobId
                            : r.pid > 0      ? "pid " + std::to_string(r.pid)
                                             : std::string();
    if (who.empty() || (!r.signalled && !r.alreadyStopping && !r.running)) {
      // Nothing runs there (any more).
      std::string said =
          "nothing to stop: no ckptscope trainer runs in " + r.runDir + " on " + host;
      if (!r.outcome.empty())
        said += " (its log " + r.log + " says it " + r.outcome + " at step " +
                std::to_string(r.step) + ": " + r.checkpoint + ")";
      return json ? kExitFailure : failWith(said);
    }
    if (!json) {
      if (r.signalled)
        std::printf("asked %s on %s to stop: it finishes its step and writes a checkpoint\n",
                    who.c_str(), host.c_str());
      else if (r.alreadyStopping)
        std::printf("%s on %s was already asked to stop (not signalled again)\n", who.c_str(),
                    host.c_str());
    }
    if (r.running) {
      if (request.waitMs == 0) {
        if (!json && !r.log.empty()) std::printf("log:     %s\n", r.log.c_str());
        return kExitOk;
      }
      if (!json)
        std::fprintf(stderr,
                     "ckptscope-cli: %s still runs after %lld s (its step may be long): see "
                     "its log %s, or stop again later\n",
                     who.c_str(), (long long)(request.waitMs / 1000), r.log.c_str());
      return kExitFailure;
    }
    if (!json) {
      if (r.outcome.empty())
        std::printf("it ended on %s; its log %s does not say where it saved\n", host.c_str(),
                    r.log.c_str());
      else
        std::printf("%s on %s at step %lld: %s\n", r.outcome.c_str(), host.c_str(),
                    (long long)r.step, r.checkpoint.c_str());
    }
    return kExitOk;
  } catch (const remote::RemoteError& e) {
    if (e.code() == "unknown_method")
      return failWith("the ckptscope-cli on " + host +
                      " cannot stop a run (too old): update ckptscope-cli on the host, or stop "
                      "it there with kill PID");
    return failWith(e.what());
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
}

}  // namespace ckpt::cli
