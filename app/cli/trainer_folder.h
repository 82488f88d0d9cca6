#pragma once
// A Hugging Face Trainer's checkpoint-<step>/ folder or an Accelerate
// save_state folder named on the command line: `ls` lists it as one
// checkpoint, so info, diff, verify, export and consolidate take it too
// (hf_trainer.h, accelerate.h).
#include <optional>
#include <string>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt::cli {

struct TrainerFolder {
  std::string weights;  // what Inspect opens: model.safetensors, pytorch_model.bin, an index
  std::vector<CheckpointPart> parts;  // optimizer.pt, scheduler.pt, rng_state.pth, ...
};

// The folder's files, when `path` is such a folder; throws FormatError
// naming it when it holds no weights.
[[nodiscard]] std::optional<TrainerFolder> trainerFolder(const std::string& path);

// `path` itself, or such a folder's weights.
[[nodiscard]] std::string checkpointArgument(const std::string& path);

}  // namespace ckpt::cli
