#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

enum class CheckpointKind { Unknown, Step, Final, Best, Latest };
std::string_view checkpointKindName(CheckpointKind k);  // "step", "final", ...; "" for Unknown

// What a file name says: "tiny_step200.pt" -> step 200; "checkpoint_50.pt"
// -> 50; "tiny_final.pt" -> final; "best_checkpoint.pt" -> best.
struct NameInfo {
  std::optional<int64_t> step;
  CheckpointKind kind = CheckpointKind::Unknown;
};
NameInfo parseCheckpointName(std::string_view fileName);

// One checkpoint file as a listing shows it.
struct CheckpointEntry {
  std::string file;  // relative to the scanned root
  std::string path;  // as opened
  std::string format;  // "torch-zip", ...; "" when unreadable
  std::optional<int64_t> step;
  CheckpointKind kind = CheckpointKind::Unknown;
  std::optional<double> loss;
  std::optional<std::string> runName;  // from metadata
  std::optional<std::string> stage;    // from metadata
  // Numeric metadata for curves: loss, train_loss, val_loss, learning_rate,
  // tokens_seen, accuracy (those present).
  std::map<std::string, double> scalars;
  uint64_t size = 0;
  int64_t mtime = 0;
  std::string error;  // why it cannot be read; "" when fine
};

// A run: the checkpoints of one directory, sorted by step.
struct RunEntry {
  std::string name;  // directory relative to the root ("." style root -> its own name)
  std::string path;
  std::vector<CheckpointEntry> checkpoints;
};

struct ScanResult {
  std::string root;
  std::vector<RunEntry> runs;
};

struct ScanOptions {
  // Called after each file; return false to stop early.
  std::function<bool(size_t done, size_t total)> progress;
};

// Whether a path's extension makes it a candidate (.pt .pth .bin .ckpt
// .safetensors); .bin and .ckpt files are listed only when their first bytes
// say torch or safetensors.
bool isCandidateName(std::string_view fileName);

// Reads one file's metadata (never its tensor bytes). Never throws: an
// unreadable file comes back with `error` set.
CheckpointEntry describeCheckpoint(const std::string& path, const std::string& relative);

// Every checkpoint under `root`, grouped into runs by directory. Throws
// std::runtime_error when root itself cannot be read.
ScanResult scanDirectory(const std::string& root, const ScanOptions& options = {});

}  // namespace ckpt
