#pragma once
// Hugging Face Trainer output folders, as transformers' Trainer leaves them
// (Trainer._save_checkpoint, TrainerState.save_to_json):
//
//   out/checkpoint-500/   model.safetensors | pytorch_model.bin | their shard
//                         index + shards | adapter_model.safetensors (PEFT),
//                         optimizer.pt, scheduler.pt, scaler.pt,
//                         rng_state.pth (rng_state_<rank>.pth), trainer_state.json,
//                         training_args.bin, config.json
//   out/checkpoint-1000/  ...
//   out/model.safetensors, config.json, training_args.bin, trainer_state.json
//                         (trainer.save_model() / save_state() at the end)
//
// is ONE run (`out`) whose checkpoints are the checkpoint-<step> folders, one
// each with that step, the final model in out/ itself its final checkpoint.
// The scanner asks these rules; the metrics take the run's curves from the
// newest trainer_state.json's log_history. No Qt, no LibTorch; nothing here
// runs a pickle (training_args.bin is scanned for safety, never loaded).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"
#include "ckpt/index/scanner.h"

namespace ckpt {

// CheckpointEntry::trainer / RunEntry::trainer of what these rules find.
inline constexpr std::string_view kHfTrainerId = "hf-trainer";

// "checkpoint-500" -> 500 (the Trainer's PREFIX_CHECKPOINT_DIR, '-', the
// global step); nothing for any other name.
[[nodiscard]] std::optional<int64_t> hfCheckpointFolderStep(std::string_view folderName);

// What a file of a Trainer folder is: "weights" (model.safetensors,
// pytorch_model.bin, their *.index.json, adapter_model.*), "weights-shard"
// (model-00001-of-00003.safetensors, ...), "optimizer", "scheduler",
// "scaler", "rng", "trainer_state", "training_args", "config"; "" for a
// file the Trainer does not write.
[[nodiscard]] std::string_view hfPartRole(std::string_view fileName);

// A folder named checkpoint-<step> holding a file the Trainer writes there
// (weights, optimizer.pt or trainer_state.json).
[[nodiscard]] bool isHfCheckpointFolder(const std::string& dir);

// A folder the Trainer used as output_dir: it holds checkpoint-<step>
// folders, a trainer_state.json or a training_args.bin.
[[nodiscard]] bool isHfOutputFolder(const std::string& dir);

// One checkpoint of a Trainer folder: the weights (the first of the shard
// indexes, model.safetensors, pytorch_model.bin, adapter_model.*; for a
// DeepSpeed run without them, the folder itself) read by describeCheckpoint,
// what Inspect opens (`path`); every other file the Trainer wrote beside them
// in `parts`, its size counted in `size` (what deleting the folder frees)
// and its pickles in the safety verdict (a resume torch.loads them all).
// `file` names it ("checkpoint-500", or the final weights' file). A
// checkpoint folder: kind step, step from its name; the output folder's own
// weights (`finalModel`): kind final, step from its trainer_state.json
// (applyTrainerState). A checkpoint folder's `folder` is that folder (what
// pruning moves to the trash). Never throws: no weights at all is `error`.
[[nodiscard]] CheckpointEntry describeHfCheckpoint(const std::string& dir, const std::string& file,
                                                   bool finalModel);

// The trainer_state.json a run's history comes from: of the highest-step
// checkpoint-<step>/ holding one and the run folder's own (save_state), the
// one with the higher global_step, the run folder's at a tie (it alone has
// the summary row of a finished training). "" when there is none.
[[nodiscard]] std::string newestTrainerState(const std::string& runDir);

// What a trainer_state.json says.
struct TrainerStateLog {
  std::optional<int64_t> globalStep;
  std::optional<std::string> bestModelCheckpoint;  // as written: a path to a checkpoint folder
  std::optional<double> bestMetric;
  // log_history, per metric in row order through addInFileOrder: every
  // number of a row but `step` (the point's step), named as the Curves tab
  // names our own runs': eval_<key> -> val_<key> (eval_loss -> val_loss, the
  // validation curve beside `loss`), learning_rate -> lr, the rest as
  // logged (loss, grad_norm, epoch, ...). num_input_tokens_seen, when a row
  // has it, is also the tokens of that row's points.
  std::vector<FileSeries> series;
  // The row train() logs when it ends (train_runtime, train_loss,
  // total_flos, ...): the run's summary, not a point.
  std::map<std::string, double> summary;
};

// eval_loss -> val_loss, learning_rate -> lr, anything else unchanged.
[[nodiscard]] std::string hfMetricName(std::string_view key);

// Reads one trainer_state.json (Python's NaN / Infinity accepted). Throws
// std::runtime_error naming the file and the byte or the log_history row
// that cannot be read; a row without a step is skipped and said in
// `problems`.
[[nodiscard]] TrainerStateLog readTrainerState(const std::string& path,
                                               std::vector<std::string>* problems = nullptr);

// For a Trainer run: marks the checkpoint folder best_model_checkpoint names
// (CheckpointEntry::best) and gives the final model the global step of the
// run folder's trainer_state.json, from newestTrainerState. A state that
// cannot be read changes nothing (the curves report it).
void applyTrainerState(RunEntry& run);

}  // namespace ckpt
