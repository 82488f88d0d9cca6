#include "curves/curveslegend.h"

#include <QEvent>
#include <QHeaderView>
#include <QLineEdit>
#include <QPainter>
#include <QPixmap>
#include <QSignalBlocker>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace ckpt {
namespace {

constexpr int kGroupRole = Qt::UserRole;
constexpr int kIndexRole = Qt::UserRole + 1;

LegendKey keyOf(const QTreeWidgetItem* item) {
  if (!item) return {};
  return {item->data(0, kGroupRole).toBool(), item->data(0, kIndexRole).toInt()};
}

QIcon swatch(const QColor& colour) {
  QPixmap pixmap(16, 10);
  pixmap.fill(Qt::transparent);
  QPainter p(&pixmap);
  p.fillRect(QRect(0, 3, 16, 4), colour);
  return QIcon(pixmap);
}

QTreeWidgetItem* makeItem(const LegendEntry& e) {
  auto* item = new QTreeWidgetItem;
  item->setText(0, e.label);
  item->setToolTip(0, e.toolTip.isEmpty() ? e.label : e.toolTip);
  item->setIcon(0, swatch(e.colour));
  item->setData(0, kGroupRole, e.key.group);
  item->setData(0, kIndexRole, e.key.index);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable);
  item->setCheckState(0, e.visible ? Qt::Checked : Qt::Unchecked);
  return item;
}

}  // namespace

CurvesLegend::CurvesLegend(QWidget* parent) : QWidget(parent) {
  m_search = new QLineEdit(this);
  m_search->setObjectName("legendSearch");
  m_search->setPlaceholderText(tr("Search runs"));
  m_search->setClearButtonEnabled(true);
  m_tree = new QTreeWidget(this);
  m_tree->setObjectName("legend");
  m_tree->setHeaderHidden(true);
  m_tree->setColumnCount(1);
  m_tree->setUniformRowHeights(true);  // 1,000 rows scroll without measuring each
  m_tree->setMouseTracking(true);
  m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
  m_tree->setTextElideMode(Qt::ElideMiddle);  // "lr3e-4_...seed7": both ends tell runs apart
  m_tree->viewport()->installEventFilter(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(m_search);
  layout->addWidget(m_tree, 1);

  connect(m_search, &QLineEdit::textChanged, this, &CurvesLegend::applySearch);
  connect(m_tree, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int) {
    if (!m_filling) emit visibilityToggled(keyOf(item), item->checkState(0) == Qt::Checked);
  });
  connect(m_tree, &QTreeWidget::itemExpanded, this, [this](QTreeWidgetItem* item) {
    if (!m_filling) emit expandedChanged(keyOf(item), true);
  });
  connect(m_tree, &QTreeWidget::itemCollapsed, this, [this](QTreeWidgetItem* item) {
    if (!m_filling) emit expandedChanged(keyOf(item), false);
  });
  connect(m_tree, &QTreeWidget::itemEntered, this,
          [this](QTreeWidgetItem* item, int) { emit hovered(keyOf(item)); });
}

void CurvesLegend::setEntries(const std::vector<LegendEntry>& entries, const QString& heading) {
  m_tree->setHeaderLabel(heading);
  m_tree->setHeaderHidden(heading.isEmpty());
  m_filling = true;
  m_tree->setUpdatesEnabled(false);
  m_tree->clear();
  QList<QTreeWidgetItem*> top;
  top.reserve(qsizetype(entries.size()));
  for (const LegendEntry& e : entries) {
    QTreeWidgetItem* item = makeItem(e);
    for (const LegendEntry& c : e.children) item->addChild(makeItem(c));
    top << item;
  }
  m_tree->addTopLevelItems(top);
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].expanded) top[qsizetype(i)]->setExpanded(true);
  m_tree->setUpdatesEnabled(true);
  m_filling = false;
  applySearch();
}

QTreeWidgetItem* CurvesLegend::item(const LegendKey& key) const {
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
    QTreeWidgetItem* top = m_tree->topLevelItem(i);
    if (keyOf(top) == key) return top;
    for (int j = 0; j < top->childCount(); ++j)
      if (keyOf(top->child(j)) == key) return top->child(j);
  }
  return nullptr;
}

void CurvesLegend::setHighlighted(const LegendKey& key) {
  QTreeWidgetItem* row = key.index < 0 ? nullptr : item(key);
  const QSignalBlocker block(m_tree);
  if (!row) {
    m_tree->clearSelection();
    return;
  }
  m_tree->setCurrentItem(row);
  m_tree->scrollToItem(row);
}

int CurvesLegend::shownRows() const {
  int n = 0;
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
    QTreeWidgetItem* top = m_tree->topLevelItem(i);
    if (top->isHidden()) continue;
    ++n;
    for (int j = 0; j < top->childCount(); ++j) n += top->child(j)->isHidden() ? 0 : 1;
  }
  return n;
}

void CurvesLegend::applySearch() {
  const QString text = m_search->text().trimmed();
  for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
    QTreeWidgetItem* top = m_tree->topLevelItem(i);
    // A group row by its whole label too (the row shows it shortened).
    const bool topMatches = text.isEmpty() || top->text(0).contains(text, Qt::CaseInsensitive) ||
                            top->toolTip(0).contains(text, Qt::CaseInsensitive);
    bool childMatches = false;
    for (int j = 0; j < top->childCount(); ++j) {
      QTreeWidgetItem* c = top->child(j);
      const bool m = topMatches || c->text(0).contains(text, Qt::CaseInsensitive);
      c->setHidden(!m);
      childMatches = childMatches || m;
    }
    top->setHidden(!topMatches && !childMatches);
  }
}

bool CurvesLegend::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_tree->viewport() && event->type() == QEvent::Leave) emit hovered({});
  return QWidget::eventFilter(watched, event);
}

}  // namespace ckpt
