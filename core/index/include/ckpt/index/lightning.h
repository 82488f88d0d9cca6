#pragma once
// PyTorch Lightning runs, as its loggers and ModelCheckpoint leave them:
//
//   <save_dir>/<name>/version_<N>/      hparams.yaml, metrics.csv (CSVLogger),
//                                       events.out.tfevents.* (TensorBoardLogger)
//   <save_dir>/<name>/version_<N>/checkpoints/
//                                       epoch=<E>-step=<S>[-<metric>=<V>].ckpt, last.ckpt
//
// is ONE run (`<name>/version_<N>`), the files in its checkpoints/ folder its
// checkpoints. The scanner asks these rules; the metrics read metrics.csv.
// No Qt, no LibTorch.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt {

// CheckpointEntry::trainer / RunEntry::trainer of what these rules find.
inline constexpr std::string_view kLightningId = "lightning";

// "version_3" -> true: the folder name Lightning's loggers give each run.
[[nodiscard]] bool isLightningVersionName(std::string_view folderName);

// A folder a Lightning logger wrote: named version_<N>, or holding
// metrics.csv or hparams.yaml.
[[nodiscard]] bool isLightningRunFolder(const std::string& dir);

// The run a checkpoint file belongs to: for <run>/checkpoints/<file> with
// <run> a Lightning run folder, <run>; nothing otherwise.
[[nodiscard]] std::optional<std::string> lightningRunOf(const std::string& checkpointPath);

// A folder named checkpoints inside a Lightning run folder: its files are
// that run's checkpoints, it is no run of its own.
[[nodiscard]] bool isLightningCheckpointFolder(const std::string& dir);

// <runDir>/hparams.yaml (save_hparams_to_yaml: yaml.dump of the module's
// hparams): its top-level `key: value` lines, quotes taken off; nested
// blocks are skipped (no YAML library). Nothing when there is no such file.
[[nodiscard]] std::map<std::string, std::string> readLightningHparams(const std::string& runDir);

// metrics.csv as CSVLogger writes it (lightning.fabric.loggers.csv_logs
// _ExperimentWriter: a header of every key logged, sorted, `step` among
// them; one row per log_metrics call, csv.DictWriter leaving the keys that
// call did not log empty): per column other than `step`, every row's
// numeric cell at that row's step, through addInFileOrder. Empty and
// non-numeric cells are skipped; a row without an integer step is skipped and
// named ("file: line N: why") in `problems`. Throws std::runtime_error naming
// the file when it cannot be opened or has no `step` column.
[[nodiscard]] std::vector<FileSeries> readLightningMetricsCsv(
    const std::string& path, std::vector<std::string>* problems = nullptr);

}  // namespace ckpt
