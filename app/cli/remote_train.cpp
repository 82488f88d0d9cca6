// `ckptscope-cli resume|finetune` of a checkpoint on another machine
// (ssh://host/path, host:/path): the agent there starts the trainer
// detached from this connection (it keeps training when the laptop
// closes), or with --sbatch hands it to SLURM as a batch script the person
// may print (--print-script), edit and pass back (--script FILE). The
// options travel as structured fields (ckpt/remote/launch_wire.h); the
// agent checks every path against the roots opened here and builds the
// trainer's argv itself.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/launch_wire.h"
#include "ckpt/version.h"
#include "common.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

using Json = nlohmann::ordered_json;
using remote::RemotePath;

const char* kRemoteUsage =
    "usage (a checkpoint on another machine: ssh://[user@]host[:port]/path or host:/path):\n"
    "  ckptscope-cli resume REMOTE-CKPT [--max-steps N] [--data PATH] [--device D]\n"
    "                [--sbatch [--print-script | --script FILE]]\n"
    "  ckptscope-cli finetune REMOTE-CKPT --data PATH [--out DIR] [--lr X] [--max-steps N]\n"
    "                [--stage NAME] [--device D] [--sbatch [--print-script | --script FILE]]\n"
    "  PATH and DIR are on that host (host:/path or a plain path). The trainer starts there\n"
    "  detached from this connection; --sbatch submits it as a SLURM job instead\n"
    "  (--print-script prints the batch script proposed, --script FILE submits yours).\n";

int usage(const std::string& problem) {
  std::fprintf(stderr, "ckptscope-cli: %s\n%s", problem.c_str(), kRemoteUsage);
  return kExitUsage;
}

// A path on the checkpoint's host (remote::pathOnHost), named by its flag when wrong.
bool hostPath(const std::string& arg, const RemotePath& on, const std::string& flag,
              std::string& path, std::string& problem) {
  const std::string wrong = remote::pathOnHost(arg, on, path);
  if (!wrong.empty()) problem = flag + ": " + wrong;
  return wrong.empty();
}

std::string readWhole(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file + ": cannot read the script");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::optional<RemotePath> remoteCheckpointOf(int argc, char** argv) {
  static const std::vector<std::string> kWithValue{"--max-steps", "--data",      "--device",
                                                   "--nproc",     "--out",       "--lr",
                                                   "--stage",     "--tokenizer", "--script"};
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (std::find(kWithValue.begin(), kWithValue.end(), a) != kWithValue.end()) {
      ++i;
      continue;
    }
    if (a.rfind("--", 0) == 0) continue;
    try {
      return remote::parseRemotePath(a);
    } catch (const std::invalid_argument&) {
      return RemotePath{};  // malformed ssh:// URL: runRemoteTrain says why
    }
  }
  return std::nullopt;
}

int runRemoteTrain(int argc, char** argv) {
  const std::string command = argv[1];
  const bool finetune = command == "finetune";
  remote::LaunchRequest request;
  request.command = command;
  std::optional<RemotePath> where;
  bool sbatch = false, printScript = false;
  std::string scriptFile, data, out, problem;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= argc) {
        problem = a + " needs a value";
        return false;
      }
      into = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::fputs(kRemoteUsage, stdout);
      return kExitOk;
    }
    if (a == "--sbatch") {
      sbatch = true;
    } else if (a == "--print-script") {
      printScript = true;
    } else if (a == "--script") {
      if (!value(scriptFile)) return usage(problem);
    } else if (a == "--data") {
      if (!value(data)) return usage(problem);
    } else if (a == "--out" && finetune) {
      if (!value(out)) return usage(problem);
    } else if (a == "--stage" && finetune) {
      if (!value(request.stage)) return usage(problem);
    } else if (a == "--device") {
      if (!value(request.device)) return usage(problem);
    } else if (a == "--lr" && finetune) {
      if (!value(v)) return usage(problem);
      try {
        size_t used = 0;
        request.learningRate = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        return usage("--lr: expected a number, got '" + v + "'");
      }
    } else if (a == "--max-steps") {
      if (!value(v)) return usage(problem);
      try {
        size_t used = 0;
        request.maxSteps = std::stoll(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        return usage("--max-steps: expected an integer, got '" + v + "'");
      }
    } else if (a.rfind("--", 0) == 0) {
      return usage(a + " is not supported for a checkpoint on another machine");
    } else if (where) {
      return usage(command + " takes exactly one checkpoint");
    } else {
      try {
        where = remote::parseRemotePath(a);
      } catch (const std::invalid_argument& e) {
        return usage(e.what());
      }
      if (!where) return usage(a + ": the checkpoint is local but not the first one named");
    }
  }
  if (!where) return usage(command + " needs a checkpoint");
  if ((printScript || !scriptFile.empty()) && !sbatch)
    return usage("--print-script and --script go with --sbatch");
  if (printScript && !scriptFile.empty()) return usage("--print-script or --script, not both");
  if (finetune && data.empty()) return usage("finetune needs --data PATH (on the host)");
  request.checkpoint = where->path;
  if (!data.empty() && !hostPath(data, *where, "--data", request.data, problem))
    return usage(problem);
  if (!out.empty() && !hostPath(out, *where, "--out", request.out, problem)) return usage(problem);

  try {
    auto agent = std::make_unique<remote::AgentClient>(
        remote::sshAgentCommand(*where, remoteCli(), remote::cliSshQuestions()),
        "host " + where->endpoint(), std::string("ckptscope-cli ") + CKPT_VERSION);
    for (const std::string& root : remote::launchRoots(request))
      agent->call("open", Json{{"path", root}});
    const Json params = remote::launchParams(request);
    auto runAt = [&](const std::string& runDir) { return where->locationOf(runDir); };
    auto follow = [&](const std::string& runDir) {
      return "ckptscope-cli metrics " + runAt(runDir);
    };
    const std::string host = where->endpoint();
    if (sbatch) {
      const remote::LaunchPlan plan = remote::launchPlanFromJson(agent->call("launchPlan", params));
      if (printScript) {
        std::fwrite(plan.script.data(), 1, plan.script.size(), stdout);
        return kExitOk;
      }
      if (!plan.sbatch)
        return failWith("sbatch is not on the PATH on " + host +
                        ": SLURM cannot take the job there (drop --sbatch to start it directly)");
      Json submit = params;
      submit["script"] = scriptFile.empty() ? plan.script : readWhole(scriptFile);
      const remote::LaunchResult r =
          remote::launchResultFromJson(agent->call("submit", std::move(submit)));
      std::printf("submitted to SLURM on %s: job %s (%s of %s)\n", host.c_str(), r.jobId.c_str(),
                  command.c_str(), request.checkpoint.c_str());
      std::printf("run:     %s (%s)\nscript:  %s\nlog:     %s\nfollow:  %s\n", r.runDir.c_str(),
                  r.runName.c_str(), r.scriptFile.c_str(), r.log.c_str(), follow(r.runDir).c_str());
      std::printf("stop:    ckptscope-cli stop %s --job %s\n", runAt(r.runDir).c_str(),
                  r.jobId.c_str());
      return kExitOk;
    }
    const remote::LaunchResult r = remote::launchResultFromJson(agent->call("launch", params));
    std::printf("%s on %s (pid %lld): %s of %s\n", r.started ? "started" : "starting", host.c_str(),
                (long long)r.pid, command.c_str(), request.checkpoint.c_str());
    std::printf("run:     %s (%s)\nlog:     %s\nfollow:  %s\n", r.runDir.c_str(), r.runName.c_str(),
                r.log.c_str(), follow(r.runDir).c_str());
    std::printf(
        "It keeps training when this connection ends (stop it: ckptscope-cli stop %s --pid "
        "%lld; it saves a checkpoint first).\n",
        runAt(r.runDir).c_str(), (long long)r.pid);
    if (!r.started)
      std::printf(
          "It was still preparing (reading the checkpoint and the data) when asked: "
          "see its log.\n");
    return kExitOk;
  } catch (const remote::RemoteError& e) {
    if (e.code() == "unknown_method")
      return failWith("the ckptscope-cli on " + where->endpoint() +
                      " cannot start training (too old): update ckptscope-cli on the host");
    return failWith(e.what());
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
}

}  // namespace ckpt::cli
