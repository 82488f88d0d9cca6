#include "curves/runstable.h"

#include <QEvent>
#include <QFileInfo>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPalette>
#include <QSettings>
#include <QSignalBlocker>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "textformat.h"

namespace ckpt {
namespace {

constexpr int kFilterPauseMs = 400;  // typing: the table follows once the keys pause
constexpr const char* kFilterKey = "curves/runsTableFilter";
constexpr const char* kSortKey = "curves/runsTableSort";
constexpr int kMaxColumnWidth =
    200;  // a long run name or path elides rather than push the rest off

// Six significant digits, as `ckptscope-cli runs` prints them.
QString numberText(double v) {
  return QString::number(v, 'g', 6);
}

}  // namespace

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::setTable(RunsTable table, bool grouped) {
  beginResetModel();
  m_table = std::move(table);
  m_grouped = grouped;
  endResetModel();
}

void RunsTableModel::sortRows(const QString& sort) {
  beginResetModel();
  sortRunsTable(m_table, pathToStd(sort));
  endResetModel();
}

// The metric's columns before the hyperparameters: the best stays in view
// at 1000x700 however many hyperparameters differ.
int RunsTableModel::firstHparamColumn() const {
  return (m_grouped ? 2 : 1) + 5;
}

RunsTableModel::Column RunsTableModel::kind(int column) const {
  if (column == 0) return Column::Name;
  if (m_grouped && column == 1) return Column::Runs;
  if (column >= firstHparamColumn()) return Column::Hparam;
  static constexpr Column kMetric[] = {Column::Best, Column::BestStep, Column::Last, Column::Points,
                                       Column::Checkpoint};
  return kMetric[column - (m_grouped ? 2 : 1)];
}

QString RunsTableModel::sortKey(int column) const {
  switch (kind(column)) {
    case Column::Name:
      return QStringLiteral("name");
    case Column::Runs:
      return QStringLiteral("runs");
    case Column::Hparam:
      return fromStd(m_table.columns[size_t(column - firstHparamColumn())]);
    case Column::Points:
      return QStringLiteral("points");
    case Column::Last:
      return QStringLiteral("last");
    case Column::Best:
      return QStringLiteral("best");
    case Column::BestStep:
      return QStringLiteral("best_step");
    case Column::Checkpoint:
      return QStringLiteral("checkpoint");
  }
  return {};
}

int RunsTableModel::columnOf(const QString& key) const {
  for (int c = 0; c < columnCount(); ++c)
    if (sortKey(c) == key) return c;
  return -1;
}

int RunsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_table.rows.size());
}

int RunsTableModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  return firstHparamColumn() + int(m_table.columns.size());
}

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const RunsTableRow& r = row(index.row());
  const Column k = kind(index.column());
  if (role == Qt::DisplayRole) {
    switch (k) {
      case Column::Name:
        return fromStd(r.name);
      case Column::Runs:
        return qulonglong(r.runs.size());
      case Column::Hparam: {
        const auto it = r.hparams.find(pathToStd(sortKey(index.column())));
        return it == r.hparams.end() ? QString() : fromStd(it->second.text);
      }
      case Column::Points:
        return qulonglong(r.points);
      case Column::Last:
        return r.last ? numberText(*r.last) : QString();
      case Column::Best:
        return r.best ? numberText(*r.best) : QString();
      case Column::BestStep:
        return r.bestStep ? QString::number(*r.bestStep) : QString();
      case Column::Checkpoint:
        return r.checkpoint.empty() ? QString() : QFileInfo(fromStd(r.checkpoint)).fileName();
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (k) {
      case Column::Name:
        if (m_grouped) {
          QStringList runs;
          for (const std::string& run : r.runs) runs << fromStd(run);
          return runs.join('\n');
        }
        return fromStd(r.path);
      case Column::Last:
        return r.lastStep ? tr("at step %1").arg(*r.lastStep) : QVariant();
      case Column::Best:
        if (!r.best) return {};
        return m_grouped ? tr("%1 at step %2 on the group's mean line (best run: %3)")
                               .arg(numberText(*r.best))
                               .arg(r.bestStep.value_or(0))
                               .arg(fromStd(r.bestRun))
                         : tr("%1 at step %2").arg(numberText(*r.best)).arg(r.bestStep.value_or(0));
      case Column::Checkpoint:
        if (r.checkpoint.empty()) return {};
        return tr("%1\nstep %2, the checkpoint nearest the best%3\nClick to open it")
            .arg(fromStd(r.checkpoint))
            .arg(r.checkpointStep.value_or(0))
            .arg(m_grouped ? tr(" of %1").arg(fromStd(r.bestRun)) : QString());
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole && k != Column::Name && k != Column::Checkpoint &&
      k != Column::Hparam)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  // A checkpoint cell opens the checkpoint: it looks like a link.
  if (role == Qt::FontRole && k == Column::Checkpoint && !r.checkpoint.empty()) {
    QFont f;
    f.setUnderline(true);
    return f;
  }
  if (role == Qt::ForegroundRole && k == Column::Checkpoint && !r.checkpoint.empty())
    return QPalette().brush(QPalette::Link);
  if (role == int(Role::Path)) {
    if (k == Column::Checkpoint) return fromStd(r.checkpoint);
    return fromStd(r.path);
  }
  return {};
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  const QString goal = fromStd(std::string(metricGoalName(m_table.goal)));
  if (role == Qt::DisplayRole) {
    switch (kind(section)) {
      case Column::Name:
        return m_grouped ? tr("Group") : tr("Run");
      case Column::Runs:
        return tr("Runs");
      case Column::Hparam:
        return sortKey(section);
      case Column::Points:
        return tr("Points");
      case Column::Last:
        return tr("Last");
      case Column::Best:
        return tr("Best (%1)").arg(goal);
      case Column::BestStep:
        return tr("Best step");
      case Column::Checkpoint:
        return tr("Checkpoint");
    }
  }
  if (role == Qt::ToolTipRole) {
    const QString metric = fromStd(m_table.metric);
    const QString line = m_grouped ? tr(" of the group's mean line") : QString();
    switch (kind(section)) {
      case Column::Points:
        return tr("Points of %1%2").arg(metric, line);
      case Column::Last:
        return tr("The last value of %1%2").arg(metric, line);
      case Column::Best:
        return tr("The %1 of %2%3 (%4 is better %5)")
            .arg(goal == QLatin1String("min") ? tr("lowest") : tr("highest"), metric, line, metric,
                 goal == QLatin1String("min") ? tr("low") : tr("high"));
      case Column::BestStep:
        return tr("The step of the best");
      case Column::Checkpoint:
        return tr("The checkpoint nearest the best step: click it to open it");
      case Column::Hparam:
        return tr("A hyperparameter that differs between the runs");
      default:
        return {};
    }
  }
  return {};
}

RunsTablePanel::RunsTablePanel(QWidget* parent) : QWidget(parent) {
  m_model = new RunsTableModel(this);
  m_filter = new QLineEdit(this);
  m_filter->setObjectName("runsFilter");
  m_filter->setPlaceholderText(tr("Filter runs: lr == 3e-4, val_loss < 2.5, name ~ sft"));
  m_filter->setClearButtonEnabled(true);
  m_filter->setToolTip(
      tr("NAME OP VALUE with == != < <= > >= ~ (regular expression) !~, combined with and, or, "
         "not and parentheses. NAME: a hyperparameter, a metric (its last value), or name, "
         "last, best, best_step, points, checkpoint"));
  m_count = new QLabel(this);
  m_count->setObjectName("runsCount");
  m_error = new QLabel(this);
  m_error->setObjectName("runsFilterError");
  m_error->setWordWrap(true);
  m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QPalette red = m_error->palette();
  red.setColor(QPalette::WindowText, QColor(200, 30, 30));
  m_error->setPalette(red);
  m_error->hide();

  m_view = new QTableView(this);
  m_view->setObjectName("runsTable");
  m_view->setModel(m_model);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_view->setMouseTracking(true);
  m_view->setWordWrap(false);
  m_view->setTextElideMode(Qt::ElideMiddle);
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
  m_view->horizontalHeader()->setSectionsClickable(true);
  m_view->horizontalHeader()->setSortIndicatorShown(true);
  m_view->horizontalHeader()->setHighlightSections(false);
  m_view->horizontalHeader()->setStretchLastSection(true);
  m_view->viewport()->installEventFilter(this);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(0, 0, 0, 0);
  top->addWidget(m_filter, 1);
  top->addWidget(m_count);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(3);
  layout->addLayout(top);
  layout->addWidget(m_error);
  layout->addWidget(m_view, 1);

  const QSettings settings;
  m_applied = settings.value(kFilterKey).toString();
  m_sort = settings.value(kSortKey).toString();
  {
    const QSignalBlocker block(m_filter);
    m_filter->setText(m_applied);
  }

  m_filterTimer.setSingleShot(true);
  m_filterTimer.setInterval(kFilterPauseMs);
  connect(&m_filterTimer, &QTimer::timeout, this, &RunsTablePanel::applyFilter);
  connect(m_filter, &QLineEdit::textEdited, this, [this] { m_filterTimer.start(); });
  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    if (text.isEmpty()) applyFilter();  // the clear button: at once
  });
  connect(m_filter, &QLineEdit::returnPressed, this, &RunsTablePanel::applyFilter);
  connect(m_view->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this,
          &RunsTablePanel::onSortIndicatorChanged);
  connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& index) {
    if (m_model->kind(index.column()) != RunsTableModel::Column::Checkpoint) return;
    const QString path = index.data(int(RunsTableModel::Role::Path)).toString();
    if (!path.isEmpty()) emit checkpointClicked(path);
  });
  connect(m_view, &QTableView::entered, this, [this](const QModelIndex& index) {
    if (index.row() == m_hoveredRow) return;
    m_hoveredRow = index.row();
    emit rowHovered(m_hoveredRow);
  });
}

void RunsTablePanel::applyFilter() {
  m_filterTimer.stop();
  const QString text = m_filter->text().trimmed();
  if (text == m_applied) return;
  m_applied = text;
  QSettings().setValue(kFilterKey, m_applied);
  emit filterChanged();
}

void RunsTablePanel::onSortIndicatorChanged(int section, Qt::SortOrder order) {
  const QString key = m_model->sortKey(section);
  if (key.isEmpty()) return;
  const QString sort = (order == Qt::DescendingOrder ? QStringLiteral("-") : QString()) + key;
  if (sort == m_sort) return;
  m_sort = sort;
  QSettings().setValue(kSortKey, m_sort);
  m_model->sortRows(m_sort);
  m_hoveredRow = -1;
  emit sorted();
}

void RunsTablePanel::showSortIndicator() {
  const bool descending = m_sort.startsWith('-');
  const int column = m_model->columnOf(descending ? m_sort.mid(1) : m_sort);
  const QSignalBlocker block(m_view->horizontalHeader());
  // No sort chosen: by name, as the core sorts (naturally: seed2 before seed10).
  m_view->horizontalHeader()->setSortIndicator(
      column < 0 ? 0 : column, descending ? Qt::DescendingOrder : Qt::AscendingOrder);
}

void RunsTablePanel::setTable(RunsTable table, bool grouped, const QString& filterError) {
  const size_t shown = table.runsShown, total = table.runsTotal, rows = table.rows.size();
  m_model->setTable(std::move(table), grouped);
  m_hoveredRow = -1;
  // A run's name differs at both ends (lr3e-4_...seed7); a group's label
  // starts with what tells groups apart.
  m_view->setTextElideMode(grouped ? Qt::ElideRight : Qt::ElideMiddle);
  showSortIndicator();
  m_error->setText(filterError);  // run_filter says "filter: ..." itself
  m_error->setVisible(!filterError.isEmpty());
  QString count = tr("%1 of %2").arg(shown).arg(countText(total, "run", "runs"));
  if (grouped) count += tr(", %1").arg(countText(rows, "group", "groups"));
  m_count->setText(count);
  // Columns fit their contents (a name or path past kMaxColumnWidth elides);
  // the rows of a large sweep are not all measured (resizeColumnsToContents
  // looks at the rows shown and a sample).
  m_view->horizontalHeader()->setResizeContentsPrecision(200);
  m_view->resizeColumnsToContents();
  for (int c = 0; c < m_model->columnCount(); ++c)
    if (m_view->columnWidth(c) > kMaxColumnWidth) m_view->setColumnWidth(c, kMaxColumnWidth);
}

void RunsTablePanel::setHighlightedRow(int row) {
  if (row < 0 || row >= m_model->rowCount()) {
    m_view->clearSelection();
    return;
  }
  m_view->selectRow(row);
  m_view->scrollTo(m_model->index(row, 0));
}

bool RunsTablePanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_view->viewport() && event->type() == QEvent::Leave && m_hoveredRow >= 0) {
    m_hoveredRow = -1;
    emit rowHovered(-1);
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace ckpt
