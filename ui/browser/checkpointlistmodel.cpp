#include "browser/checkpointlistmodel.h"

#include <algorithm>
#include <ctime>

#include <QApplication>
#include <QBrush>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QStyle>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "browser/cellformat.h"
#include "browser/runsummary.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/natural_order.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString cleanAbsolute(const QString& path) {
  return QDir::cleanPath(QFileInfo(path).absoluteFilePath());
}

}  // namespace

struct CheckpointListModel::Node {
  enum class Type { Root, Family, Group, Checkpoint };
  Type type = Type::Root;
  Node* parent = nullptr;
  std::vector<std::unique_ptr<Node>> children;
  QString family;     // Family: the shared name
  QString stage;      // Group inside a family: its stage ("" for the plain run)
  BrowseGroup group;  // Group: everything but the checkpoints (they are the children)
  CheckpointEntry checkpoint;

  int rowInParent = 0;  // kept current by add() and remove(): views ask for parents a lot

  [[nodiscard]] int row() const { return rowInParent; }
  Node* add(std::unique_ptr<Node> child, size_t at) {
    child->parent = this;
    Node* added = children.insert(children.begin() + std::ptrdiff_t(at), std::move(child))->get();
    renumber(at);
    return added;
  }
  void remove(size_t at) {
    children.erase(children.begin() + std::ptrdiff_t(at));
    renumber(at);
  }
  void renumber(size_t from) {
    for (size_t i = from; i < children.size(); ++i) children[i]->rowInParent = int(i);
  }
  // The worst safety verdict below a run or family: "dangerous", then
  // "suspicious"; "" when none is either.
  [[nodiscard]] QString worstVerdict() const {
    if (type == Type::Checkpoint)
      return checkpoint.verdict == "dangerous" || checkpoint.verdict == "suspicious"
                 ? QString::fromStdString(checkpoint.verdict)
                 : QString();
    QString worst;
    for (const auto& c : children) {
      const QString v = c->worstVerdict();
      if (v == QLatin1String("dangerous")) return v;
      if (!v.isEmpty()) worst = v;
    }
    return worst;
  }
  // Bytes on disk of the checkpoints at and below this node.
  [[nodiscard]] uint64_t totalSize() const {
    if (type == Type::Checkpoint) return checkpoint.size;
    uint64_t sum = 0;
    for (const auto& c : children) sum += c->totalSize();
    return sum;
  }
  // Of those, the optimizer state's tensor bytes.
  [[nodiscard]] uint64_t optimizerSize() const {
    if (type == Type::Checkpoint) return checkpoint.optimizerBytes;
    uint64_t sum = 0;
    for (const auto& c : children) sum += c->optimizerSize();
    return sum;
  }
  // "12.3 MB on disk" and, when there is any, the optimizer's share.
  [[nodiscard]] QString diskText() const {
    const QString share = optimizerShareText(optimizerSize(), totalSize());
    const QString disk =
        QCoreApplication::translate("ckpt", "%1 on disk").arg(sizeText(totalSize()));
    return share.isEmpty() ? disk : QCoreApplication::translate("ckpt", "%1, %2").arg(disk, share);
  }
  [[nodiscard]] int64_t latestMtime() const {
    if (type == Type::Checkpoint) return checkpoint.mtime;
    int64_t t = 0;
    for (const auto& c : children) t = std::max(t, c->latestMtime());
    return t;
  }
};

namespace {

using Node = CheckpointListModel::Node;

// The globals that made a file dangerous or suspicious, worst first.
QString offenders(const CheckpointEntry& c) {
  QStringList names;
  for (const std::string& o : c.offenders) names << QString::fromStdString(o);
  return names.join(QStringLiteral(", "));
}

std::unique_ptr<Node> checkpointNode(CheckpointEntry c) {
  auto n = std::make_unique<Node>();
  n->type = Node::Type::Checkpoint;
  n->checkpoint = std::move(c);
  return n;
}

std::unique_ptr<Node> groupNode(BrowseGroup g, const QString& stage = {}) {
  auto n = std::make_unique<Node>();
  n->type = Node::Type::Group;
  n->stage = stage;
  std::vector<CheckpointEntry> checkpoints = std::move(g.checkpoints);
  g.checkpoints.clear();
  n->group = std::move(g);
  for (CheckpointEntry& c : checkpoints) n->add(checkpointNode(std::move(c)), n->children.size());
  return n;
}

// A run's stage as its family's row shows it: "sft", "pretrain@200" for a branch.
QString stageLabel(const StageName& s) {
  return QString::fromStdString(s.stage + s.branch);
}

// Where a run goes among a family's runs (training order).
size_t stagePosition(const Node& family, const StageName& stage) {
  size_t at = 0;
  while (at < family.children.size() &&
         !stageBefore(stage, splitStageName(family.children[at]->group.name.toStdString())))
    ++at;
  return at;
}

}  // namespace

CheckpointListModel::CheckpointListModel(QObject* parent)
    : QAbstractItemModel(parent), m_root(std::make_unique<Node>()) {}

CheckpointListModel::~CheckpointListModel() = default;

void CheckpointListModel::setGroups(std::vector<BrowseGroup> groups) {
  beginResetModel();
  build(std::move(groups));
  endResetModel();
}

void CheckpointListModel::clear() {
  setGroups({});
}

void CheckpointListModel::appendRuns(std::vector<BrowseGroup> runs) {
  if (runs.empty()) return;
  // One insert at the end, unless a new run makes or joins a stage family
  // (then everything is grouped again, as setGroups does).
  std::vector<std::string> names;
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Family)
      for (const auto& g : top->children) names.push_back(g->group.name.toStdString());
    else if (top->group.kind == BrowseGroup::Kind::Run && top->group.error.isEmpty())
      names.push_back(top->group.name.toStdString());
  }
  const size_t before = names.size();
  for (const BrowseGroup& g : runs)
    if (g.kind == BrowseGroup::Kind::Run && g.error.isEmpty())
      names.push_back(g.name.toStdString());
  const std::vector<std::string> family = familiesOf(names);
  if (std::any_of(family.begin() + std::ptrdiff_t(before), family.end(),
                  [](const std::string& f) { return !f.empty(); })) {
    std::vector<BrowseGroup> all = groups();
    for (BrowseGroup& g : runs) all.push_back(std::move(g));
    setGroups(std::move(all));
    return;
  }
  const int first = int(m_root->children.size());
  beginInsertRows({}, first, first + int(runs.size()) - 1);
  for (BrowseGroup& g : runs) m_root->add(groupNode(std::move(g)), m_root->children.size());
  endInsertRows();
}

void CheckpointListModel::build(std::vector<BrowseGroup> groups) {
  m_root = std::make_unique<Node>();
  // Families: experiment.h's rule, over the readable runs.
  std::vector<std::string> names;
  std::vector<size_t> eligible;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].kind == BrowseGroup::Kind::Run && groups[i].error.isEmpty()) {
      names.push_back(groups[i].name.toStdString());
      eligible.push_back(i);
    }
  const std::vector<std::string> familyOf = familiesOf(names);
  std::vector<std::string> family(groups.size());
  for (size_t k = 0; k < eligible.size(); ++k) family[eligible[k]] = familyOf[k];
  std::map<std::string, Node*> families;
  for (size_t i = 0; i < groups.size(); ++i) {
    BrowseGroup& g = groups[i];
    if (family[i].empty()) {
      m_root->add(groupNode(std::move(g)), m_root->children.size());
      continue;
    }
    Node*& f = families[family[i]];
    if (!f) {
      auto n = std::make_unique<Node>();
      n->type = Node::Type::Family;
      n->family = QString::fromStdString(family[i]);
      f = m_root->add(std::move(n), m_root->children.size());
    }
    const StageName s = splitStageName(g.name.toStdString());
    f->add(groupNode(std::move(g), stageLabel(s)), stagePosition(*f, s));
  }
}

void CheckpointListModel::updateRun(BrowseGroup run) {
  Node* g = findRun(run.path);
  if (!g) {
    // A new run: into its family when there is one; one that makes a new
    // family regroups everything (rare: a first fine-tune of a run).
    const StageName s = splitStageName(run.name.toStdString());
    for (const auto& top : m_root->children) {
      if (top->type == Node::Type::Family && top->family.toStdString() == s.family) {
        const size_t at = stagePosition(*top, s);
        beginInsertRows(indexOf(top.get()), int(at), int(at));
        top->add(groupNode(std::move(run), stageLabel(s)), at);
        endInsertRows();
        return;
      }
      const bool joins = top->type == Node::Type::Group &&
                         top->group.kind == BrowseGroup::Kind::Run && top->group.error.isEmpty() &&
                         run.error.isEmpty() && run.kind == BrowseGroup::Kind::Run;
      if (joins &&
          !familiesOf({top->group.name.toStdString(), run.name.toStdString()})[0].empty()) {
        std::vector<BrowseGroup> all = groups();
        all.push_back(std::move(run));
        setGroups(std::move(all));
        return;
      }
    }
    // Where the scan would have listed it (natural order: seed4 before
    // seed10), before the "Files" group, which stays last.
    const std::string name = run.name.toStdString();
    size_t at = 0;
    for (; at < m_root->children.size(); ++at) {
      const Node& top = *m_root->children[at];
      if (top.type == Node::Type::Group && top.group.kind == BrowseGroup::Kind::Files) break;
      const QString topName = top.type == Node::Type::Family ? top.family : top.group.name;
      if (naturalLess(name, topName.toStdString())) break;
    }
    beginInsertRows({}, int(at), int(at));
    m_root->add(groupNode(std::move(run)), at);
    endInsertRows();
    return;
  }

  const QModelIndex parent = indexOf(g);
  std::vector<CheckpointEntry> wanted = std::move(run.checkpoints);
  run.checkpoints.clear();
  if (g->group.error != run.error || g->group.name != run.name || g->group.trainer != run.trainer ||
      g->group.metricFiles != run.metricFiles || g->group.hparamFiles != run.hparamFiles) {
    g->group.error = run.error;
    g->group.name = run.name;
    g->group.trainer = run.trainer;
    g->group.metricFiles = run.metricFiles;
    g->group.hparamFiles = run.hparamFiles;
    emit dataChanged(parent, indexOf(g, int(Column::Count) - 1));
  }
  // Removed files first (from the end, so rows stay valid). A run that
  // saves often (a followed run on a host) has thousands: a set, not a scan.
  std::set<std::string> wantedPaths;
  for (const CheckpointEntry& c : wanted) wantedPaths.insert(c.path);
  bool rowsChanged = false;  // then the run's own row (its count, size, newest time) changed
  for (int r = int(g->children.size()) - 1; r >= 0; --r) {
    if (wantedPaths.count(g->children[size_t(r)]->checkpoint.path)) continue;
    rowsChanged = true;
    beginRemoveRows(parent, r, r);
    g->remove(size_t(r));
    endRemoveRows();
  }
  // What is left is in the old order; where that is not the new order (a
  // step changed), the rows are taken out and put back. The rows kept are
  // said changed once, as one range (one per row made the view measure
  // every row for each).
  int firstKept = -1;
  int lastKept = -1;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const QString path = pathFromStd(wanted[i].path);
    const bool same =
        i < g->children.size() && pathFromStd(g->children[i]->checkpoint.path) == path;
    if (same) {
      g->children[i]->checkpoint = std::move(wanted[i]);
      if (firstKept < 0) firstKept = int(i);
      lastKept = int(i);
      continue;
    }
    auto later = std::find_if(
        g->children.begin() + std::ptrdiff_t(std::min(i, g->children.size())), g->children.end(),
        [&](const auto& c) { return pathFromStd(c->checkpoint.path) == path; });
    if (later != g->children.end()) {
      const int r = int(later - g->children.begin());
      beginRemoveRows(parent, r, r);
      g->remove(size_t(r));
      endRemoveRows();
    }
    rowsChanged = true;
    beginInsertRows(parent, int(i), int(i));
    g->add(checkpointNode(std::move(wanted[i])), i);
    endInsertRows();
  }
  // Rows before a kept one never move (inserts and removals are at or after
  // the row being placed), so the range still holds them.
  if (firstKept >= 0)
    emit dataChanged(index(firstKept, 0, parent), index(lastKept, int(Column::Count) - 1, parent));
  // "N files", the size and the newest time of the run's row, and of its
  // family's: the view repaints them and the columns fit them ("9 files"
  // becoming "10 files" was cut).
  if (rowsChanged)
    for (Node* n = g; n && n != m_root.get(); n = n->parent)
      emit dataChanged(indexOf(n), indexOf(n, int(Column::Count) - 1));
}

bool CheckpointListModel::removeRun(const QString& path) {
  Node* g = findRun(path);
  if (!g) return false;
  Node* parent = g->parent;
  const int r = g->row();
  beginRemoveRows(parent == m_root.get() ? QModelIndex() : indexOf(parent), r, r);
  parent->remove(size_t(r));
  endRemoveRows();
  return true;
}

std::vector<BrowseGroup> CheckpointListModel::groups() const {
  std::vector<BrowseGroup> out;
  auto addGroup = [&](const Node& g) { out.push_back(*group(indexOf(&g))); };
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group)
      addGroup(*top);
    else
      for (const auto& g : top->children) addGroup(*g);
  }
  return out;
}

std::optional<size_t> CheckpointListModel::listedPrefix(
    const std::vector<BrowseGroup>& groups) const {
  size_t next = 0;
  auto same = [&](const Node& n) {
    if (next >= groups.size()) return false;
    const BrowseGroup& a = n.group;
    const BrowseGroup& b = groups[next++];
    if (std::tie(a.kind, a.name, a.path, a.error, a.trainer, a.metricFiles, a.hparamFiles, a.facts,
                 a.remote) != std::tie(b.kind, b.name, b.path, b.error, b.trainer, b.metricFiles,
                                       b.hparamFiles, b.facts, b.remote))
      return false;
    if (b.handedOver) return true;  // this very group was moved here (scanPaths)
    if (n.children.size() != b.checkpoints.size()) return false;
    for (size_t i = 0; i < n.children.size(); ++i)
      if (!(n.children[i]->checkpoint == b.checkpoints[i])) return false;
    return true;
  };
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group) {
      if (!same(*top)) return std::nullopt;
    } else {
      for (const auto& g : top->children)
        if (!same(*g)) return std::nullopt;
    }
  }
  // A group handed over past them is not here: the rest cannot be added as it is.
  if (std::any_of(groups.begin() + std::ptrdiff_t(next), groups.end(),
                  [](const BrowseGroup& g) { return g.handedOver; }))
    return std::nullopt;
  return next;
}

size_t CheckpointListModel::groupCount() const {
  size_t n = 0;
  for (const auto& top : m_root->children)
    n += top->type == Node::Type::Family ? top->children.size() : 1;
  return n;
}

uint64_t CheckpointListModel::totalSize() const {
  return m_root->totalSize();
}

uint64_t CheckpointListModel::optimizerSize() const {
  return m_root->optimizerSize();
}

size_t CheckpointListModel::checkpointCount() const {
  size_t n = 0;
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group)
      n += top->children.size();
    else
      for (const auto& g : top->children) n += g->children.size();
  }
  return n;
}

CheckpointListModel::Node* CheckpointListModel::node(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this) return nullptr;
  return static_cast<Node*>(index.internalPointer());
}

QModelIndex CheckpointListModel::indexOf(const Node* n, int column) const {
  if (!n || n == m_root.get()) return {};
  return createIndex(n->row(), column, const_cast<Node*>(n));
}

CheckpointListModel::Node* CheckpointListModel::findRun(const QString& path) const {
  if (path.isEmpty()) return nullptr;
  const QString wanted = cleanAbsolute(path);
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group && !top->group.path.isEmpty() &&
        cleanAbsolute(top->group.path) == wanted)
      return top.get();
    if (top->type == Node::Type::Family)
      for (const auto& g : top->children)
        if (cleanAbsolute(g->group.path) == wanted) return g.get();
  }
  return nullptr;
}

std::optional<BrowseGroup> CheckpointListModel::group(const QModelIndex& index) const {
  const Node* n = node(index);
  if (!n || n->type != Node::Type::Group) return std::nullopt;
  BrowseGroup g = n->group;
  g.checkpoints.reserve(n->children.size());
  for (const auto& c : n->children) g.checkpoints.push_back(c->checkpoint);
  return g;
}

const CheckpointEntry* CheckpointListModel::checkpoint(const QModelIndex& index) const {
  const Node* n = node(index);
  return n && n->type == Node::Type::Checkpoint ? &n->checkpoint : nullptr;
}

QString CheckpointListModel::familyName(const QModelIndex& index) const {
  const Node* n = node(index);
  return n && n->type == Node::Type::Family ? n->family : QString();
}

QModelIndex CheckpointListModel::firstCheckpoint() const {
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group && !top->children.empty())
      return indexOf(top->children.front().get());
    if (top->type == Node::Type::Family)
      for (const auto& g : top->children)
        if (!g->children.empty()) return indexOf(g->children.front().get());
  }
  return {};
}

QModelIndex CheckpointListModel::indexOfPath(const QString& path) const {
  const QString wanted = cleanAbsolute(path);
  auto search = [&](const Node& g) -> QModelIndex {
    for (const auto& c : g.children)
      if (cleanAbsolute(pathFromStd(c->checkpoint.path)) == wanted ||
          cleanAbsolute(pathFromStd(inspectPathOf(c->checkpoint))) == wanted)
        return indexOf(c.get());
    return {};
  };
  for (const auto& top : m_root->children) {
    if (top->type == Node::Type::Group) {
      if (QModelIndex i = search(*top); i.isValid()) return i;
      continue;
    }
    for (const auto& g : top->children)
      if (QModelIndex i = search(*g); i.isValid()) return i;
  }
  return {};
}

QModelIndex CheckpointListModel::indexOfRun(const QString& path) const {
  return indexOf(findRun(path));
}

QModelIndex CheckpointListModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  const Node* p = parent.isValid() ? node(parent) : m_root.get();
  return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex CheckpointListModel::parent(const QModelIndex& child) const {
  const Node* n = node(child);
  if (!n || n->parent == m_root.get()) return {};
  return indexOf(n->parent);
}

int CheckpointListModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(m_root->children.size());
  if (parent.column() != 0) return 0;
  return int(node(parent)->children.size());
}

int CheckpointListModel::columnCount(const QModelIndex&) const {
  return int(Column::Count);
}

QVariant CheckpointListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(section == int(Column::Name) || section == int(Column::Kind) ||
                                       section == int(Column::Modified)
                                   ? Qt::AlignLeft | Qt::AlignVCenter
                                   : Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name:
      return tr("Checkpoint");
    case Column::Step:
      return tr("Step");
    case Column::Kind:
      return tr("Kind");
    case Column::Loss:
      return tr("Loss");
    case Column::Size:
      return tr("Size");
    case Column::Modified:
      return tr("Modified");
    case Column::Count:
      break;
  }
  return {};
}

QVariant CheckpointListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Column column = Column(index.column());
  const Node& n = *node(index);
  switch (n.type) {
    case Node::Type::Checkpoint:
      return checkpointData(n.checkpoint, column, role);
    case Node::Type::Group:
      return groupData(n, column, role);
    case Node::Type::Family:
      return familyData(n, column, role);
    case Node::Type::Root:
      break;
  }
  return {};
}

QVariant CheckpointListModel::familyData(const Node& n, Column column, int role) const {
  switch (role) {
    case Qt::DisplayRole:
      if (column == Column::Name) return n.family;
      if (column == Column::Kind) {
        // Branch runs (<run>@<step>) sit in the family but are not stages.
        size_t branches = 0;
        for (const auto& g : n.children)
          branches += splitStageName(g->group.name.toStdString()).branch.empty() ? 0 : 1;
        const QString stages = countText(n.children.size() - branches, "stage", "stages");
        return branches ? tr("%1, %2").arg(stages, countText(branches, "branch", "branches"))
                        : stages;
      }
      if (column == Column::Size) return sizeText(n.totalSize());
      if (column == Column::Modified) return timeText(n.latestMtime());
      return {};
    case Qt::DecorationRole:
      return column == Column::Name ? standardIcon(QStyle::SP_DirLinkIcon) : QVariant();
    case Qt::ToolTipRole: {
      QStringList stages;
      for (const auto& g : n.children) stages << g->group.name;
      return tr("Stages of %1: %2\n%3")
          .arg(n.family, stages.join(QStringLiteral(" → ")), n.diskText());
    }
    case int(Role::IsGroup):
      return true;
    case int(Role::IsFamily):
      return true;
    case int(Role::SortKey):
      return n.family;
    case int(Role::Verdict):
      return n.worstVerdict();
    case int(Role::Path):
      return QString();
    case int(Role::Error):
      return QString();
    default:
      return {};
  }
}

QVariant CheckpointListModel::groupData(const Node& n, Column column, int role) const {
  const BrowseGroup& g = n.group;
  switch (role) {
    case Qt::DisplayRole:
      if (column == Column::Name)
        return n.stage.isEmpty() ? g.name : QStringLiteral("%1  (%2)").arg(g.name, n.stage);
      // A run that logs and has not saved yet is listed for its curves.
      if (column == Column::Kind && g.error.isEmpty() && n.children.empty() &&
          !g.metricFiles.empty())
        return tr("metrics only");
      if (column == Column::Kind && g.error.isEmpty())
        return countText(n.children.size(), "file", "files");
      if (column == Column::Kind) return tr("error");
      if (column == Column::Size && !n.children.empty()) return sizeText(n.totalSize());
      if (column == Column::Modified) return timeText(n.latestMtime());
      return {};
    case Qt::DecorationRole: {
      if (column != Column::Name) return {};
      // A run holding a file that would run code in Python carries the badge.
      const QString worst = n.worstVerdict();
      if (worst == QLatin1String("dangerous")) return standardIcon(QStyle::SP_MessageBoxCritical);
      if (!g.error.isEmpty() || !worst.isEmpty()) return standardIcon(QStyle::SP_MessageBoxWarning);
      // A run on another machine: the network drive's badge.
      return standardIcon(g.remote.isEmpty() ? QStyle::SP_DirIcon : QStyle::SP_DriveNetIcon);
    }
    case Qt::ToolTipRole: {
      QString tip = g.error.isEmpty() ? (g.remote.isEmpty() ? g.path : g.remote) : g.error;
      if (const QString trainer = trainerText(g.trainer); !trainer.isEmpty())
        tip += "\n" + tr("Written by: %1").arg(trainer);
      if (n.children.empty() && !g.metricFiles.empty())
        tip += "\n" + tr("No checkpoint yet; curves from %1")
                          .arg(countText(g.metricFiles.size(), "file", "files"));
      if (!n.children.empty())
        tip +=
            "\n" + tr("%1 in %2").arg(n.diskText(), countText(n.children.size(), "file", "files"));
      const QString worst = n.worstVerdict();
      if (worst == QLatin1String("dangerous"))
        tip += "\n" + tr("Holds a checkpoint that would run code if loaded in Python (torch.load)");
      else if (!worst.isEmpty())
        tip += "\n" + tr("Holds a checkpoint with suspicious pickled objects");
      return tip;
    }
    case int(Role::Verdict):
      return n.worstVerdict();
    case int(Role::Remote):
      return g.remote;
    case Qt::ForegroundRole:
      return g.error.isEmpty() ? QVariant() : QVariant(QBrush(Qt::darkRed));
    case int(Role::Path):
      return g.path;
    case int(Role::Error):
      return g.error;
    case int(Role::IsGroup):
      return true;
    case int(Role::IsFamily):
      return false;
    case int(Role::Stage):
      return n.stage;
    case int(Role::SortKey):
      return g.name;
    default:
      return {};
  }
}

QString CheckpointListModel::shardedBadge(const CheckpointEntry& c) {
  // The layouts' names are proper nouns: the same in every language.
  static const std::map<std::string, QString> titles = {
      {"hf-index", QStringLiteral("Hugging Face")},
      {"dcp", QStringLiteral("DCP")},
      {"fsdp", QStringLiteral("FSDP")},
      {"deepspeed", QStringLiteral("DeepSpeed")}};
  const auto it = titles.find(c.layout);
  const QString title = it != titles.end() ? it->second : fromStd(c.layout);
  const QString files = countText(uint64_t(std::max(c.shardFiles, 0)), "file", "files");
  const QString badge = c.ranks <= 0
                            ? tr("sharded: %1, %2").arg(title, files)
                            : tr("sharded: %1, %2, %3")
                                  .arg(title, countText(uint64_t(c.ranks), "rank", "ranks"), files);
  // Files the layout names that are not there (ls says the same).
  return c.shardMissing > 0 ? tr("%1, %2 missing").arg(badge).arg(c.shardMissing) : badge;
}

QVariant CheckpointListModel::checkpointData(const CheckpointEntry& c, Column column,
                                             int role) const {
  const bool broken = !c.error.empty();
  const bool dangerous = c.verdict == "dangerous";
  const bool suspicious = c.verdict == "suspicious";
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name: {
          // (Its last part: a QFileInfo made for every row was a sixth of sizing the columns.)
          const size_t slash = c.file.rfind('/');
          const QString name =
              pathFromStd(slash == std::string::npos ? c.file : c.file.substr(slash + 1));
          // A checkpoint of many files is one row that says so.
          return c.sharded.empty() ? name : tr("%1  [%2]").arg(name, shardedBadge(c));
        }
        case Column::Step:
          return c.step ? QString::number(*c.step) : QString();
        case Column::Kind: {
          if (broken) return tr("unreadable");
          const QString kind = fromStd(std::string(checkpointKindName(c.kind)));
          // The trainer's own record of its best (trainer_state.json, ModelCheckpoint); the kind
          // stays. DeepSpeed's `latest` file names the newest tag folder; the kind stays too.
          if (c.latest) return tr("%1, latest").arg(kind);
          return c.best ? tr("%1, best").arg(kind) : kind;
        }
        case Column::Loss:
          return c.loss ? lossText(*c.loss) : QString();
        case Column::Size:
          return sizeText(c.size);
        case Column::Modified:
          return timeText(c.mtime);
        case Column::Count:
          break;
      }
      return {};
    case Qt::TextAlignmentRole:
      if (column == Column::Name || column == Column::Kind || column == Column::Modified) return {};
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::DecorationRole:
      if (column != Column::Name) return {};
      if (dangerous) return standardIcon(QStyle::SP_MessageBoxCritical);
      return standardIcon(broken || suspicious ? QStyle::SP_MessageBoxWarning
                                               : QStyle::SP_FileIcon);
    case Qt::ToolTipRole: {
      QString tip = pathFromStd(c.path);
      if (c.mtime)
        tip += "\n" +
               tr("modified %1").arg(QDateTime::fromSecsSinceEpoch(c.mtime).toString(Qt::ISODate));
      if (const QString share = optimizerShareText(c.optimizerBytes, c.size); !share.isEmpty())
        tip += "\n" + share;
      if (broken) tip += "\n" + fromStd(c.error);
      if (const QString trainer = trainerText(c.trainer); !trainer.isEmpty())
        tip += "\n" + tr("Written by: %1").arg(trainer);
      if (!c.parts.empty()) {
        QStringList files;
        for (const CheckpointPart& p : c.parts) files << fromStd(p.file);
        tip += "\n" + tr("With %1").arg(files.join(", "));
      }
      if (c.best) tip += "\n" + tr("The best checkpoint (%1)").arg(fromStd(c.bestSource));
      if (c.latest)
        tip += "\n" + (c.trainer == "megatron"
                           ? tr("The newest checkpoint (latest_checkpointed_iteration.txt)")
                           : tr("The newest checkpoint (DeepSpeed's latest file)"));
      if (!c.sharded.empty())
        tip += "\n" + tr("One checkpoint of %1, %2 in all")
                          .arg(countText(uint64_t(std::max(c.shardFiles, 0)), "file", "files"),
                               sizeText(c.size));
      if (dangerous)
        tip += "\n" + tr("Would run code if loaded in Python (torch.load): %1").arg(offenders(c));
      else if (suspicious)
        tip += "\n" + tr("Holds pickled objects that are not plain data: %1").arg(offenders(c));
      return tip;
    }
    case Qt::ForegroundRole:
      return broken || dangerous ? QVariant(QBrush(Qt::darkRed)) : QVariant();
    case int(Role::Verdict):
      return fromStd(c.verdict);
    case int(Role::Path):
      return pathFromStd(c.path);
    case int(Role::Error):
      return fromStd(c.error);
    case int(Role::IsGroup):
      return false;
    case int(Role::IsFamily):
      return false;
    case int(Role::Step):
      return c.step ? QVariant(qint64(*c.step)) : QVariant();
    case int(Role::Loss):
      return c.loss ? QVariant(*c.loss) : QVariant();
    case int(Role::Kind):
      return fromStd(std::string(checkpointKindName(c.kind)));
    case int(Role::SortKey):
      switch (column) {
        case Column::Step:
          return c.step ? QVariant(qint64(*c.step)) : QVariant();
        case Column::Loss:
          return c.loss ? QVariant(*c.loss) : QVariant();
        case Column::Size:
          return QVariant(quint64(c.size));
        case Column::Modified:
          return QVariant(qint64(c.mtime));
        default:
          return checkpointData(c, column, Qt::DisplayRole);
      }
    default:
      return {};
  }
}

}  // namespace ckpt
