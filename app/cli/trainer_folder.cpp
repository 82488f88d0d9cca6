#include "trainer_folder.h"

#include <filesystem>
#include "ckpt/format/error.h"
#include "ckpt/index/accelerate.h"
#include "ckpt/index/hf_trainer.h"

namespace ckpt::cli {

std::optional<TrainerFolder> trainerFolder(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return std::nullopt;
  const bool hf = isHfCheckpointFolder(path);
  if (!hf && !isAccelerateStateFolder(path)) return std::nullopt;
  const std::string name = std::filesystem::path(path).filename().string();
  const CheckpointEntry e =
      hf ? describeHfCheckpoint(path, name, false) : describeAccelerateCheckpoint(path, name);
  if (e.path.empty())
    throw FormatError(path + ": " + (e.error.empty() ? "no weights in this folder" : e.error));
  return TrainerFolder{e.path, e.parts};
}

std::string checkpointArgument(const std::string& path) {
  const auto folder = trainerFolder(path);
  return folder ? folder->weights : path;
}

}  // namespace ckpt::cli
