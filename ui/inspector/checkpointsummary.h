#pragma once

#include <QList>
#include <QString>
#include <cstdint>
#include <vector>

namespace ckpt {

// One line of the summary: "Step" -> "300".
struct SummaryField {
  QString label;
  QString value;
  bool wide = false;  // long text: gets a table row to itself
};

// One tensor of the file, as the tensor table shows it.
struct TensorRow {
  QString name;  // path in the value tree, "model_state.blocks.0.attn.q_proj.weight"
  QString dtype;
  QString shape;  // "[64, 64]"
  uint64_t elements = 0;
  uint64_t bytes = 0;
  QString note;  // shared storage, a mapped optimizer parameter, or why its bytes are unreadable
  bool broken = false;
};

// Everything the summary panel shows about one checkpoint file, computed off
// the GUI thread from the value tree (no tensor bytes are read). A file that
// cannot be opened comes back with `error` set and nothing else.
struct CheckpointSummary {
  QString path;
  QString error;
  QList<SummaryField> fields;    // format, size, step, loss, run, stage, parameters, ...
  QList<SummaryField> config;    // the model config dict, in file order
  QList<SummaryField> metadata;  // every metadata key except config, in file order
  QStringList notes;             // things a user should know (CheckpointView::notes)
  std::vector<TensorRow> tensors;
  uint64_t tensorBytes = 0;

  [[nodiscard]] bool ok() const { return error.isEmpty(); }
};

// Opens `path` with CheckpointFile::open and describes it through a
// CheckpointView. Never throws.
[[nodiscard]] CheckpointSummary summarizeCheckpoint(const QString& path);

}  // namespace ckpt
