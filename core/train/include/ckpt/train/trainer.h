#pragma once
// The training loop for the modern_llm decoder: new runs, exact resumes and
// fine-tunes, checkpoints that Python loads back. No Qt; no LibTorch in this
// header. The value types it reports with (StepReport, RunResult, ...) live
// in ckpt/trainapi/job_types.h, which the desktop app sees through the
// plugin seam without seeing the trainer.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/config/run_config.h"
#include "ckpt/trainapi/job_types.h"

namespace ckpt {

class Trainer {
 public:
  ~Trainer();
  Trainer(Trainer&&) noexcept;

  // Throws ConfigError / std::runtime_error with a message for the user.
  // An output directory that already holds files of the run
  // (existingRunFiles, ckpt/index/run_plan.h) is refused, unless `overwrite`:
  // then they are moved to <dir>/.trash/<stamp>/ when run() starts.
  static Trainer newRun(const RunConfig& config, bool overwrite = false);
  // Continues the run that wrote `checkpoint` (ours or the Python
  // library's) from its step, with its optimizer (planResume decides where):
  // the run's newest checkpoint continues in its directory, metrics.jsonl cut
  // back to the step; an older one continues as a new branch run
  // "<run>@<step>" in a sibling directory with lineage.json, the parent left
  // untouched, unless `inPlace`: then the later files move to .trash/ and the
  // run continues in its directory. Nothing is moved before run().
  static Trainer resume(const std::string& checkpoint, std::optional<int64_t> maxSteps = {},
                        const std::string& dataPath = {}, const std::string& device = "auto",
                        bool inPlace = false);
  // Weights only: a new optimizer and schedule, step 0, a new run directory
  // (refused when it holds files of that run, unless options.overwrite).
  static Trainer finetune(const std::string& checkpoint, const FinetuneOptions& options);

  RunResult run(const ProgressCallback& progress = {});

  [[nodiscard]] const RunConfig& config() const;
  [[nodiscard]] std::string deviceName() const;
  // Data-parallel runs (launched by torchrun, SLURM or --nproc): this
  // process's rank, the number of ranks, the process group's backend
  // ("gloo", "nccl"; "none" alone). Rank 0 alone writes files.
  [[nodiscard]] int rank() const;
  [[nodiscard]] int worldSize() const;
  [[nodiscard]] std::string backend() const;
  [[nodiscard]] int64_t startStep() const;
  [[nodiscard]] const std::string& notes() const;  // what the user should know before the run
  [[nodiscard]] TrainJobInfo jobInfo() const;

 private:
  struct Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// Mean cross-entropy of consecutive non-overlapping windows of `seqLen`
// tokens (the last partial window dropped), labels = inputs.
struct ScoreResult {
  double loss = 0;
  int64_t windows = 0;
  int64_t tokens = 0;
};
ScoreResult scoreCheckpoint(const std::string& checkpoint, const std::string& dataPath,
                            int64_t seqLen, const std::string& tokenizer = {},
                            const std::string& device = "auto");

// The one sampler of `ckptscope-cli generate` and the app's Generate panel
// (through the training plugin): the same checkpoint, prompt, settings and
// seed give the same tokens. Returns the whole completion; the pieces'
// texts joined are what `onToken` saw.
std::string generateText(const std::string& checkpoint, const GenerateOptions& options,
                         const GenerateCallback& onToken = {});

}  // namespace ckpt
