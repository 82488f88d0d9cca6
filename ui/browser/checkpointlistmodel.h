#pragma once

#include <QAbstractItemModel>
#include <vector>

#include "browser/pathscan.h"

namespace ckpt {

// The browser's tree: groups (runs, "Files") at the top level, their
// checkpoints below. Filled in one go from a background scan's result.
class CheckpointListModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum class Column { Name, Step, Kind, Loss, Size, Count };
  enum class Role {
    Path = Qt::UserRole,  // QString: the file (checkpoints) or directory (runs)
    Error,                // QString: why it cannot be read; empty when fine
    IsGroup,              // bool
    Step,                 // qint64, invalid when unknown
    Loss,                 // double, invalid when unknown
    Kind,                 // QString: "step", "final", "best", "latest"; empty when unknown
    SortKey,              // a value that sorts numerically where it should
  };

  explicit CheckpointListModel(QObject* parent = nullptr);

  // Replaces everything (beginResetModel/endResetModel).
  void setGroups(std::vector<BrowseGroup> groups);
  void clear();

  [[nodiscard]] const std::vector<BrowseGroup>& groups() const { return m_groups; }
  [[nodiscard]] size_t checkpointCount() const;
  // nullptr for group rows and invalid indexes.
  [[nodiscard]] const BrowseGroup* group(const QModelIndex& index) const;
  [[nodiscard]] const CheckpointEntry* checkpoint(const QModelIndex& index) const;
  // The first checkpoint of the first group that has one; invalid when none.
  [[nodiscard]] QModelIndex firstCheckpoint() const;
  // The checkpoint row whose file is `path` (compared as clean absolute paths).
  [[nodiscard]] QModelIndex indexOfPath(const QString& path) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant groupData(const BrowseGroup& g, Column column, int role) const;
  QVariant checkpointData(const CheckpointEntry& c, Column column, int role) const;

  // A checkpoint row's internal id is its group's row + 1; group rows have 0.
  std::vector<BrowseGroup> m_groups;
};

}  // namespace ckpt
