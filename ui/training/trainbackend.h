#pragma once
// The seam between the desktop app and LibTorch. The app never links
// LibTorch (0.4 s and 160 MB at start-up); training lives in a plugin,
// ckptscope-train-backend (ui/training/backend), loaded on first use of the
// Train panel (trainbackendloader.h). This header is all the two share: no
// Qt, no LibTorch. The value types (StepReport, RunResult, FinetuneOptions,
// RunConfig) are the trainer's own plain structs, so nothing is copied field
// by field on either side.
//
// Errors: every call may throw a std::exception whose what() is a message
// for the user (ConfigError names the field). Both sides are built by the
// same project with the same compiler, so exceptions and std types cross.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/train/run_config.h"
#include "ckpt/train/trainer.h"  // StepReport, RunResult, FinetuneOptions: declarations only

namespace ckpt {

// Bumped whenever this header changes: the loader refuses a plugin built
// against another version instead of crashing in it.
inline constexpr int kTrainBackendAbiVersion = 2;  // 2: ResumeOptions::inPlace, FinetuneOptions::overwrite

// What a prepared job will do, known before its first step.
struct TrainJobInfo {
  std::string runName;
  std::string stage;
  std::string outputDir;
  std::string device;  // "cpu", "cuda:0"
  int64_t startStep = 0;
  int64_t maxSteps = 0;
  int64_t tokensPerStep = 0;  // batch_size x seq_len
  std::string notes;          // the trainer's "what you should know" (a fresh optimizer, ...)
  std::string configJson;     // RunConfig::toJson() of the resolved run, for the log
};

// One training run: a new run, a resume or a fine-tune, ready to go.
class TrainJob {
 public:
  virtual ~TrainJob() = default;
  [[nodiscard]] virtual TrainJobInfo info() const = 0;
  // Runs to the end on the calling thread. `progress` is called after every
  // step; returning false stops after that step with a resumable checkpoint
  // (RunOutcome::Stopped). Throws on bad data, a NaN loss, a full disk.
  virtual RunResult run(const ProgressCallback& progress) = 0;
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
  // Each prepares a job (reads the data, builds or loads the model) and
  // throws what is wrong with the request.
  virtual std::unique_ptr<TrainJob> newRun(const RunConfig& config) = 0;
  virtual std::unique_ptr<TrainJob> resume(const ResumeOptions& options) = 0;
  virtual std::unique_ptr<TrainJob> finetune(const std::string& checkpoint, const FinetuneOptions& options) = 0;
};

}  // namespace ckpt

// The plugin's one exported symbol. It returns nullptr when `abiVersion`
// is not the one it was built with; the backend lives until the process ends.
extern "C" {
using CkptCreateTrainBackendFn = ckpt::TrainBackend* (*)(int abiVersion);
}
#define CKPT_TRAIN_BACKEND_FACTORY "ckptscope_create_train_backend"
