#pragma once
// What the app says about a run as a whole and about where each thing of a
// run or checkpoint came from: the run row's Summary (the Inspect pane)
// and the "Trainer" line of a checkpoint's Summary. The layout rules stay
// in core/index (trainers.h, hparams.h); this only words what they found.

#include <QString>
#include <QStringList>
#include <string>
#include <vector>

#include "browser/pathscan.h"

namespace ckpt {

// "Hugging Face Trainer" for a run found by that layout (trainerTitle);
// empty when nothing says which trainer wrote it.
[[nodiscard]] QString trainerText(const std::string& trainer);

// One thing and the files it came from, relative to the run's folder:
// ("weights", {"checkpoint-500/model.safetensors"}), ("optimizer", ...),
// ("metrics", {"trainer_state.json", "runs/<launch>/events.out.tfevents..."}),
// ("hyperparameters", {"config.json", "training_args.bin"}).
struct ThingSource {
  QString thing;
  QStringList files;
};

// Where things came from: for one of the run's checkpoints its weights
// and its folder's other files by role, then the run's metrics and
// hyperparameters; for the run itself (`checkpoint` null) its metrics and
// hyperparameters (its checkpoints are listed apart), the newest
// checkpoint's hyperparameter files (a Trainer's config.json) among them.
[[nodiscard]] std::vector<ThingSource> thingSources(const BrowseGroup& run,
                                                    const CheckpointEntry* checkpoint);

// The Summary's "Trainer" line: "Hugging Face Trainer: weights from
// checkpoint-500/model.safetensors; optimizer from checkpoint-500/optimizer.pt;
// ...; metrics from trainer_state.json". Empty when no trainer is named and
// nothing came from another file (a file opened on its own).
[[nodiscard]] QString trainerLine(const BrowseGroup& run, const CheckpointEntry* checkpoint);

// What the Inspect pane shows for a run or "Files" row: which trainer
// wrote it and where its things came from, its checkpoints in a table (or
// that it has none yet); or why its directory could not be scanned. HTML.
[[nodiscard]] QString groupSummaryHtml(const BrowseGroup& group);

}  // namespace ckpt
