#include "compare/driftview.h"

#include <qcustomplot.h>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <exception>
#include <map>
#include <stdexcept>

#include "ckpt/analysis/diff.h"
#include "compare/diffmodel.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {

namespace {

QString blockName(int block) {
  return block < 0 ? QObject::tr("emb/head") : QObject::tr("block %1").arg(block);
}

DriftView::Step diffPair(const QString& from, const QString& to, const QString& label,
                         JobProgress& progress, const CompareView::Source& source) {
  DriftView::Step s;
  s.from = from;
  s.to = to;
  s.label = label;
  try {
    std::shared_ptr<const CheckpointDiff> computed;
    if (source) {
      computed = source(from, to, progress).diff;
      if (!computed) throw std::runtime_error("no comparison came back");
    } else {
      const auto a = CheckpointFile::open(pathToStd(from));
      const auto b = CheckpointFile::open(pathToStd(to));
      DiffOptions options;
      options.progress = [&progress](size_t done, size_t total) {
        return progress.report(done, total);
      };
      computed = std::make_shared<const CheckpointDiff>(diffCheckpoints(*a, *b, options));
    }
    const CheckpointDiff& d = *computed;
    // No tensor in common is no change of 0: say so.
    if (d.tensors.empty() && !d.cancelled) {
      s.error = QObject::tr(
                    "no tensor of the two has the same name and shape (%1 only in %2, %3 "
                    "only in %4, %5 of another shape)")
                    .arg(d.removed.size())
                    .arg(QFileInfo(from).fileName())
                    .arg(d.added.size())
                    .arg(QFileInfo(to).fileName())
                    .arg(d.changedShape.size());
      return s;
    }
    double diffSq = 0, aSq = 0;
    for (const LayerAggregate& block : d.blocks) {
      s.blocks.push_back(block.block);
      s.perBlock.push_back(block.relL2());
      diffSq += block.sumDiffSq;
      aSq += block.sumASq;
    }
    // The same convention as one tensor's rel_l2 (LayerAggregate::relL2).
    s.total = aSq > 0 ? std::sqrt(diffSq) / std::sqrt(aSq) : (diffSq > 0 ? INFINITY : 0.0);
    if (const std::vector<size_t> top = d.topByRelL2(1); !top.empty()) {
      s.largest = fromStd(d.tensors[top[0]].name);
      s.largestRel = d.tensors[top[0]].relL2;
    }
    if (d.cancelled) s.cancelled = true;
  } catch (const std::exception& e) {
    s.error = fromStd(e.what());
  }
  return s;
}

}  // namespace

DriftView::DriftView(QWidget* parent) : QWidget(parent) {
  m_title = new QLabel(
      tr("Select a run (drift through training) or a stage family (pretrain → sft → dpo) in "
         "the browser and choose Checkpoint > Drift."),
      this);
  m_title->setWordWrap(true);
  m_status = new QLabel(this);
  m_status->setWordWrap(true);
  m_progress = new QProgressBar(this);
  m_progress->hide();
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->hide();
  connect(m_cancel, &QPushButton::clicked, this, &DriftView::cancel);

  m_table = new QTableWidget(0, 4, this);
  m_table->setHorizontalHeaderLabels(
      {tr("Step"), tr("Change"), tr("Largest change"), tr("From → to")});
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_curves = new QCustomPlot(this);
  m_curves->setMinimumSize(240, 160);
  // The legend right of the chart, never over a point.
  {
    QCPLegend* legend = m_curves->legend;
    m_curves->axisRect()->insetLayout()->take(legend);
    auto* side = new QCPLayoutGrid;
    m_curves->plotLayout()->addElement(0, 1, side);
    m_curves->plotLayout()->setColumnStretchFactor(1, 0.001);
    side->addElement(0, 0, legend);
    side->addElement(1, 0, new QCPLayoutElement(m_curves));
    side->setRowStretchFactor(0, 0.001);
    legend->setBrush(Qt::NoBrush);
    legend->setBorderPen(Qt::NoPen);
    legend->setLayer(QStringLiteral("legend"));
  }
  m_heat = new QCustomPlot(this);
  m_heat->setMinimumSize(240, 160);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_table);
  split->addWidget(m_curves);
  split->addWidget(m_heat);
  split->setSizes({150, 260, 260});
  // Until a chain is chosen the tab is its hint: no empty table, no 0..1 axes.
  m_results = split;
  m_results->hide();
  m_title->setAlignment(Qt::AlignLeft | Qt::AlignTop);

  auto* progress = new QHBoxLayout;
  progress->addWidget(m_progress, 1);
  progress->addWidget(m_cancel);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(m_title);
  layout->addLayout(progress);
  layout->addWidget(m_status);
  layout->addWidget(split, 1);

  restyle();
  plot();
}

// The job stops after the chunk it is reading (BackgroundJob's destructor waits).
DriftView::~DriftView() = default;

void DriftView::cancel() {
  m_job.cancel();
}

QString DriftView::statusText() const {
  return m_status->text();
}

void DriftView::showChain(const QString& title, const QStringList& checkpoints,
                          const QStringList& labels, CompareView::Source source) {
  m_job.drop();
  m_results->show();
  m_title->setText(title.toHtmlEscaped());
  m_steps.clear();
  m_table->setRowCount(0);
  plot();  // empty at once: nothing of an earlier chain stays on screen
  if (checkpoints.size() < 2) {
    m_progress->hide();
    m_cancel->hide();
    m_status->setText(tr("A chain needs two checkpoints or more."));
    emit finished(false);
    return;
  }
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_progress->show();
  m_cancel->show();
  m_status->setText(tr("Comparing step 1 of %1...").arg(checkpoints.size() - 1));
  m_job.start(
      [checkpoints, labels, source = std::move(source)](JobProgress& progress) {
        std::vector<Step> steps;
        const int pairs = int(checkpoints.size()) - 1;
        for (int i = 0; i < pairs && !progress.cancelled(); ++i) {
          progress.setPart(i, pairs);
          steps.push_back(diffPair(checkpoints[i], checkpoints[i + 1],
                                   i + 1 < labels.size() ? labels[i + 1] : QString(), progress,
                                   source));
        }
        return steps;
      },
      [this](JobOutcome outcome, std::optional<std::vector<Step>> steps, const QString& error) {
        onFinished(outcome, std::move(steps), error);
      },
      [this](const JobProgress& progress) { showProgress(progress); });
}

void DriftView::showProgress(const JobProgress& progress) {
  const int pairs = std::max(1, progress.parts());
  m_progress->setValue(int(1000.0 * (progress.part() + progress.fraction()) / pairs));
  m_status->setText(tr("Comparing step %1 of %2...").arg(progress.part() + 1).arg(pairs));
}

void DriftView::onFinished(JobOutcome outcome, std::optional<std::vector<Step>> steps,
                           const QString& error) {
  m_progress->hide();
  m_cancel->hide();
  m_steps = steps ? std::move(*steps) : std::vector<Step>{};
  bool cancelled = outcome == JobOutcome::Cancelled;
  for (const Step& s : m_steps) cancelled = cancelled || s.cancelled;
  if (outcome == JobOutcome::Failed) {
    m_table->setRowCount(0);
    plot();
    m_status->setText(
        tr("<span style='color:#c03030'>Cannot compare: %1</span>").arg(error.toHtmlEscaped()));
    emit finished(false);
    return;
  }
  int failed = 0;
  m_table->setRowCount(int(m_steps.size()));
  for (size_t i = 0; i < m_steps.size(); ++i) {
    const Step& s = m_steps[i];
    if (!s.error.isEmpty()) ++failed;
    const QString change = s.error.isEmpty() ? metricText(s.total) : tr("error: %1").arg(s.error);
    const QString largest =
        s.largest.isEmpty() || s.largestRel == 0
            ? QString()
            : QStringLiteral("%1 (%2)").arg(s.largest, metricText(s.largestRel));
    const QStringList cells = {
        s.label, change, largest,
        QFileInfo(s.from).fileName() + QStringLiteral(" → ") + QFileInfo(s.to).fileName()};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == 3) item->setToolTip(s.from + "\n→ " + s.to);
      m_table->setItem(int(i), c, item);
    }
  }
  plot();
  QString status = tr("%1 compared").arg(countText(m_steps.size(), "step", "steps"));
  if (failed) status += tr(", %1 could not be").arg(failed);
  if (cancelled) status = tr("Cancelled: ") + status;
  if (failed)
    for (const Step& s : m_steps)
      if (!s.error.isEmpty()) {
        status += tr(" (first: %1)").arg(s.error.toHtmlEscaped());
        break;
      }
  m_status->setText(status);
  emit finished(!cancelled && failed == 0);
}

void DriftView::plot() {
  // Curves: the change of each block over the chain, and of the whole model.
  m_curves->clearPlottables();
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  std::map<int, size_t> colour;
  for (size_t i = 0; i < m_steps.size(); ++i) {
    ticks->addTick(double(i), m_steps[i].label);
    for (int b : m_steps[i].blocks) colour.emplace(b, colour.size());
  }
  m_curves->legend->setVisible(!m_steps.empty());
  QCPGraph* total = m_curves->addGraph();
  total->setName(tr("whole model"));
  total->setPen(QPen(palette().color(QPalette::Text), 2.5));
  total->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
  for (const auto& [block, index] : colour) {
    QCPGraph* g = m_curves->addGraph();
    g->setName(blockName(block));
    g->setPen(QPen(seriesColour(index), 1.2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
    for (size_t i = 0; i < m_steps.size(); ++i)
      for (size_t k = 0; k < m_steps[i].blocks.size(); ++k)
        if (m_steps[i].blocks[k] == block && std::isfinite(m_steps[i].perBlock[k]))
          g->addData(double(i), m_steps[i].perBlock[k]);
  }
  for (size_t i = 0; i < m_steps.size(); ++i)
    if (m_steps[i].error.isEmpty() && std::isfinite(m_steps[i].total))
      total->addData(double(i), m_steps[i].total);
  m_curves->xAxis->setTicker(ticks);
  m_curves->xAxis->setRange(-0.3, double(std::max<size_t>(m_steps.size(), 1)) - 0.7);
  m_curves->yAxis->setLabel(tr("relative change"));
  m_curves->rescaleAxes(/*onlyEnlarge=*/false);
  m_curves->xAxis->setRange(-0.3, double(std::max<size_t>(m_steps.size(), 1)) - 0.7);
  // From 0, with room above the highest point for its marker.
  bool found = false;
  double top = 0;
  for (int g = 0; g < m_curves->graphCount(); ++g) {
    const QCPRange r = m_curves->graph(g)->getValueRange(found);
    if (found) top = std::max(top, r.upper);
  }
  m_curves->yAxis->setRange(0, top > 0 ? top * 1.1 : 1);

  // Heat map: block (rows) x step (columns).
  std::map<int, int> rowOf;
  QStringList rows, columns;
  for (auto& [block, index] : colour) {
    rowOf[block] = int(rows.size());
    rows << (block < 0 ? tr("emb/head") : QString::number(block));
  }
  for (const Step& s : m_steps) columns << s.label;
  if (m_steps.empty() || rows.isEmpty()) {
    clearGridMap(m_heat);
    m_heatMap = nullptr;
  } else {
    m_heatMap = makeGridMap(m_heat, columns, rows, tr("block"), tr("relative change"));
    for (size_t i = 0; i < m_steps.size(); ++i)
      for (size_t k = 0; k < m_steps[i].blocks.size(); ++k) {
        const double v = m_steps[i].perBlock[k];
        setGridCell(m_heatMap, int(i), rowOf[m_steps[i].blocks[k]],
                    std::isfinite(v) ? v : std::nan(""));
      }
    m_heatMap->rescaleDataRange(true);
  }
  restyle();
  m_curves->replot();
  m_heat->replot();
}

void DriftView::restyle() {
  applyPalette(m_curves, palette());
  applyPalette(m_heat, palette());
  if (m_curves->graphCount() > 0)
    m_curves->graph(0)->setPen(QPen(palette().color(QPalette::Text), 2.5));
}

void DriftView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_curves) {
    restyle();
    m_curves->replot();
    m_heat->replot();
  }
}

}  // namespace ckpt
