#pragma once
// The training loop for the modern_llm decoder: new runs, exact resumes and
// fine-tunes, checkpoints that Python loads back. No Qt; no LibTorch in this
// header (the GUI's worker thread includes it).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/train/run_config.h"

namespace ckpt {

// One report per optimizer step (and a last one when the run ends).
struct StepReport {
  int64_t step = 0;  // steps done
  int64_t maxSteps = 0;
  double loss = 0;  // mean training loss of this step
  double learningRate = 0;
  int64_t tokensSeen = 0;
  double tokensPerSecond = 0;
  double elapsedSeconds = 0;
  // Data-parallel runs: this step's gradient all-reduce, the time the
  // training thread spent on it (flattening, launching, waiting, copying
  // back), its buckets and how many of them started before backward returned.
  double allReduceSeconds = 0;
  double allReduceWaitSeconds = 0;  // of it, waiting after backward
  int allReduceBuckets = 0;
  int allReduceBucketsInBackward = 0;
  std::optional<double> valLoss;  // when this step evaluated
  std::string savedCheckpoint;    // when this step wrote one
  std::string message;            // notes: "resumed with a fresh optimizer", ...
};

// Return false to stop: the step in flight finishes and a resumable
// checkpoint is written.
using ProgressCallback = std::function<bool(const StepReport&)>;

enum class RunOutcome { Finished, Stopped };

struct RunResult {
  RunOutcome outcome = RunOutcome::Finished;
  int64_t step = 0;
  std::string lastCheckpoint;  // the newest file written (final, or the stop checkpoint)
  std::string outputDir;
  std::optional<double> bestValLoss;
};

struct FinetuneOptions {
  std::string dataPath;   // required
  std::string tokenizer;  // "" -> the checkpoint's
  std::string outputDir;  // "" -> "<parent dir>/<run>-<stage>"
  std::string stage = "sft";
  double learningRate = 1e-5;  // the reference's SFT rate
  int64_t maxSteps = 0;        // 0 -> the parent's max_steps
  std::string device = "auto";
  // The stage directory already holds files of this run: move them to its
  // .trash/ instead of refusing.
  bool overwrite = false;
};

// What a prepared job will do, known before its first step (the Train
// panel's title, progress range and device; one per rank).
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
  int rank = 0;               // data-parallel runs: this rank of worldSize
  int worldSize = 1;
  std::string backend = "none";  // "gloo", "nccl"; "none" alone
};

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

struct GenerateOptions {
  std::string prompt;
  int64_t maxNewTokens = 64;
  double temperature = 1.0;  // 0: greedy
  int64_t topK = 0;          // 0: all
  uint64_t seed = 0;
  std::string tokenizer;  // "" -> the checkpoint's
  std::string device = "auto";
};
// One new token, handed over as soon as it is sampled.
struct GeneratedToken {
  int64_t index = 0;  // 0 for the first new token
  int32_t id = 0;
  std::string text;  // the text it adds to the completion ("" when it adds none yet)
};
// Called after every new token; returning false stops there (no more
// tokens are sampled and the completion so far is returned).
using GenerateCallback = std::function<bool(const GeneratedToken&)>;
// The one sampler of `ckptscope-cli generate` and the app's Generate panel
// (through the training plugin): the same checkpoint, prompt, settings and
// seed give the same tokens. Returns the whole completion; the pieces'
// texts joined are what `onToken` saw.
std::string generateText(const std::string& checkpoint, const GenerateOptions& options,
                         const GenerateCallback& onToken = {});

}  // namespace ckpt
