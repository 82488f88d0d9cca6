#pragma once
// Hugging Face Accelerate's Accelerator.save_state(output_dir), as
// accelerate/checkpointing.py save_accelerator_state writes it:
//
//   <output_dir>/model.safetensors (pytorch_model.bin; model_<i>.* for the
//                  i-th prepared model), optimizer.bin (optimizer_<i>.bin),
//                  scheduler.bin, sampler.bin, dl_state_dict.bin, scaler.pt,
//                  random_states_<process>.pkl, custom_checkpoint_<i>.pkl
//
// is ONE checkpoint (not a run of seven files) of the run in its parent
// folder; with ProjectConfiguration(automatic_checkpoint_naming=True) the
// folders are <project_dir>/checkpoints/checkpoint_<i> (i counts saves,
// not steps) and the run is <project_dir>. Its step is the folder name's
// (step_500/, the examples' naming), else the optimizer's own step count
// (Adam's `step` in optimizer.bin). No Qt, no LibTorch.

#include <optional>
#include <string>
#include <string_view>

#include "ckpt/index/scanner.h"

namespace ckpt {

// CheckpointEntry::trainer / RunEntry::trainer of what these rules find.
inline constexpr std::string_view kAccelerateId = "accelerate";

// A folder save_state wrote: random_states_0.pkl beside the first model's
// weights (model.safetensors, pytorch_model.bin or their shard index).
[[nodiscard]] bool isAccelerateStateFolder(const std::string& dir);

// The run such a folder belongs to: <project_dir> for
// <project_dir>/checkpoints/checkpoint_<i>, else the folder's parent.
[[nodiscard]] std::string accelerateRunOf(const std::string& folder);

// What a file of such a folder holds: "weights", "model" (another
// prepared model's), "optimizer", "scheduler", "sampler", "dataloader",
// "scaler", "rng", "custom"; "" for a file save_state does not write.
[[nodiscard]] std::string_view acceleratePartRole(std::string_view fileName);

// The folder as one checkpoint: its weights described (never throws: an
// unreadable one has `error`), its other files as parts, `folder` set,
// the step as above, `trainer` kAccelerateId.
[[nodiscard]] CheckpointEntry describeAccelerateCheckpoint(const std::string& dir,
                                                           const std::string& file);

}  // namespace ckpt
