#include "compare/driftchain.h"

#include <QCoreApplication>
#include <QFileInfo>

#include "ckpt/index/experiment.h"
#include "ckpt/index/megatron.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("DriftChain", text);
}

void appendChain(const std::vector<CheckpointEntry>& checkpoints, QStringList& files,
                 QStringList& labels) {
  for (const CheckpointEntry* c : checkpointChain(checkpoints)) {
    // What opens the whole checkpoint: a Megatron save's folder (its ranks
    // joined), not its first rank's file.
    files << pathFromStd(inspectPathOf(*c));
    // A run's final file often sits at the step of its last step file: say which is which.
    QString label =
        c->step ? tr("step %1").arg(*c->step) : QFileInfo(pathFromStd(c->path)).fileName();
    if (c->step && c->kind != CheckpointKind::Step && c->kind != CheckpointKind::Unknown)
      label += QStringLiteral(" (%1)").arg(fromStd(std::string(checkpointKindName(c->kind))));
    labels << label;
  }
}

}  // namespace

DriftChain runDriftChain(const BrowseGroup& run) {
  DriftChain d;
  d.title = tr("Drift through %1: the change between consecutive checkpoints").arg(run.name);
  appendChain(run.checkpoints, d.files, d.labels);
  return d;
}

DriftChain familyDriftChain(const QString& family,
                            const std::vector<std::pair<QString, BrowseGroup>>& stages) {
  DriftChain d;
  d.title = tr("Stages of %1: what each stage changed (its last checkpoint against the one before)")
                .arg(family);
  for (const auto& [name, run] : stages) {
    // A branch (a resume from a middle step, "<run>@<step>") is not a stage:
    // the next stage continues from its parent, not from the branch.
    if (!splitStageName(run.name.toStdString()).branch.empty()) continue;
    QStringList files, labels;
    appendChain(run.checkpoints, files, labels);
    if (files.isEmpty()) continue;
    d.files << files.back();  // where the stage ended
    d.labels << (name.isEmpty() ? run.name : name);
  }
  return d;
}

}  // namespace ckpt
