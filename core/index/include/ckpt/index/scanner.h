#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format/input_file.h"

namespace ckpt {

enum class CheckpointKind { Unknown, Step, Final, Best, Latest };
std::string_view checkpointKindName(CheckpointKind k);  // "step", "final", ...; "" for Unknown

// What a file name says: "tiny_step200.pt" -> step 200; "checkpoint_50.pt"
// -> 50; "tiny_final.pt" -> final; "best_checkpoint.pt", "checkpoint_best.pt",
// "model_best.pth.tar" -> best; "checkpoint_last.pt" -> latest.
struct NameInfo {
  std::optional<int64_t> step;
  CheckpointKind kind = CheckpointKind::Unknown;
};
NameInfo parseCheckpointName(std::string_view fileName);

// A file of a checkpoint beside its weights: a Hugging Face Trainer
// folder's optimizer.pt, scheduler.pt, rng_state.pth, ... (hf_trainer.h).
struct CheckpointPart {
  std::string role;  // "optimizer", "scheduler", "scaler", "rng", "trainer_state", ...
  std::string file;  // its name in the checkpoint's folder
  std::string path;  // as opened
  uint64_t size = 0;
  // A pickle (.pt, .pth, .bin): its safety verdict ("safe", ...); "" for JSON.
  std::string verdict;
  bool operator==(const CheckpointPart&) const = default;
};

// One checkpoint file as a listing shows it.
struct CheckpointEntry {
  std::string file;    // relative to the scanned root
  std::string path;    // as opened
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
  // Bytes of the storages its tensors view (each storage once), and of those
  // reachable from the optimizer state (CheckpointView::optimizer): from the
  // tensor table, no tensor bytes read. 0 when unknown (unreadable, sharded).
  uint64_t tensorBytes = 0;
  uint64_t optimizerBytes = 0;
  std::string error;  // why it cannot be read; "" when fine
  // Would the file run code if Python unpickled it (ckpt/format/pickle_safety.h)?
  // "safe", "suspicious", "dangerous" or "unreadable"; the dangerous and
  // suspicious globals ("posix.system"), worst first; a one-line summary.
  std::string verdict;
  std::vector<std::string> offenders;
  std::string safety;
  // A checkpoint of many files (ckpt/format/sharded.h), listed once under its
  // folder or index file: "sharded: Hugging Face, 3 files"; "" for one file.
  std::string sharded;
  std::string layout;    // "hf-index", ...
  int ranks = 0;         // ranks that wrote it (0: the layout has none)
  int shardFiles = 0;    // files it is made of, its description included
  int shardMissing = 0;  // of those, the ones that are not there
  // The trainer whose layout it was found by: "hf-trainer" (a Hugging Face
  // Trainer's checkpoint-<step>/ folder, hf_trainer.h); "" for a file on its own.
  std::string trainer;
  // The other files of a checkpoint folder (`path` is its weights).
  std::vector<CheckpointPart> parts;
  // The folder that is the checkpoint (a Trainer's checkpoint-<step>/): what
  // removing the checkpoint removes. "" when the checkpoint is `path`.
  std::string folder;
  // The run's best checkpoint by its trainer's own record
  // (trainer_state.json's best_model_checkpoint, a Lightning ModelCheckpoint's
  // best_model_path); its kind stays `step`. `bestSource` says which record:
  // "trainer_state.json", "ModelCheckpoint: lowest val_loss 0.81".
  bool best = false;
  std::string bestSource;
  // What a Lightning checkpoint's ModelCheckpoint callbacks record as their
  // best (lightning.h): the file they name, the monitored metric and its
  // score. Read from each file; the scanner marks `best` by the newest one.
  struct RecordedBest {
    std::string path;
    std::string monitor;
    std::string mode;  // "min", "max", "" when the state key does not say
    std::optional<double> score;
    bool operator==(const RecordedBest&) const = default;
  };
  std::vector<RecordedBest> recordedBest;
  // The tag folder DeepSpeed's `latest` file names (the newest it saved);
  // its kind stays `step`.
  bool latest = false;
  [[nodiscard]] bool isDangerous() const { return verdict == "dangerous"; }
  // Every field equal (a listing that says the same of the file).
  bool operator==(const CheckpointEntry&) const = default;
};

// A run: the checkpoints of one directory, sorted by step, or a directory
// with metrics and no checkpoint yet.
struct RunEntry {
  std::string name;  // directory relative to the root ("." style root -> its own name)
  std::string path;
  std::vector<CheckpointEntry> checkpoints;
  // The directory the user opened (scanDirectory's root): console logs are
  // looked for in `logs/` folders of every ancestor up to it. "" when unknown
  // (then only the run's directory and its parent are searched).
  std::string root;
  // "hf-trainer" for a Hugging Face Trainer's output folder; "" otherwise.
  std::string trainer;
  // The metrics files in its directory (metrics.jsonl, trainer_state.json):
  // a run without checkpoints is listed for these.
  std::vector<std::string> metricFiles;
};

struct ScanResult {
  std::string root;
  std::vector<RunEntry> runs;
};

struct ScanOptions {
  // Called after each file; return false to stop early.
  std::function<bool(size_t done, size_t total)> progress;
  // Called with each run as soon as every file of it (and of the runs
  // listed before it) is read, finished as the result will hold it: what a
  // browser shows while the rest are still read. Runs come in the natural
  // order of their folders' names; the result is sorted by the names they
  // end with (an MLflow or W&B run is named as its tool names it). A scan
  // stopped by `progress` hands over the rest only in its result. Both
  // callbacks run on the thread that called scanDirectory. The callee may
  // take what it keeps out of `run` (move it: a copy of 50,000 checkpoints'
  // entries is memory to touch); the result holds what it leaves.
  std::function<void(RunEntry& run)> runDone;
  // Threads that read the files (0: the machine's cores, at most 8). Each
  // small checkpoint is a few tens of microseconds of parsing; 50,000 of
  // them keep two cores busy.
  unsigned threads = 0;
};

// Whether a path's extension makes it a candidate (.pt .pth .bin .ckpt
// .safetensors, .pth.tar as PyTorch's ImageNet example names its
// checkpoints, and plain pickles .pkl .pickle); .bin, .ckpt and .pth.tar
// files are listed only when their first bytes say torch or safetensors.
bool isCandidateName(std::string_view fileName);

// Reads one file's metadata (never its tensor bytes). Never throws: an
// unreadable file comes back with `error` set. `stamp`, when given, is set
// to the file's stamp as it was opened when it was read as one regular
// file (InputFile::stamp), else left empty.
CheckpointEntry describeCheckpoint(const std::string& path, const std::string& relative,
                                   std::optional<FileStamp>* stamp = nullptr);

// A run's name: `dir` relative to `root`; the root's own name when they are one.
std::string runNameFor(const std::string& root, const std::string& dir);

// By step; at one step the step file, then best, latest, final; then by
// name in natural order (natural_order.h).
void sortCheckpoints(std::vector<CheckpointEntry>& checkpoints);

// The checkpoints directly in `dir` (not below it; a Hugging Face Trainer's
// checkpoint-<step>/ folders in it are its checkpoints), named relative to
// `root` as scanDirectory names them; nothing for a checkpoint-<step>/
// folder itself (its files are its parent run's checkpoint). `keep(entry)`, when given, is asked
// after each file is read and may leave it out (the watcher: a file still being written). Throws
// std::runtime_error when dir cannot be listed.
RunEntry scanRunDirectory(const std::string& root, const std::string& dir,
                          const std::function<bool(const CheckpointEntry& entry)>& keep = {});

// Every checkpoint under `root`, grouped into runs by directory (a Hugging
// Face Trainer's checkpoint-<step>/ folders: one checkpoint each of the run
// in their parent), and every directory with metrics.jsonl or
// trainer_state.json but no checkpoint as a run without one; runs in
// natural order of their names. Throws std::runtime_error when root itself
// cannot be read.
ScanResult scanDirectory(const std::string& root, const ScanOptions& options = {});

}  // namespace ckpt
