#include "browser/checkpointlistmodel.h"

#include <QApplication>
#include <QBrush>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QStyle>

#include "textformat.h"

namespace ckpt {
namespace {

QString cleanAbsolute(const QString& path) { return QDir::cleanPath(QFileInfo(path).absoluteFilePath()); }

QIcon standardIcon(QStyle::StandardPixmap which) {
  // The model can live without a QApplication (a guiless test): no icons then.
  if (!qobject_cast<QApplication*>(QCoreApplication::instance())) return {};
  return QApplication::style()->standardIcon(which);
}

}  // namespace

CheckpointListModel::CheckpointListModel(QObject* parent) : QAbstractItemModel(parent) {}

void CheckpointListModel::setGroups(std::vector<BrowseGroup> groups) {
  beginResetModel();
  m_groups = std::move(groups);
  endResetModel();
}

void CheckpointListModel::clear() { setGroups({}); }

size_t CheckpointListModel::checkpointCount() const {
  size_t n = 0;
  for (const BrowseGroup& g : m_groups) n += g.checkpoints.size();
  return n;
}

const BrowseGroup* CheckpointListModel::group(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this || index.internalId() != 0) return nullptr;
  return &m_groups[size_t(index.row())];
}

const CheckpointEntry* CheckpointListModel::checkpoint(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this || index.internalId() == 0) return nullptr;
  return &m_groups[size_t(index.internalId() - 1)].checkpoints[size_t(index.row())];
}

QModelIndex CheckpointListModel::firstCheckpoint() const {
  for (size_t g = 0; g < m_groups.size(); ++g)
    if (!m_groups[g].checkpoints.empty()) return createIndex(0, 0, quintptr(g + 1));
  return {};
}

QModelIndex CheckpointListModel::indexOfPath(const QString& path) const {
  const QString wanted = cleanAbsolute(path);
  for (size_t g = 0; g < m_groups.size(); ++g) {
    const auto& cks = m_groups[g].checkpoints;
    for (size_t i = 0; i < cks.size(); ++i)
      if (cleanAbsolute(pathFromStd(cks[i].path)) == wanted) return createIndex(int(i), 0, quintptr(g + 1));
  }
  return {};
}

QModelIndex CheckpointListModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, quintptr(0));
  if (parent.internalId() != 0) return {};  // checkpoints have no children
  return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex CheckpointListModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  return createIndex(int(child.internalId() - 1), 0, quintptr(0));
}

int CheckpointListModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(m_groups.size());
  if (parent.column() != 0 || parent.internalId() != 0) return 0;
  return int(m_groups[size_t(parent.row())].checkpoints.size());
}

int CheckpointListModel::columnCount(const QModelIndex&) const { return int(Column::Count); }

QVariant CheckpointListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(section == int(Column::Name) || section == int(Column::Kind)
                                   ? Qt::AlignLeft | Qt::AlignVCenter
                                   : Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name: return tr("Checkpoint");
    case Column::Step: return tr("Step");
    case Column::Kind: return tr("Kind");
    case Column::Loss: return tr("Loss");
    case Column::Size: return tr("Size");
    case Column::Count: break;
  }
  return {};
}

QVariant CheckpointListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Column column = Column(index.column());
  if (const CheckpointEntry* c = checkpoint(index)) return checkpointData(*c, column, role);
  return groupData(m_groups[size_t(index.row())], column, role);
}

QVariant CheckpointListModel::groupData(const BrowseGroup& g, Column column, int role) const {
  switch (role) {
    case Qt::DisplayRole:
      if (column == Column::Name) return g.name;
      if (column == Column::Kind && g.error.isEmpty())
        return countText(g.checkpoints.size(), "file", "files");
      if (column == Column::Kind) return tr("error");
      return {};
    case Qt::DecorationRole:
      if (column != Column::Name) return {};
      return standardIcon(g.error.isEmpty() ? QStyle::SP_DirIcon : QStyle::SP_MessageBoxWarning);
    case Qt::ToolTipRole: return g.error.isEmpty() ? g.path : g.error;
    case Qt::ForegroundRole: return g.error.isEmpty() ? QVariant() : QVariant(QBrush(Qt::darkRed));
    case int(Role::Path): return g.path;
    case int(Role::Error): return g.error;
    case int(Role::IsGroup): return true;
    case int(Role::SortKey): return g.name;
    default: return {};
  }
}

QVariant CheckpointListModel::checkpointData(const CheckpointEntry& c, Column column, int role) const {
  const bool broken = !c.error.empty();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name: return QFileInfo(pathFromStd(c.file)).fileName();
        case Column::Step: return c.step ? QString::number(*c.step) : QString();
        case Column::Kind:
          return broken ? tr("unreadable") : fromStd(std::string(checkpointKindName(c.kind)));
        case Column::Loss: return c.loss ? lossText(*c.loss) : QString();
        case Column::Size: return sizeText(c.size);
        case Column::Count: break;
      }
      return {};
    case Qt::TextAlignmentRole:
      if (column == Column::Name || column == Column::Kind) return {};
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::DecorationRole:
      if (column != Column::Name) return {};
      return standardIcon(broken ? QStyle::SP_MessageBoxWarning : QStyle::SP_FileIcon);
    case Qt::ToolTipRole: {
      QString tip = pathFromStd(c.path);
      if (c.mtime) tip += "\n" + tr("modified %1").arg(QDateTime::fromSecsSinceEpoch(c.mtime).toString(Qt::ISODate));
      if (broken) tip += "\n" + fromStd(c.error);
      return tip;
    }
    case Qt::ForegroundRole: return broken ? QVariant(QBrush(Qt::darkRed)) : QVariant();
    case int(Role::Path): return pathFromStd(c.path);
    case int(Role::Error): return fromStd(c.error);
    case int(Role::IsGroup): return false;
    case int(Role::Step): return c.step ? QVariant(qint64(*c.step)) : QVariant();
    case int(Role::Loss): return c.loss ? QVariant(*c.loss) : QVariant();
    case int(Role::Kind): return fromStd(std::string(checkpointKindName(c.kind)));
    case int(Role::SortKey):
      switch (column) {
        case Column::Step: return c.step ? QVariant(qint64(*c.step)) : QVariant();
        case Column::Loss: return c.loss ? QVariant(*c.loss) : QVariant();
        case Column::Size: return QVariant(quint64(c.size));
        default: return checkpointData(c, column, Qt::DisplayRole);
      }
    default: return {};
  }
}

}  // namespace ckpt
