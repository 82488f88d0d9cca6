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
#include "ckpt/index/scanner.h"

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

// What a ModelCheckpoint file name says beside the step: "epoch=1-step=
// 100-val_loss=0.81.ckpt" -> {epoch: 1, val_loss: 0.81}. The name is the
// filename template with auto_insert_metric_name ("{epoch}-{val_loss:.2f}" ->
// "epoch={epoch}-val_loss={val_loss:.2f}"), parts joined by '-', so a value
// runs to the next "-<name>=" (a negative value keeps its '-'); a trailing
// "-v<N>" (a name taken twice) is no part of the value. `step` is left out
// (the step is the checkpoint's own), so is any value that is not a number
// (a "tensor(0.8100)" of a template without a format spec).
[[nodiscard]] std::map<std::string, double> lightningNameMetrics(std::string_view fileName);

// Marks the run's best checkpoint by its ModelCheckpoint record: the
// callbacks of its newest Lightning checkpoint (highest step, last.ckpt at a
// tie) name a best_model_path for a monitored metric; the checkpoint of
// that file name gets `best` and a bestSource naming the metric and score.
// A record whose file is not among the checkpoints marks nothing.
void applyModelCheckpointBest(RunEntry& run);

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
