#include "browser/browserpanel.h"

#include <QAction>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QProgressBar>
#include <QRegularExpression>
#include <QTreeView>
#include <QVBoxLayout>

#include "browser/checkpointlistmodel.h"
#include "browser/columnfitter.h"
#include "textformat.h"

namespace ckpt {

BrowserPanel::BrowserPanel(CheckpointListModel* model, QWidget* parent)
    : QWidget(parent), m_model(model) {
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(model);
  m_proxy->setFilterKeyColumn(int(CheckpointListModel::Column::Name));
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_proxy->setRecursiveFilteringEnabled(true);  // a matching checkpoint keeps its run
  m_proxy->setAutoAcceptChildRows(true);        // a matching run keeps its checkpoints

  m_filter = new QLineEdit(this);
  m_filter->setPlaceholderText(tr("Filter runs and checkpoints"));
  m_filter->setClearButtonEnabled(true);
  m_regex = m_filter->addAction(QIcon(), QLineEdit::TrailingPosition);
  m_regex->setText(QStringLiteral(".*"));
  m_regex->setCheckable(true);
  m_regex->setToolTip(tr("Regular expression"));
  // No icon theme offscreen: draw the ".*" as the action's icon.
  {
    QPixmap pm(32, 32);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setPen(palette().color(QPalette::Text));
    QFont f = font();
    f.setPixelSize(18);
    f.setBold(true);
    p.setFont(f);
    p.drawText(pm.rect(), Qt::AlignCenter, QStringLiteral(".*"));
    m_regex->setIcon(QIcon(pm));
  }

  m_view = new QTreeView(this);
  m_view->setModel(m_proxy);
  m_view->setUniformRowHeights(true);
  m_view->setAllColumnsShowFocus(true);
  m_view->setAlternatingRowColors(true);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  // Names are never cut (a run's files differ only at their ends): every
  // column fits its contents, and the tree scrolls sideways when narrow.
  // Not even the last (Modified), which a stretched last section cut short.
  new ColumnFitter(m_view);

  m_progress = new QProgressBar(this);
  m_progress->setTextVisible(true);
  m_progress->hide();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(m_filter);
  layout->addWidget(m_view, 1);
  layout->addWidget(m_progress);
  // Disk use at the root: every listed checkpoint (runs and families show
  // theirs in the Size column).
  m_totals = new QLabel(this);
  m_totals->setContentsMargins(4, 0, 4, 2);
  layout->addWidget(m_totals);
  connect(m_model, &QAbstractItemModel::modelReset, this, &BrowserPanel::updateTotals);
  connect(m_model, &QAbstractItemModel::rowsInserted, this, &BrowserPanel::updateTotals);
  connect(m_model, &QAbstractItemModel::rowsRemoved, this, &BrowserPanel::updateTotals);
  connect(m_model, &QAbstractItemModel::layoutChanged, this, &BrowserPanel::updateTotals);
  connect(m_model, &QAbstractItemModel::dataChanged, this, &BrowserPanel::updateTotals);
  updateTotals();

  connect(m_filter, &QLineEdit::textChanged, this, &BrowserPanel::applyFilter);
  connect(m_regex, &QAction::toggled, this, &BrowserPanel::applyFilter);
  // Filtering or new rows: keep the tree open (runs are short lists). New
  // rows open themselves and their parents; expandAll here walked every row
  // again for each batch of runs a scan lists while it runs (1,000 runs).
  connect(m_proxy, &QAbstractItemModel::rowsInserted, m_view,
          [this](const QModelIndex& parent, int first, int last) {
            for (QModelIndex p = parent; p.isValid(); p = p.parent()) m_view->expand(p);
            // A family opens with its runs, a run shows its checkpoints.
            // (expandRecursively asked every checkpoint row for rows below
            // it: the proxy built a mapping for each, 50,000 of them.)
            for (int row = first; row <= last; ++row) {
              const QModelIndex i = m_proxy->index(row, 0, parent);
              if (!i.data(int(CheckpointListModel::Role::IsGroup)).toBool()) continue;
              m_view->expand(i);
              if (i.data(int(CheckpointListModel::Role::IsFamily)).toBool())
                for (int r = 0, n = m_proxy->rowCount(i); r < n; ++r)
                  m_view->expand(m_proxy->index(r, 0, i));
            }
          });
  connect(m_proxy, &QAbstractItemModel::modelReset, m_view, &QTreeView::expandAll);
  connect(m_proxy, &QAbstractItemModel::layoutChanged, m_view, &QTreeView::expandAll);
}

void BrowserPanel::updateTotals() {
  const size_t count = m_model->checkpointCount();
  m_totals->setVisible(count > 0);
  QString text =
      tr("%1 in %2: %3 on disk")
          .arg(countText(count, "checkpoint", "checkpoints"),
               countText(m_model->groupCount(), "run", "runs"), sizeText(m_model->totalSize()));
  if (const QString share = optimizerShareText(m_model->optimizerSize(), m_model->totalSize());
      !share.isEmpty())
    text += tr(", %1").arg(share);
  m_totals->setText(text);
}

void BrowserPanel::setFilter(const QString& text, bool regex) {
  m_regex->setChecked(regex);
  m_filter->setText(text);
  applyFilter();
}

void BrowserPanel::applyFilter() {
  const QString text = m_filter->text();
  m_filterError.clear();
  if (m_regex->isChecked()) {
    const QRegularExpression re(text, QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid()) {
      // Keep the last good filter; say what is wrong where the user types.
      m_filterError = re.errorString();
      m_filter->setStyleSheet(QStringLiteral("QLineEdit { color: #c00000; }"));
      m_filter->setToolTip(tr("Invalid regular expression: %1").arg(m_filterError));
      return;
    }
    m_proxy->setFilterRegularExpression(re);
  } else {
    m_proxy->setFilterFixedString(text);
  }
  m_filter->setStyleSheet({});
  m_filter->setToolTip({});
  m_view->expandAll();
}

void BrowserPanel::showProgress(size_t done, size_t total) {
  m_progress->setRange(0, total ? int(total) : 0);
  if (total) m_progress->setValue(int(done));
  m_progress->setFormat(total ? tr("Scanning %v of %m") : tr("Scanning..."));
  m_progress->show();
}

void BrowserPanel::hideProgress() {
  m_progress->hide();
}

}  // namespace ckpt
