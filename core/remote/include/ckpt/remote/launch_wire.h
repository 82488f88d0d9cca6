#pragma once
// Training on the host (docs/REMOTE.md, "Training on the host"): what a
// client asks the agent's `launchPlan`, `launch` and `submit` for, and
// what they answer. The request holds structured fields, never a command
// line: the agent checks each path against the roots the client opened and
// builds the trainer's argv itself. ckptscope-cli and the app's Train tab
// both speak it through these functions. No Qt, no LibTorch.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/remote/remote_path.h"

namespace ckpt::remote {

struct LaunchRequest {
  std::string command;                 // "resume" or "finetune"
  std::string checkpoint;              // a checkpoint file on the host
  std::string data;                    // finetune: required; resume: "" (the run's own data)
  std::string out;                     // finetune: "" -> <checkpoint's grandparent>/<run>-<stage>
  std::string stage;                   // finetune: "" -> "sft"
  std::optional<double> learningRate;  // finetune: unset -> the trainer's default
  std::optional<int64_t> maxSteps;     // unset -> the run's (resume) / parent's (finetune)
  std::string device;                  // "" -> auto; auto, cpu, cuda, cuda:N
  // launch: how long the agent waits for the trainer to say it started
  // (its "run ... writing to ..." line) before it answers anyway.
  int64_t waitMs = 120000;
};

// The request's params (only the fields that are set).
[[nodiscard]] nlohmann::ordered_json launchParams(const LaunchRequest& request);

// What `launchPlan` answers: where the run will go and how it would be
// started, before anything starts.
struct LaunchPlan {
  std::string host;               // the host's name (gethostname)
  std::string runDir;             // absolute, on the host
  std::string runName;            // the run's name as the trainer will write it
  std::string metrics;            // runDir/metrics.jsonl
  std::vector<std::string> argv;  // the trainer's command, word by word
  std::string script;             // the SLURM batch script proposed (see `submit`)
  bool sbatch = false;            // sbatch is on the agent's PATH
  std::string sbatchPath;         // where
};

// What `launch` (started) and `submit` (queued) answer.
struct LaunchResult {
  std::string runDir, runName, metrics;
  std::string log;         // the trainer's stdout and stderr (for a job: SLURM's --output)
  int64_t pid = 0;         // launch: the trainer's process id on the host
  bool started = false;    // launch: it said it started (false: still preparing when answered)
  std::string jobId;       // submit: what sbatch answered ("Submitted batch job N")
  std::string scriptFile;  // submit: the script as submitted, in runDir
};

// Read from an answer; throws std::runtime_error naming a missing field.
[[nodiscard]] LaunchPlan launchPlanFromJson(const nlohmann::ordered_json& result);
[[nodiscard]] LaunchResult launchResultFromJson(const nlohmann::ordered_json& result);

// `stop` (docs/REMOTE.md, "Stopping a run on the host"): a run that
// `launch` or `submit` started, named by what they answered. The agent
// signals it only when it is a ckptscope trainer running in that folder
// (or the SLURM job of that name and folder); the trainer finishes the
// step in flight, writes a checkpoint to resume from and ends.
struct StopRequest {
  std::string runDir;  // the run's folder on the host (inside an opened root)
  int64_t pid = 0;     // launch's pid; 0 (and no jobId): the trainer running in runDir
  std::string jobId;   // submit's job id
  bool signal = true;  // false: only say how it stands (nothing is sent)
  int64_t waitMs = 0;  // wait up to this long for it to end (0: answer at once)
};

[[nodiscard]] nlohmann::ordered_json stopParams(const StopRequest& request);

struct StopResult {
  std::string runDir;
  int64_t pid = 0;               // the trainer asked (0: none, or a job)
  std::string jobId;             // the job asked
  bool signalled = false;        // asked now (SIGTERM; scancel --batch --signal=TERM)
  bool alreadyStopping = false;  // asked before and not again (a second TERM ends it at once)
  bool running = false;          // still running when answered
  std::string state;             // a job's SLURM state when asked ("" for a process)
  std::string log;               // the trainer's log on the host ("" when none is known)
  // How it ended, from the last line of its log (once it has):
  // "stopped" or "finished", the step, the checkpoint written.
  std::string outcome;
  int64_t step = -1;
  std::string checkpoint;
};

[[nodiscard]] StopResult stopResultFromJson(const nlohmann::ordered_json& result);

// The trainer's last word in its log: "stopped at step 12: /r/x_step12.pt"
// or "finished at step 40: /r/x_final.pt". False when `log` holds none.
[[nodiscard]] bool trainerEnding(const std::string& log, std::string& outcome, int64_t& step,
                                 std::string& checkpoint);

// The folders a launch must open as roots first, in order: the
// checkpoint's experiment folder (a resume from an older checkpoint
// branches beside its run, a fine-tune goes next to its run), the data,
// and the folder the output goes in. Nothing else.
[[nodiscard]] std::vector<std::string> launchRoots(const LaunchRequest& request);

// `text`, a path on the host of `on`: written as one (host:/p,
// ssh://host/p) on that same host, or plain. Sets `path` and returns "";
// else what is wrong ("X is on H, the checkpoint on G: both must be on one
// host", or why the location does not parse).
[[nodiscard]] std::string pathOnHost(const std::string& text, const RemotePath& on,
                                     std::string& path);

// "Submitted batch job 4242" (sbatch's answer, maybe with a cluster name
// after: "... on cluster c1") -> "4242"; "" when the text holds none.
[[nodiscard]] std::string sbatchJobId(const std::string& sbatchOutput);

}  // namespace ckpt::remote
