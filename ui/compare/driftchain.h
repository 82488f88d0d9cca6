#pragma once
// What Drift walks through: a run's checkpoint chain (experiment.h's
// checkpointChain), or a stage family's stages, each by its last checkpoint.
// The labels are the x axis of Drift's charts.

#include <QString>
#include <QStringList>
#include <utility>
#include <vector>

#include "browser/pathscan.h"

namespace ckpt {

struct DriftChain {
  QString title;
  QStringList files;
  QStringList labels;
};

// The run's checkpoints, labelled "step 200" ("step 400 (final)" for a final
// or best file at a step, the file name when no step is known).
[[nodiscard]] DriftChain runDriftChain(const BrowseGroup& run);

// One point per stage that has a readable checkpoint: where the stage ended,
// labelled with the stage's name (its run's name when it has none). Branch
// runs (<run>@<step>) are left out: they are not stages.
[[nodiscard]] DriftChain familyDriftChain(
    const QString& family, const std::vector<std::pair<QString, BrowseGroup>>& stages);

}  // namespace ckpt
