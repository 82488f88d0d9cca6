#pragma once
// The seam between the desktop app and LibTorch. The app never links
// LibTorch (0.4 s and 160 MB at start-up); training lives in a plugin,
// ckptscope-train-backend (app/trainplugin), loaded on first use of the
// Train panel (ui/training/trainbackendloader.h). This header and the two it
// includes are all the two share: no Qt, no LibTorch, no code to link
// (target ckpt_train_api). The value types (StepReport, RunResult,
// TrainJobInfo, FinetuneOptions, GenerateOptions, GeneratedToken in
// job_types.h; RunConfig in ckpt/config) are the trainer's own plain
// structs, so nothing is copied field by field on either side.
//
// Errors: every call may throw a std::exception whose what() is a message
// for the user (ConfigError names the field). Both sides are built by the
// same project with the same compiler, so exceptions and std types cross.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/config/run_config.h"
#include "ckpt/trainapi/job_types.h"

namespace ckpt {

// Bumped whenever this header changes: the loader refuses a plugin built
// against another version instead of crashing in it.
// 2: ResumeOptions::inPlace, FinetuneOptions::overwrite; 3: JobEvents, Processes;
// 4: generate().
inline constexpr int kTrainBackendAbiVersion = 4;

// What a job says besides its steps, on the thread that runs it.
struct JobEvents {
  // The job is prepared: once in this process; once per rank of several
  // processes (in any order; rank 0's carries the run's values).
  std::function<void(const TrainJobInfo&)> prepared;
  // A line the ranks of several processes print, "[rankN]: " in front.
  std::function<void(const std::string&)> log;
  // Asked about every 100 ms while the ranks of several processes run,
  // between steps too (a stop before the first step): true stops them all.
  std::function<bool()> stopRequested;
};

// One training run: a new run, a resume or a fine-tune, ready to go.
class TrainJob {
 public:
  virtual ~TrainJob() = default;
  // Runs to the end on the calling thread. `progress` is called after every
  // step (rank 0's); returning false stops after that step with a resumable
  // checkpoint (RunOutcome::Stopped). Throws on bad data, a NaN loss, a full
  // disk, a rank that fails (the message names it).
  virtual RunResult run(const ProgressCallback& progress, const JobEvents& events) = 0;
};

// Data-parallel ranks on this machine, started as `ckptscope-cli train
// --nproc N` starts them (runLocalRanks, ckpt/train/launch.h): one process
// of `program` (ckptscope-train) per rank, Gloo on the CPU, NCCL with one GPU
// each.
struct Processes {
  int count = 1;        // 1: the job runs in this process, no program
  std::string program;  // ckptscope-train
  int cpuThreads = 0;   // OMP_NUM_THREADS of each rank; 0: one thread each (torchrun's default)
};

struct ResumeOptions {
  std::string checkpoint;
  std::optional<int64_t> maxSteps;  // none: the run's own max_steps
  std::string dataPath;             // "": the path the run recorded
  std::string device = "auto";
  // A checkpoint that is not its run's newest (planResume in
  // ckpt/index/run_plan.h says which) continues as a new branch run
  // "<run>@<step>" beside the parent, which is left untouched; with inPlace
  // it continues in the run's directory and the later files move to .trash/.
  bool inPlace = false;
};

struct TrainDevices {
  bool cudaAvailable = false;
  int cudaDeviceCount = 0;
  std::string torchVersion;
  int cpuThreads = 0;  // LibTorch's intra-op threads now
};

class TrainBackend {
 public:
  virtual ~TrainBackend() = default;
  [[nodiscard]] virtual TrainDevices devices() const = 0;
  // LibTorch's intra-op threads for the jobs that follow; n <= 0: LibTorch's default.
  virtual void setCpuThreads(int n) = 0;
  // Each prepares a job and throws what is wrong with the request. In this
  // process (processes.count 1) it reads the data and builds or loads the
  // model now; the ranks of several processes do that when the job runs.
  virtual std::unique_ptr<TrainJob> newRun(const RunConfig& config, const Processes& processes) = 0;
  virtual std::unique_ptr<TrainJob> resume(const ResumeOptions& options,
                                           const Processes& processes) = 0;
  virtual std::unique_ptr<TrainJob> finetune(const std::string& checkpoint,
                                             const FinetuneOptions& options,
                                             const Processes& processes) = 0;
  // Text from a checkpoint's model on the calling thread (the Generate
  // panel's worker): generateText (ckpt/train/trainer.h), the sampler of
  // `ckptscope-cli generate`, so the same seed gives the same tokens.
  // `onToken` is called after every token; returning false stops there.
  // Throws when the file has no model or tokenizer, or the device is missing.
  virtual std::string generate(const std::string& checkpoint, const GenerateOptions& options,
                               const GenerateCallback& onToken) = 0;
};

}  // namespace ckpt

// The plugin's one exported symbol. It returns nullptr when `abiVersion`
// is not the one it was built with; the backend lives until the process ends.
extern "C" {
using CkptCreateTrainBackendFn = ckpt::TrainBackend* (*)(int abiVersion);
}
#define CKPT_TRAIN_BACKEND_FACTORY "ckptscope_create_train_backend"
