#include "compare/compareview.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <exception>
#include <map>

#include "compare/diffmodel.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {

namespace {

QString blockLabel(int block) {
  return block < 0 ? QObject::tr("emb/head") : QString::number(block);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  m_title =
      new QLabel(tr("Pick two checkpoints in the browser and choose Compare (Ctrl+D)."), this);
  m_title->setWordWrap(true);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_status = new QLabel(this);
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_progress = new QProgressBar(this);
  m_progress->setFormat(tr("Comparing... %p%"));
  m_progress->hide();
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->hide();
  connect(m_cancel, &QPushButton::clicked, this, &CompareView::cancel);
  m_swap = new QPushButton(tr("Swap A and B"), this);
  m_swap->setEnabled(false);
  m_swap->setToolTip(tr("Compare B with A: what it takes to go back"));
  connect(m_swap, &QPushButton::clicked, this, [this] {
    if (!m_a.isEmpty()) compare(m_b, m_a, m_source);
  });

  m_model = new DiffModel(this);
  m_proxy = new QSortFilterProxyModel(this);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(int(DiffModel::Role::SortKey));
  m_proxy->setFilterKeyColumn(int(DiffModel::Column::Name));
  m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_filter = new QLineEdit(this);
  m_filter->setPlaceholderText(tr("Filter tensors by name"));
  m_filter->setClearButtonEnabled(true);
  connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);
  m_table = new QTableView(this);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(int(DiffModel::Column::RelL2), Qt::DescendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setAlternatingRowColors(true);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_table->horizontalHeader()->setStretchLastSection(true);
  auto* tensors = new QWidget(this);
  auto* tl = new QVBoxLayout(tensors);
  tl->setContentsMargins(0, 4, 0, 0);
  tl->addWidget(m_filter);
  tl->addWidget(m_table, 1);

  m_blockPlot = new QCustomPlot(this);
  m_blockPlot->setMinimumSize(240, 160);
  m_heatPlot = new QCustomPlot(this);
  m_heatPlot->setMinimumSize(240, 160);
  auto* layers = new QSplitter(Qt::Vertical, this);
  layers->addWidget(m_blockPlot);
  layers->addWidget(m_heatPlot);

  m_metadata = new QTableWidget(0, 3, this);
  m_metadata->setHorizontalHeaderLabels({tr("Key"), tr("A"), tr("B")});
  m_metadata->horizontalHeader()->setStretchLastSection(true);
  m_metadata->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_metadata->verticalHeader()->hide();
  m_metadata->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_metaFilter = new QLineEdit(this);
  m_metaFilter->setPlaceholderText(tr("Filter keys"));
  m_metaFilter->setClearButtonEnabled(true);
  m_diffOnly = new QCheckBox(tr("Differences only"), this);
  connect(m_metaFilter, &QLineEdit::textChanged, this, &CompareView::filterMetadata);
  connect(m_diffOnly, &QCheckBox::toggled, this, &CompareView::filterMetadata);
  auto* metadataPage = new QWidget(this);
  auto* ml = new QVBoxLayout(metadataPage);
  ml->setContentsMargins(0, 4, 0, 0);
  auto* mfilters = new QHBoxLayout;
  mfilters->addWidget(m_metaFilter, 1);
  mfilters->addWidget(m_diffOnly);
  ml->addLayout(mfilters);
  ml->addWidget(m_metadata, 1);

  m_tabs = new QTabWidget(this);
  m_tabs->addTab(tensors, tr("Tensors"));
  m_tabs->addTab(layers, tr("Layers"));
  m_tabs->addTab(metadataPage, tr("Metadata"));

  auto* top = new QHBoxLayout;
  top->addWidget(m_title, 1);
  top->addWidget(m_swap);
  auto* progress = new QHBoxLayout;
  progress->addWidget(m_progress, 1);
  progress->addWidget(m_cancel);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addLayout(progress);
  layout->addWidget(m_status);
  layout->addWidget(m_tabs, 1);

  restyle();
  clearResults();
}

// The job stops after the chunk it is reading (BackgroundJob's destructor waits).
CompareView::~CompareView() = default;

void CompareView::clearResults() {
  m_model->clear();
  m_metadata->setRowCount(0);
  m_blockPlot->clearPlottables();
  m_blockPlot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  clearGridMap(m_heatPlot);
  m_heatMap = nullptr;
  m_blockPlot->replot();
  m_heatPlot->replot();
}

void CompareView::compare(QString a, QString b, Source source) {
  m_a = std::move(a);
  m_b = std::move(b);
  m_source = std::move(source);
  clearResults();
  m_title->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(m_a.toHtmlEscaped(), m_b.toHtmlEscaped()));
  m_status->setText(tr("Opening..."));
  m_summary =
      tr("Comparing %1 with %2...").arg(QFileInfo(m_a).fileName(), QFileInfo(m_b).fileName());
  m_swap->setEnabled(true);
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_progress->show();
  m_cancel->show();

  m_job.start(
      [a = m_a, b = m_b, source = m_source](JobProgress& progress) -> Result {
        if (source) {
          Computed c = source(a, b, progress);
          return {std::move(c.diff), std::move(c.metadata), {}};
        }
        const auto fa = CheckpointFile::open(pathToStd(a));
        const auto fb = CheckpointFile::open(pathToStd(b));
        DiffOptions options;
        options.progress = [&progress](size_t done, size_t total) {
          return progress.report(done, total);
        };
        auto diff = std::make_shared<CheckpointDiff>(diffCheckpoints(*fa, *fb, options));
        return {std::move(diff), diffMetadata(*fa, *fb, /*everyKey=*/true), {}};
      },
      [this](JobOutcome outcome, std::optional<Result> result, const QString& error) {
        onFinished(outcome, std::move(result), error);
      },
      [this](const JobProgress& progress) { showProgress(progress); });
}

void CompareView::cancel() {
  m_job.cancel();
}

void CompareView::showMessage(const QString& text, const QString& a, const QString& b) {
  m_job.drop();
  if (!a.isEmpty()) {
    m_a = a;
    m_b = b;
    m_source = {};
    m_title->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(a.toHtmlEscaped(), b.toHtmlEscaped()));
    m_swap->setEnabled(false);
  }
  m_progress->hide();
  m_cancel->hide();
  clearResults();
  m_status->setText(text.toHtmlEscaped());
  m_summary = text;
  emit finished(false);
}

void CompareView::setFilter(const QString& text) {
  m_filter->setText(text);
}

QString CompareView::statusText() const {
  return m_status->text();
}

void CompareView::showProgress(const JobProgress& progress) {
  m_progress->setValue(int(1000.0 * progress.fraction()));
  if (progress.total())
    m_status->setText(tr("Comparing %1 of tensor bytes...").arg(sizeText(progress.total())));
}

void CompareView::onFinished(JobOutcome outcome, std::optional<Result> result,
                             const QString& error) {
  m_progress->hide();
  m_cancel->hide();
  if (outcome == JobOutcome::Failed || !result || !result->diff) {
    clearResults();
    m_status->setText(
        tr("<span style='color:#c03030'>Cannot compare: %1</span>").arg(error.toHtmlEscaped()));
    m_summary = tr("Cannot compare: %1").arg(error);
    emit finished(false);
    return;
  }
  const CheckpointDiff& d = *result->diff;
  m_model->setDiff(result->diff);
  m_table->resizeColumnsToContents();
  showLayers(d);
  showMetadata(result->metadata);

  size_t compared = 0, changed = 0;
  for (const TensorDiff& t : d.tensors) {
    if (!t.computed) continue;
    ++compared;
    if (t.normDiff != 0 || t.dtypeA != t.dtypeB) ++changed;
  }
  QStringList parts;
  parts << tr("%1 compared, %2 changed").arg(countText(compared, "tensor", "tensors")).arg(changed);
  if (!d.added.empty()) parts << tr("%1 added").arg(d.added.size());
  if (!d.removed.empty()) parts << tr("%1 removed").arg(d.removed.size());
  if (!d.changedShape.empty()) parts << tr("%1 changed shape").arg(d.changedShape.size());
  if (d.changedDtypeCount()) parts << tr("%1 changed dtype").arg(d.changedDtypeCount());
  if (d.errorCount()) parts << tr("%1 unreadable").arg(d.errorCount());
  parts << tr("%1 metadata keys differ").arg(d.metadata.size());
  QString status = parts.join(", ");
  const std::vector<size_t> top = d.topByRelL2(1);
  if (!top.empty())
    status += "<br>" + tr("Largest relative change: %1 (%2)")
                           .arg(fromStd(d.tensors[top[0]].name).toHtmlEscaped(),
                                metricText(d.tensors[top[0]].relL2));
  const bool cancelled = d.cancelled || outcome == JobOutcome::Cancelled;
  m_summary = (cancelled ? tr("Comparison cancelled: ") : QString()) + parts.join(", ");
  if (cancelled) status = tr("<b>Cancelled</b>: the tensors compared so far. ") + status;
  for (const std::string& note : d.notes) status += "<br>" + fromStd(note).toHtmlEscaped();
  m_status->setText(status);
  emit finished(!cancelled);
}

void CompareView::showLayers(const CheckpointDiff& d) {
  // Bars: the change of each block (and of what sits outside the blocks).
  m_blockPlot->clearPlottables();
  auto* bars = new QCPBars(m_blockPlot->xAxis, m_blockPlot->yAxis);
  bars->setName(tr("relative change"));
  bars->setPen(Qt::NoPen);
  bars->setBrush(QColor(0x1f, 0x77, 0xb4));
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  QVector<double> keys, values;
  for (size_t i = 0; i < d.blocks.size(); ++i) {
    const double v = d.blocks[i].relL2();
    keys << double(i);
    values << (std::isfinite(v) ? v : 0.0);
    ticks->addTick(double(i), blockLabel(d.blocks[i].block));
  }
  bars->setData(keys, values, /*alreadySorted=*/true);
  QStringList names;
  for (const LayerAggregate& b : d.blocks) names << blockLabel(b.block);
  setHoverReadout(m_blockPlot, [names, values](double key, double) -> QString {
    const int i = int(std::lround(key));
    if (i < 0 || i >= values.size() || std::abs(key - i) > 0.4) return {};
    return QObject::tr("block %1\nrelative change %2").arg(names[i], metricText(values[i]));
  });
  m_blockPlot->xAxis->setTicker(ticks);
  m_blockPlot->xAxis->setLabel(tr("block"));
  m_blockPlot->yAxis->setLabel(tr("relative change"));
  m_blockPlot->xAxis->setRange(-0.7, double(d.blocks.size()) - 0.3);
  bool found = false;
  const QCPRange yr = bars->getValueRange(found);
  m_blockPlot->yAxis->setRange(0, found && yr.upper > 0 ? yr.upper * 1.08 : 1);

  // Heat map: block (rows) x module (columns), modules that occur only.
  std::map<int, int> rowOf, colOf;
  for (const LayerAggregate& m : d.modules) {
    rowOf.emplace(m.block, 0);
    colOf.emplace(int(m.module), 0);
  }
  QStringList rows, columns;
  for (auto& [block, row] : rowOf) {
    row = int(rows.size());
    rows << blockLabel(block);
  }
  for (auto& [module, col] : colOf) {
    col = int(columns.size());
    columns << fromStd(std::string(layerModuleName(LayerModule(module))));
  }
  m_heatMap = makeGridMap(m_heatPlot, columns, rows, tr("block"), tr("relative change"), -35);
  for (const LayerAggregate& m : d.modules) {
    const double v = m.relL2();
    setGridCell(m_heatMap, colOf[int(m.module)], rowOf[m.block],
                std::isfinite(v) ? v : std::nan(""));
  }
  m_heatMap->rescaleDataRange(true);
  restyle();
  m_blockPlot->replot();
  m_heatPlot->replot();
}

void CompareView::showMetadata(const std::vector<MetadataChange>& metadata) {
  m_metadata->setRowCount(int(metadata.size()));
  QColor highlight = palette().color(QPalette::Highlight);
  highlight.setAlpha(60);
  for (size_t i = 0; i < metadata.size(); ++i) {
    const MetadataChange& m = metadata[i];
    const QString a = m.inA ? fromStd(m.aText) : tr("(absent)");
    const QString b = m.inB ? fromStd(m.bText) : tr("(absent)");
    auto* key = new QTableWidgetItem(fromStd(m.key));
    auto* av = new QTableWidgetItem(a);
    auto* bv = new QTableWidgetItem(b);
    for (QTableWidgetItem* item : {key, av, bv}) {
      item->setData(Qt::UserRole, !m.same);
      if (!m.same) item->setBackground(highlight);
    }
    if (!m.same) {
      QFont bold = key->font();
      bold.setBold(true);
      key->setFont(bold);
    }
    if (!m.inA) av->setForeground(paletteMix(palette(), 0.5));
    if (!m.inB) bv->setForeground(paletteMix(palette(), 0.5));
    m_metadata->setItem(int(i), 0, key);
    m_metadata->setItem(int(i), 1, av);
    m_metadata->setItem(int(i), 2, bv);
  }
  filterMetadata();
}

void CompareView::filterMetadata() {
  const QString text = m_metaFilter->text().trimmed();
  const bool differencesOnly = m_diffOnly->isChecked();
  for (int r = 0; r < m_metadata->rowCount(); ++r) {
    const QTableWidgetItem* key = m_metadata->item(r, 0);
    const bool differs = key && key->data(Qt::UserRole).toBool();
    const bool matches = text.isEmpty() || (key && key->text().contains(text, Qt::CaseInsensitive));
    m_metadata->setRowHidden(r, !matches || (differencesOnly && !differs));
  }
}

void CompareView::restyle() {
  applyPalette(m_blockPlot, palette());
  applyPalette(m_heatPlot, palette());
}

void CompareView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_blockPlot) {
    restyle();
    m_blockPlot->replot();
    m_heatPlot->replot();
  }
}

}  // namespace ckpt
