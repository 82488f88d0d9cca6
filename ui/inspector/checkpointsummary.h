#pragma once

#include <QList>
#include <QString>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ckpt/analysis/tensor_stats.h"

namespace ckpt {

class CheckpointFile;
class JobProgress;
struct TensorStats;
struct CheckpointDescription;
struct DescribedSafety;
struct ShardListing;

// A node of the value tree as the Metadata tab shows it: key, kind, a short
// value; containers and opaque objects have children. Built off the GUI
// thread; `parent` and `row` are set once the tree is complete.
struct MetaNode {
  QString key;      // dict key, list position, or "args" / "state" of an object
  QString type;     // "dict", "int", "tensor", "object", ...
  QString value;    // short text; an object's class name; a tensor's dtype and shape
  int tensor = -1;  // a Tensor node: index into CheckpointFile::tensors()
  std::vector<MetaNode> children;
  const MetaNode* parent = nullptr;
  int row = 0;
};

// A node of the parameter hierarchy: "blocks" -> "0" -> "attn" -> "q_proj"
// -> "weight". Inner nodes sum their leaves, each storage counted once (a
// tied weight adds nothing to its parents); leaves are state-dict entries.
struct ParamNode {
  QString name;      // this segment
  QString fullName;  // dotted path from the root
  uint64_t parameters = 0;
  uint64_t bytes = 0;
  int tensor = -1;  // leaves: index into CheckpointFile::tensors()
  QString dtype, shape;
  QString tiedTo;  // leaves: the entry whose bytes this one shares
  std::vector<ParamNode> children;
  const ParamNode* parent = nullptr;
  int row = 0;
};

// One optimizer parameter, by name (CheckpointView::optimizerParams).
struct OptimizerRow {
  int64_t index = 0;
  QString name;  // "" when it could not be mapped
  QString step;  // "" when the state has none
  QString shape;
  int expAvg = -1;  // tensor indices
  int expAvgSq = -1;
  QString problem;
};

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

// Where the numbers of a checkpoint on another machine come from: the
// agent's `stats` and `slice` (mainwindow_remote.cpp makes them). Called on
// pool threads; both throw (a RemoteError "cancelled" once `progress` is
// cancelled: the agent was told to stop).
struct RemoteTensors {
  QString location;                         // ssh://host/path
  std::vector<TensorRow> rows;              // the tensor table
  std::vector<std::vector<int64_t>> sizes;  // per tensor: its shape
  std::function<TensorStats(int tensor, JobProgress& progress)> stats;
  // The statistics with the histogram and heat map `options` ask for
  // (`stats` with bins, heat_rows, heat_cols); `plotted` false when the
  // host's agent is older than them (statistics only).
  std::function<TensorAnalysis(int tensor, const AnalysisOptions& options, JobProgress& progress,
                               bool* plotted)>
      analyze;
  std::function<size_t(int tensor, uint64_t first, size_t count, double* out)> slice;
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

  // For the inspector's other tabs. The file stays open (its value tree and
  // mappings are read-only and safe to share across threads) so that tensor
  // bytes can be mapped later, off the GUI thread.
  std::shared_ptr<const CheckpointFile> file;
  std::shared_ptr<const MetaNode> metaTree;    // the whole value tree
  std::shared_ptr<const ParamNode> paramTree;  // the model state; null without one
  std::vector<OptimizerRow> optimizer;
  // The file `optimizer`'s tensors are in when it is not `file`: a Trainer's
  // checkpoint-<step>/optimizer.pt beside its weights.
  std::shared_ptr<const CheckpointFile> optimizerFile;
  // A checkpoint of many files (the Shards tab; `file->shards()` for a local one).
  bool sharded = false;
  // What the Shards tab shows of it, made off the GUI thread: from the
  // local file's ShardSet, or a host's `shards` answer; or why there is
  // nothing to show (a refused answer, an agent older than `shards`).
  std::shared_ptr<const ShardListing> shards;
  QString shardsProblem;
  // A checkpoint on another machine (ssh://...): `file` is null, its tensors are read there.
  std::shared_ptr<const RemoteTensors> remote;

  [[nodiscard]] bool ok() const { return error.isEmpty(); }
};

// Opens `path` with CheckpointFile::open and describes it through a
// CheckpointView (describeCheckpoint). Where the file holds no optimizer and
// `optimizerPath` names one beside it (a Trainer checkpoint's optimizer.pt,
// CheckpointEntry's "optimizer" part), the Optimizer line and tab show that
// file's state, saying where it came from, as `info` of the folder does.
// Never throws.
[[nodiscard]] CheckpointSummary summarizeCheckpoint(const QString& path,
                                                    const QString& optimizerPath = {});
// The words the Inspect tab shows for a description: a local file's
// (summarizeCheckpoint) or a remote one's (the agent's `describe`). `file`
// stays null.
[[nodiscard]] CheckpointSummary summaryFromDescription(const CheckpointDescription& description);
// A checkpoint that cannot be read: the message, after a dangerous or
// suspicious verdict when the scan found one.
[[nodiscard]] CheckpointSummary failedSummary(const QString& path, const QString& error,
                                              const DescribedSafety& safety);

// Adds the "Trainer" line after the format: which trainer's layout the
// browser found the checkpoint by and where each of its things came from
// (runsummary.h's trainerLine). Nothing for an unreadable file or an empty line.
void addTrainerField(CheckpointSummary& summary, const QString& line);

}  // namespace ckpt
