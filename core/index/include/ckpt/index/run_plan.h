#pragma once
// What a train or a resume will do to a run directory, decided before it
// starts: which files a new run would clash with, whether a checkpoint is its
// run's newest (resume in place) or a branch point (a new run <run>@<step>
// next to the parent), which intact checkpoint `resume DIR` picks. The one
// home of these rules: the trainer, ckptscope-cli and the desktop app (which
// never links LibTorch) all call these functions. No Qt, no LibTorch.
//
// Nothing here deletes a user's file: what goes away is moved to
// <dir>/.trash/<YYYYmmdd-HHMMSS>/. The one exception is a writer's own
// leftover, `.<name>.tmp-<pid>-<hex>`, removed once its process is gone.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

// What resuming `checkpoint` will do.
struct ResumePlan {
  std::string checkpoint;  // absolute, normalised
  int64_t step = 0;        // the checkpoint's step (metadata, else its name)
  std::string runName;     // metadata run_name, else the directory's name
  std::string runDir;      // absolute directory of the checkpoint
  // No checkpoint of the run in runDir is later than `step` (nor of unknown
  // step): the resume continues the run in runDir.
  bool isNewest = true;
  // When !isNewest: the run a default resume continues as, "<run>@<step>"
  // ("<run>@<step>-2", ... when that directory already holds a run), and its
  // directory, a sibling of runDir.
  std::string branchRunName;
  std::string branchDir;
  // When !isNewest: the files (absolute) a --in-place resume moves to
  // runDir/.trash/ before it starts, newest first.
  std::vector<std::string> laterFiles;
};

// Reads the checkpoint's metadata (never its tensor bytes) and lists its
// directory. Throws std::runtime_error naming the file when it cannot be read.
ResumePlan planResume(const std::string& checkpoint);

// The files in `dir` that a new run named `runName` would overwrite or mix
// its history into: <run>_step<N>.pt, <run>_final.pt, <run>_final_step<N>.pt,
// best_checkpoint.pt, metrics.jsonl, metrics.superseded.jsonl, lineage.json.
// Sorted file names; empty when `dir` does not exist.
std::vector<std::string> existingRunFiles(const std::string& dir, const std::string& runName);

// The one-line refusal of a new run into `dir` that holds `files` (names
// from existingRunFiles): the directory and the three ways on.
std::string clashMessage(const std::string& dir, const std::string& runName,
                         const std::vector<std::string>& files);

// `resume DIR`: the newest checkpoint in `dir` (not below it) that verifies
// (every zip CRC, every storage record, every tensor extent: CheckpointFile::
// verify), and each newer one skipped with its reason.
struct SkippedCheckpoint {
  std::string file;    // file name within the directory
  std::string reason;  // "truncated: zip central directory not found", ...
};
struct IntactCheckpoint {
  std::string checkpoint;                  // "" when none is intact
  std::vector<SkippedCheckpoint> skipped;  // newest first
};
// Throws std::runtime_error when `dir` cannot be listed, holds no
// checkpoint, or holds checkpoints of several runs (their names said).
IntactCheckpoint newestIntactCheckpoint(const std::string& dir);

// Moves `files` (paths inside `dir`) to a new folder dir/.trash/<YYYYmmdd-HHMMSS>
// (UTC; "-2", ... when one of that second exists), keeping their names.
// Returns the folder. Throws std::runtime_error naming the file that could
// not be moved (those moved before it stay in the folder).
std::string moveToTrash(const std::string& dir, const std::vector<std::string>& files);

// Moves `files` (paths inside `dir`) to the desktop's trash, as the
// freedesktop.org trash specification says: $XDG_DATA_HOME/Trash (default
// ~/.local/share/Trash), files/<name> with info/<name>.trashinfo (Path,
// DeletionDate), a name made unique as "stem.2.ext", ... A file on another
// filesystem than that trash goes with moveToTrash to dir/.trash/<stamp>/
// instead (never copied, never deleted). Returns where each file went, in
// the order given. Throws std::runtime_error naming the file that could not
// be moved (those moved before it stay moved).
struct TrashedFile {
  std::string from;       // absolute
  std::string to;         // absolute
  std::string trashInfo;  // the .trashinfo written; "" for dir/.trash/
};
std::vector<TrashedFile> trashFiles(const std::string& dir, const std::vector<std::string>& files);
// The desktop trash's folder: $XDG_DATA_HOME/Trash, else $HOME/.local/share/Trash.
std::string desktopTrashDir();

// `.<name>.tmp-<pid>-<8 hex>`: the temporary file of an atomic write.
bool isTempFileName(std::string_view fileName);
// Removes the temporary files in `dir` whose writer process no longer runs;
// returns their names. Never throws (a file it cannot remove stays).
std::vector<std::string> removeStaleTempFiles(const std::string& dir);

// A resume in place: metrics.jsonl keeps the history of the checkpoint at
// `step`, one line per step in file order: what Curves draws up to the last
// line logged for `step` (a restarted job's lines replace the ones it went
// back over; a line logged twice, the last wins). Every other line (later
// steps, lines a restart replaced, a restart logged after that line, a line
// torn by a kill) is appended to metrics.superseded.jsonl first, then
// metrics.jsonl is replaced atomically.
struct MetricsTrim {
  size_t kept = 0;
  size_t superseded = 0;
};
MetricsTrim trimMetrics(const std::string& dir, int64_t step);

// lineage.json in a branch's directory: where its history continues from.
// {"run", "parent_run", "parent_dir", "parent_checkpoint", "parent_step",
//  "created"}; the parent's metrics.jsonl up to parent_step is the branch's
// history before its own metrics.jsonl.
struct Lineage {
  std::string run;
  std::string parentRun;
  std::string parentDir;
  std::string parentCheckpoint;
  int64_t parentStep = 0;
  std::string created;  // ISO 8601 UTC
};
void writeLineage(const std::string& dir,
                  const Lineage& lineage);  // atomically; throws naming the file
std::optional<Lineage> readLineage(
    const std::string& dir);  // nullopt when absent; throws when malformed

}  // namespace ckpt
