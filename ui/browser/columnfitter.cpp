#include "browser/columnfitter.h"

#include <QAbstractItemDelegate>
#include <QAbstractProxyModel>
#include <QHeaderView>
#include <QStyleOptionViewItem>
#include <QTreeView>
#include <algorithm>
#include <utility>
#include <vector>

namespace ckpt {
namespace {

// How many of a column's longest texts are measured: text length picks the
// candidates cheaply (no shaping), the delegate measures them, which is what
// decides (a bold run name, an icon) among texts of about the same length.
constexpr size_t kCandidates = 24;

struct Candidate {
  qsizetype length = 0;
  QModelIndex index;
  int depth = 0;
};

}  // namespace

ColumnFitter::ColumnFitter(QTreeView* view) : QObject(view), m_view(view) {
  m_view->header()->setSectionResizeMode(QHeaderView::Interactive);
  m_view->header()->setStretchLastSection(false);
  watch(m_view->model());
}

void ColumnFitter::watch(QAbstractItemModel* model) {
  // The model under a proxy (a filter) is measured: half the cost of walking
  // through the proxy, and rows the filter hides count (they may come back
  // without a signal that they did).
  while (auto* proxy = qobject_cast<QAbstractProxyModel*>(model)) {
    if (!proxy->sourceModel()) break;
    model = proxy->sourceModel();
  }
  m_model = model;
  if (!model) return;
  connect(model, &QAbstractItemModel::modelReset, this, &ColumnFitter::fitAll);
  connect(model, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex& parent, int first, int last) {
            fitRows(parent, first, last, false);
          });
  connect(model, &QAbstractItemModel::dataChanged, this,
          [this](const QModelIndex& topLeft, const QModelIndex& bottomRight) {
            // Those rows only: a run's row said changed (its count) leaves
            // its checkpoints as they were.
            fitRows(topLeft.parent(), topLeft.row(), bottomRight.row(), false, false);
          });
  connect(model, &QAbstractItemModel::headerDataChanged, this, &ColumnFitter::fitAll);
  fitAll();
}

void ColumnFitter::fitAll() {
  if (m_model) fitRows({}, 0, m_model->rowCount() - 1, true);
}

void ColumnFitter::fitRows(const QModelIndex& parent, int first, int last, bool exact,
                           bool withChildren) {
  const int columns = m_model->columnCount(parent.isValid() ? parent : QModelIndex());
  int depth = 0;
  for (QModelIndex p = parent; p.isValid(); p = p.parent()) ++depth;
  // The longest texts of each column among these rows and their children.
  std::vector<std::vector<Candidate>> longest(size_t(std::max(columns, 0)));
  auto consider = [&](std::vector<Candidate>& top, Candidate c) {
    if (top.size() == kCandidates && c.length <= top.front().length) return;
    auto shorter = [](const Candidate& a, const Candidate& b) { return a.length > b.length; };
    if (top.size() == kCandidates) {
      std::pop_heap(top.begin(), top.end(), shorter);
      top.pop_back();
    }
    top.push_back(std::move(c));
    std::push_heap(top.begin(), top.end(), shorter);
  };
  std::vector<std::pair<QModelIndex, int>> stack;  // (parent, its depth) still to walk
  auto walk = [&](const QModelIndex& p, int from, int to, int level) {
    for (int r = from; r <= to; ++r) {
      for (int c = 0; c < columns; ++c) {
        const QModelIndex i = m_model->index(r, c, p);
        // Column 0 holds the tree: its indentation counts as text.
        const qsizetype length =
            i.data(Qt::DisplayRole).toString().size() + (c == 0 ? 3 * level : 0);
        consider(longest[size_t(c)], {length, i, level});
      }
      const QModelIndex child = m_model->index(r, 0, p);
      if (withChildren && m_model->rowCount(child) > 0) stack.emplace_back(child, level + 1);
    }
  };
  if (first <= last) walk(parent, first, last, depth);
  while (!stack.empty()) {
    const auto [p, level] = stack.back();
    stack.pop_back();
    walk(p, 0, m_model->rowCount(p) - 1, level);
  }

  QHeaderView* header = m_view->header();
  QAbstractItemDelegate* delegate = m_view->itemDelegate();
  QStyleOptionViewItem option;
  option.initFrom(m_view);
  option.font = m_view->font();
  option.showDecorationSelected = true;
  option.decorationSize = m_view->iconSize().isValid() ? m_view->iconSize() : QSize(16, 16);
  option.features |= QStyleOptionViewItem::HasDisplay;
  const int indent = m_view->indentation();
  for (int c = 0; c < columns; ++c) {
    int needed = header->sectionSizeHint(c);
    for (const Candidate& cand : longest[size_t(c)]) {
      int width = delegate->sizeHint(option, cand.index).width();
      if (c == 0) width += indent * (cand.depth + (m_view->rootIsDecorated() ? 1 : 0));
      needed = std::max(needed, width);
    }
    if (exact || needed > header->sectionSize(c)) header->resizeSection(c, needed);
  }
}

}  // namespace ckpt
