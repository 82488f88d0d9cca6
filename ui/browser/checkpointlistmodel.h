#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <optional>
#include <vector>

#include "browser/pathscan.h"

namespace ckpt {

// The browser's tree: at the top, stage families (`<run>-pretrain`,
// `<run>-sft`, `<run>-dpo` and a plain `<run>`, shown together under
// `<run>`), runs, the "Files" opened directly and directories that could not
// be scanned; below a run, its checkpoints sorted by step. Filled in one go
// from a background scan, then kept current run by run (the directory
// watcher) with row inserts, removals and dataChanged.
class CheckpointListModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum class Column { Name, Step, Kind, Loss, Size, Modified, Count };
  enum class Role {
    Path = Qt::UserRole,  // QString: the file (checkpoints) or directory (runs); empty for families
    Error,                // QString: why it cannot be read; empty when fine
    IsGroup,              // bool: a run, family or "Files" row
    Step,                 // qint64, invalid when unknown
    Loss,                 // double, invalid when unknown
    Kind,                 // QString: "step", "final", "best", "latest"; empty when unknown
    SortKey,              // a value that sorts numerically where it should
    IsFamily,             // bool
    Stage,    // QString: a run's stage within its family ("pretrain", "sft", "dpo"), else empty
    Verdict,  // QString: the safety scan's verdict ("safe", "suspicious", "dangerous",
              // "unreadable"); a run: its worst checkpoint's ("" when all are safe)
    Remote,   // QString: a run on another machine: "ssh://host/path"; empty for a local one
  };

  // One row of the tree (defined in the .cpp; public so helpers there can name it).
  struct Node;

  explicit CheckpointListModel(QObject* parent = nullptr);
  ~CheckpointListModel() override;

  // Replaces everything (beginResetModel/endResetModel).
  void setGroups(std::vector<BrowseGroup> groups);
  void clear();
  // Runs of a scan still running (ScanOptions::runDone), in listing order:
  // added after the rows there are, in one insert.
  void appendRuns(std::vector<BrowseGroup> runs);
  // The run whose directory is `run.path` now holds `run.checkpoints`:
  // rows are removed, changed and inserted in place (a new run is added).
  void updateRun(BrowseGroup run);
  // Removes the run whose directory is `path`; false when it is not listed.
  bool removeRun(const QString& path);

  // How many of `groups` the rows are already, when they are the first of
  // them in this order with every field of every checkpoint equal (a scan's
  // result, the runs it handed over while it ran listed): setGroups would
  // change none of those rows, appendRuns of the rest does what it does. A
  // group `handedOver` (the one listed was moved from the scan, not
  // copied) is equal when all but its checkpoints are. std::nullopt when
  // the rows are anything else, or a handed-over group is left after them.
  [[nodiscard]] std::optional<size_t> listedPrefix(const std::vector<BrowseGroup>& groups) const;
  // Every run, "Files" and error group, in display order, with its checkpoints.
  [[nodiscard]] std::vector<BrowseGroup> groups() const;
  [[nodiscard]] size_t groupCount() const;
  [[nodiscard]] size_t checkpointCount() const;
  // Disk use: the sizes of every listed checkpoint (the runs' and families'
  // rows show their own in the Size column).
  [[nodiscard]] uint64_t totalSize() const;
  // Of that, the optimizer state's tensor bytes (CheckpointEntry::optimizerBytes).
  [[nodiscard]] uint64_t optimizerSize() const;
  // The run or "Files" group of a group row, with its checkpoints (a copy);
  // nothing for families, checkpoints and invalid indexes.
  [[nodiscard]] std::optional<BrowseGroup> group(const QModelIndex& index) const;
  [[nodiscard]] const CheckpointEntry* checkpoint(const QModelIndex& index) const;
  // A family row's name (the run name without its stage suffix); empty otherwise.
  [[nodiscard]] QString familyName(const QModelIndex& index) const;
  // The first checkpoint of the first group that has one; invalid when none.
  [[nodiscard]] QModelIndex firstCheckpoint() const;
  // The checkpoint row whose file is `path` (compared as clean absolute paths).
  [[nodiscard]] QModelIndex indexOfPath(const QString& path) const;
  // The run row whose directory is `path`.
  [[nodiscard]] QModelIndex indexOfRun(const QString& path) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  [[nodiscard]] Node* node(const QModelIndex& index) const;
  [[nodiscard]] QModelIndex indexOf(const Node* n, int column = 0) const;
  [[nodiscard]] Node* findRun(const QString& path) const;
  void build(std::vector<BrowseGroup> groups);
  QVariant familyData(const Node& n, Column column, int role) const;
  QVariant groupData(const Node& n, Column column, int role) const;
  QVariant checkpointData(const CheckpointEntry& c, Column column, int role) const;
  // "sharded: FSDP, 2 ranks, 3 files" for a checkpoint of many files.
  static QString shardedBadge(const CheckpointEntry& c);

  std::unique_ptr<Node> m_root;
};

}  // namespace ckpt
