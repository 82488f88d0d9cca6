#pragma once
// The plain value types of a training job: what the trainer (ckpt/train/
// trainer.h), `ckptscope-train --progress-json` and the desktop app's
// training plugin (train_backend.h) report and take. No Qt, no LibTorch, no
// code: the app includes this header without linking the trainer.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

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
}  // namespace ckpt
