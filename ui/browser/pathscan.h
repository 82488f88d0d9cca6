#pragma once

#include <QString>
#include <QStringList>
#include <functional>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt {

// One top-level row of the browser: a run found by scanning a directory, the
// "Files" given directly on the command line, or a directory that could not
// be scanned (then `error` says why and `checkpoints` is empty).
struct BrowseGroup {
  enum class Kind { Run, Files };
  Kind kind = Kind::Run;
  QString name;
  QString path;  // the run's directory; empty for Files
  QString error;
  std::vector<CheckpointEntry> checkpoints;
  // Which trainer's layout the run was found by (RunEntry::trainer, ids as
  // scanner.h; trainerTitle names it), and the metrics and event files it
  // is listed for (a run without checkpoints has only these).
  std::string trainer;
  std::vector<std::string> metricFiles;
  std::vector<std::string> hparamFiles;  // hparams.h: RUN.json, hparams.yaml, params/, ...
  // What the trainer's own files say of the run beside its hyperparameters,
  // as the Summary shows it (label, text; lines in text end with '\n'):
  // an MLflow run's status, start, end and tags.
  std::vector<std::pair<QString, QString>> facts;
  // Where a run on another machine is, as a person writes it
  // ("ssh://[user@]host[:port]/path"), listed by its agent (ui/remote);
  // `path` and the checkpoints' paths are then the host's. Empty for a local run.
  QString remote;
  // In a scanPaths result: this run was handed to its runDone, which took
  // the group; this one is it without its checkpoints (restoreHandedOver).
  bool handedOver = false;
};

// Fills `group` from a scanned run: its checkpoints, trainer and metrics
// files (moved out of `run`) and the files its hyperparameters come from
// (hparamFiles: a look at the run's folder). Worker-thread work.
void takeRun(BrowseGroup& group, RunEntry&& run);

// Scans every path: directories with ckpt::scanDirectory (each run becomes a
// group), anything else with ckpt::describeCheckpoint into one "Files"
// group. Reads no tensor bytes and never throws. Meant for a worker thread:
// `progress(done, total)` is called after each file and stops the scan when
// it returns false. With more than one directory, run names are prefixed
// with their directory's name so they stay apart. `runDone`, when given,
// is handed each run of a directory as soon as its files are read
// (ScanOptions::runDone), on the scanning thread, and keeps it: the result
// holds in its place the same group without its checkpoints, `handedOver`
// set (50,000 checkpoints' entries are not copied to be listed early).
using ScanProgress = std::function<bool(size_t done, size_t total)>;
using ScanRunDone = std::function<void(BrowseGroup&& run)>;
[[nodiscard]] std::vector<BrowseGroup> scanPaths(const QStringList& paths,
                                                 const ScanProgress& progress = {},
                                                 const ScanRunDone& runDone = {});

// Gives each handed-over group of `groups` (a scanPaths result) its
// checkpoints back from the group of `shown` with its path (the groups its
// runDone was handed). One not found stays without them.
void restoreHandedOver(std::vector<BrowseGroup>& groups, std::vector<BrowseGroup> shown);

// Whether scanning `paths` reaches `file`: it is one of them, or lies under
// one of the directories.
[[nodiscard]] bool scanPathsCover(const QStringList& paths, const QString& file);

}  // namespace ckpt
