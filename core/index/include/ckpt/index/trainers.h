#pragma once
// Which trainer's layout a run or checkpoint was found by
// (RunEntry::trainer, CheckpointEntry::trainer), and the rules the layouts
// share. The ids of the other layouts live beside their rules:
// kHfTrainerId (hf_trainer.h), kAccelerateId (accelerate.h), kLightningId
// (lightning.h), kMlflowId (mlflow.h), kMegatronId (megatron.h),
// kTorchtitanId (torchtitan.h), kWandbId (wandb.h).
// No Qt.

#include <array>
#include <string>
#include <string_view>

#include "ckpt/index/scanner.h"

namespace ckpt {

inline constexpr std::string_view kTensorBoardId = "tensorboard";  // event files only
inline constexpr std::string_view kNanoGptId = "nanogpt";          // ckpt.pt with iter_num
inline constexpr std::string_view kDeepSpeedId = "deepspeed";      // tag folders, `latest`
inline constexpr std::string_view kCkptScopeId = "ckptscope";      // our metrics.jsonl

// What a person calls it: "Hugging Face Trainer", "TensorBoard", ...; an
// unknown id as it is.
[[nodiscard]] std::string_view trainerTitle(std::string_view id);

// A run's folders whose subfolders hold event files of that run, one
// subfolder per launch: a Hugging Face Trainer's logging_dir
// runs/<date>_<host>/, torchtitan's tb/<timestamp>/. The scanner (a run
// without checkpoints: metrics files or event files, its RunEntry::
// metricFiles those and these) and findMetricSources both follow this list.
inline constexpr std::array<std::string_view, 2> kRunEventFolders{"runs", "tb"};

// Adds the file at `path` to `e`'s parts as `file` (its name in the
// checkpoint's folder) in `role`: its size to e.size, and, a pickle (.pt
// .pth .bin), its safety verdict, worse than e's ones taking e's place (a
// resume torch.loads every part).
void addCheckpointPart(CheckpointEntry& e, const std::string& path, std::string file,
                       std::string role);

// Adds each file directly in `dir` whose role (`roleOf` its name) is
// neither "" nor "weights" nor "weights-shard" as a part of `e`
// (addCheckpointPart), in natural order of their names: the other files of
// a Trainer's or Accelerate's checkpoint folder.
void addFolderParts(CheckpointEntry& e, const std::string& dir,
                    std::string_view (*roleOf)(std::string_view));

}  // namespace ckpt
