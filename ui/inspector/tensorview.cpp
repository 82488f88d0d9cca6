#include "inspector/tensorview.h"

#include <qcustomplot.h>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTextDocument>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/remote/agent_client.h"
#include "inspector/checkpointsummary.h"
#include "inspector/optimizermodel.h"
#include "inspector/valuetablemodel.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {
namespace {

// Heat maps get one cell per pixel of the plot, within these bounds.
constexpr int kMinHeatCells = 128;
constexpr int kMaxHeatCells = 1024;

QCustomPlot* makePlot(QWidget* parent) {
  auto* p = new QCustomPlot(parent);
  p->setMinimumSize(220, 160);
  applyPalette(p, parent->palette());
  return p;
}

}  // namespace

TensorView::TensorView(QWidget* parent) : QWidget(parent) {
  m_title = new QLabel(this);
  QFont f = m_title->font();
  f.setBold(true);
  m_title->setFont(f);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_subtitle = new QLabel(this);
  m_subtitle->setWordWrap(true);  // the hint is a sentence: it must not set the panel's width
  m_subtitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_stats = new QLabel(this);
  m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_stats->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  m_stats->setMinimumWidth(m_stats->fontMetrics().horizontalAdvance(
      tr("L2 norm") + QStringLiteral("  -0.000123457e+99  ")));

  m_histogram = makePlot(this);
  m_bars = new QCPBars(m_histogram->xAxis, m_histogram->yAxis);
  m_bars->setPen(Qt::NoPen);
  m_bars->setBrush(QColor(0x3b, 0x75, 0xaf));
  m_histogram->xAxis->setLabel(tr("value"));
  m_histogram->yAxis->setLabel(tr("count"));

  m_heat = makePlot(this);
  m_colorMap = new QCPColorMap(m_heat->xAxis, m_heat->yAxis);
  m_colorMap->setGradient(QCPColorGradient::gpThermal);
  m_colorMap->setInterpolate(false);
  m_heat->yAxis->setRangeReversed(true);  // row 0 at the top, as in the value table
  m_heat->xAxis->setLabel(tr("column"));
  m_heat->yAxis->setLabel(tr("row"));
  auto* scale = new QCPColorScale(m_heat);
  m_heat->plotLayout()->addElement(0, 1, scale);
  scale->setLabel(tr("mean |x|"));
  applyPalette(m_heat, palette());
  m_colorMap->setColorScale(scale);
  m_heatNote = new QLabel(this);
  m_heatNote->setAlignment(Qt::AlignCenter);
  m_heatNote->setWordWrap(true);

  m_values = new ValueTableModel(this);
  m_valueView = new QTableView(this);
  m_valueView->setModel(m_values);
  m_valueView->setWordWrap(false);
  m_valueView->verticalHeader()->setDefaultSectionSize(m_valueView->fontMetrics().height() + 4);
  m_valueView->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  m_valueView->horizontalHeader()->setDefaultSectionSize(
      m_valueView->fontMetrics().horizontalAdvance("-0.000123457") + 12);

  auto* statsRow = new QWidget(this);
  auto* statsLayout = new QHBoxLayout(statsRow);
  statsLayout->setContentsMargins(0, 0, 0, 0);
  statsLayout->addWidget(m_stats);
  statsLayout->addWidget(m_histogram, 1);

  auto* heatPanel = new QWidget(this);
  auto* heatLayout = new QVBoxLayout(heatPanel);
  heatLayout->setContentsMargins(0, 0, 0, 0);
  heatLayout->addWidget(m_heat, 1);
  heatLayout->addWidget(m_heatNote);

  // The value table scrolls a window of rows; "Go to row" moves the window.
  auto* valuePanel = new QWidget(this);
  m_rowBox = new QSpinBox(valuePanel);
  m_rowBox->setKeyboardTracking(false);
  m_rowBox->setGroupSeparatorShown(true);
  m_rowTotal = new QLabel(valuePanel);
  auto* rowLine = new QHBoxLayout;
  rowLine->addWidget(new QLabel(tr("Go to row"), valuePanel));
  rowLine->addWidget(m_rowBox);
  rowLine->addWidget(m_rowTotal, 1);
  auto* valueLayout = new QVBoxLayout(valuePanel);
  valueLayout->setContentsMargins(0, 0, 0, 0);
  valueLayout->addLayout(rowLine);
  valueLayout->addWidget(m_valueView, 1);
  connect(m_rowBox, &QSpinBox::valueChanged, this, [this](int row) { goToRow(row); });
  // Return goes to the row even when the number is the one already there
  // (the table scrolled away since); leaving the box does not.
  connect(m_rowBox, &QAbstractSpinBox::editingFinished, this, [this] {
    if (m_rowBox->hasFocus()) goToRow(m_rowBox->value());
  });

  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(heatPanel);
  lower->addWidget(valuePanel);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  lower->setChildrenCollapsible(false);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(statsRow);
  split->addWidget(lower);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 6, 6);
  layout->addWidget(m_title);
  layout->addWidget(m_subtitle);
  layout->addWidget(split, 1);
  m_empty = new QWidget(this);  // keeps the title at the top while nothing is shown
  layout->addWidget(m_empty, 1);
  m_body = split;

  // A heat map follows the plot's size, once the resizing has settled.
  m_resizeTimer.setSingleShot(true);
  m_resizeTimer.setInterval(300);
  connect(&m_resizeTimer, &QTimer::timeout, this, &TensorView::resampleHeatMap);
  setFile(nullptr);
}

// The jobs stop at their next chunk (BackgroundJob's destructor waits).
TensorView::~TensorView() = default;

void TensorView::setRemote(std::shared_ptr<const RemoteTensors> remote) {
  setFile(nullptr);
  m_remote = std::move(remote);
}

void TensorView::cancel() {
  if (m_job.isRunning()) m_job.cancel();
}

void TensorView::setFile(std::shared_ptr<const CheckpointFile> file) {
  if (m_remote && m_job.isRunning()) emit remoteBusy(false);
  m_job.drop();
  m_heatJob.drop();
  m_remote.reset();
  m_file = std::move(file);
  m_tensor = -1;
  m_analysis.reset();
  m_values->setTensor(nullptr);
  m_title->setText(tr("No tensor selected"));
  m_subtitle->setText(
      tr("Select a tensor in Parameters, Optimizer, Metadata or the Summary's tensor table."));
  m_stats->clear();
  m_rowTotal->clear();
  clearPlots({});
  // No axes, colour scale or row box of an earlier tensor on an empty panel.
  m_body->hide();
  m_empty->show();
}

void TensorView::clearPlots(const QString& why) {
  m_bars->data()->clear();
  m_histogram->replot();
  m_colorMap->data()->clear();
  m_colorMap->setVisible(false);
  m_heat->replot();
  m_heatNote->setText(why);
  m_heatNote->setVisible(!why.isEmpty());
}

void TensorView::showTensor(int index, const QString& name) {
  if (m_remote) return showRemoteTensor(index, name);
  if (!m_file || index < 0 || size_t(index) >= m_file->tensors().size()) return;
  if (index == m_tensor && (m_job.isRunning() || m_analysis)) return;
  m_heatJob.drop();
  m_tensor = index;
  m_analysis.reset();
  m_values->setTensor(nullptr);
  const TensorInfo& t = m_file->tensors()[size_t(index)];
  m_histogram->show();
  m_heat->show();
  m_title->setText(name.isEmpty() ? fromStd(joinPath(t.path)) : name);
  m_subtitle->setText(tr("%1 %2, %3 elements, %4%5")
                          .arg(fromStd(std::string(dtypeName(t.dtype))), fromStd(t.shapeString()),
                               groupedNumber(t.numel()), sizeText(t.nbytes()),
                               t.isContiguous() ? QString() : tr(", non-contiguous view")));
  m_stats->setText(tr("Computing..."));
  clearPlots({});
  m_empty->hide();
  m_body->show();

  // The job of an earlier tensor stops at its next chunk; its result is dropped.
  m_job.start([file = m_file, index, options = optionsFor(t)](
                  JobProgress& progress) { return compute(file, index, options, progress); },
              [this](JobOutcome, std::optional<Result> r, const QString& error) {
                onFinished(r ? std::move(*r) : Result{m_tensor, std::nullopt, nullptr, error});
              },
              [this](const JobProgress& progress) {
                m_stats->setText(tr("Computing... %1%").arg(int(progress.fraction() * 100)));
              });
}

// A checkpoint on another machine: the statistics are computed where the
// file is (the agent's `stats`, with progress; a cancel reaches the agent),
// the values are read a block at a time (`slice`).
void TensorView::showRemoteTensor(int index, const QString& name) {
  if (index < 0 || size_t(index) >= m_remote->rows.size()) return;
  if (index == m_tensor && (m_job.isRunning() || m_analysis)) return;
  m_tensor = index;
  m_analysis.reset();
  m_values->setTensor(nullptr);
  const TensorRow& t = m_remote->rows[size_t(index)];
  m_title->setText(name.isEmpty() ? t.name : name);
  m_subtitle->setText(
      tr("%1 %2, %3 elements, %4, on %5")
          .arg(t.dtype, t.shape, groupedNumber(t.elements), sizeText(t.bytes), m_remote->location));
  m_stats->setText(tr("Computing on the host..."));
  // The histogram and heat map are computed there too (`stats` with bins and heat cells).
  m_histogram->show();
  m_heat->show();
  clearPlots({});
  m_empty->hide();
  m_body->show();
  if (!m_job.isRunning()) emit remoteBusy(true);
  m_job.start(
      [remote = m_remote, index, options = optionsFor(m_remote->sizes[size_t(index)])](
          JobProgress& progress) { return computeRemote(remote, index, options, progress); },
      [this](JobOutcome outcome, std::optional<Result> r, const QString& error) {
        emit remoteBusy(false);
        if (outcome == JobOutcome::Cancelled || (r && !r->analysis && r->error.isEmpty())) {
          // Stopped on purpose: no error, and the tensor can be asked for again.
          m_stats->setText(tr("Stopped."));
          m_tensor = -1;
          return;
        }
        onFinished(r ? std::move(*r) : Result{m_tensor, std::nullopt, nullptr, error});
      },
      [this](const JobProgress& progress) {
        m_stats->setText(tr("Computing on the host... %1%").arg(int(progress.fraction() * 100)));
      });
}

TensorView::Result TensorView::computeRemote(const std::shared_ptr<const RemoteTensors>& remote,
                                             int tensor, const AnalysisOptions& options,
                                             JobProgress& progress) {
  Result r;
  r.tensor = tensor;
  try {
    if (remote->analyze) {
      r.analysis = remote->analyze(tensor, options, progress, &r.plotted);
    } else {
      r.analysis = TensorAnalysis{};
      r.analysis->stats = remote->stats(tensor, progress);
      r.plotted = false;
    }
  } catch (const remote::RemoteError& e) {
    r.analysis.reset();
    if (e.code() != "cancelled") r.error = fromStd(e.what());
  } catch (const std::exception& e) {
    r.analysis.reset();
    r.error = fromStd(e.what());
  }
  return r;
}

void TensorView::goToRow(int64_t row) {
  if (m_values->rowCount() == 0) return;
  const int r = m_values->showRow(row);
  const QModelIndex at = m_values->index(r, 0);
  m_valueView->scrollTo(at, QAbstractItemView::PositionAtTop);
  m_valueView->setCurrentIndex(at);
}

AnalysisOptions TensorView::optionsFor(const TensorInfo& t) const {
  return optionsFor(t.shape);
}

AnalysisOptions TensorView::optionsFor(const std::vector<int64_t>& shape) const {
  AnalysisOptions opt;
  opt.bins = kBins;
  if (shape.size() >= 2) {
    // The plot's inner area is a little smaller than the widget: close enough.
    opt.heatCols = std::clamp(m_heat->width(), kMinHeatCells, kMaxHeatCells);
    opt.heatRows = std::clamp(m_heat->height(), kMinHeatCells, kMaxHeatCells);
  }
  return opt;
}

void TensorView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  for (QCustomPlot* p : {m_histogram, m_heat}) {
    applyPalette(p, palette());
    p->replot();
  }
}

void TensorView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (m_analysis && m_analysis->heatMap.rows > 0) m_resizeTimer.start();
}

void TensorView::resampleHeatMap() {
  if (!m_file || !m_analysis || m_analysis->heatMap.rows == 0 || m_job.isRunning()) return;
  const TensorInfo& t = m_file->tensors()[size_t(m_tensor)];
  AnalysisOptions opt = optionsFor(t);
  const auto [R, C] = matrixShape(t.shape);
  const int wantRows = int(std::min<int64_t>(opt.heatRows, R)),
            wantCols = int(std::min<int64_t>(opt.heatCols, C));
  const HeatMap& h = m_analysis->heatMap;
  // Only when the cells would change by more than a quarter: a pass over the tensor is not free.
  if (std::abs(wantRows - h.rows) * 4 <= h.rows && std::abs(wantCols - h.cols) * 4 <= h.cols)
    return;
  opt.bins = 0;
  m_heatJob.start([file = m_file, tensor = m_tensor,
                   opt](JobProgress& progress) { return compute(file, tensor, opt, progress); },
                  [this](JobOutcome outcome, std::optional<Result> r, const QString&) {
                    if (outcome == JobOutcome::Done && r) onHeatFinished(*r);
                  });
}

void TensorView::onHeatFinished(const Result& r) {
  if (r.tensor != m_tensor || !r.analysis || !m_analysis || r.analysis->heatMap.rows == 0) return;
  m_analysis->heatMap = r.analysis->heatMap;
  showHeatMap(m_analysis->heatMap);
  emit heatMapResampled(r.tensor);
}

TensorView::Result TensorView::compute(const std::shared_ptr<const CheckpointFile>& file,
                                       int tensor, const AnalysisOptions& options,
                                       JobProgress& progress) {
  Result r;
  r.tensor = tensor;
  try {
    auto data = std::make_shared<const TensorData>(file->tensorData(size_t(tensor)));
    r.analysis = analyzeTensor(*data, options, [&progress](uint64_t done, uint64_t total) {
      return progress.report(done, total);
    });
    r.data = std::move(data);
  } catch (const std::exception& e) {
    // Caught once here, at the thread boundary; shown in the panel.
    r.error = fromStd(e.what());
  }
  return r;
}

void TensorView::onFinished(Result r) {
  if (r.tensor != m_tensor) return;
  if (!r.error.isEmpty()) {
    m_stats->setText(tr("<p style='color:#a00000'>Cannot read this tensor:</p><p>%1</p>")
                         .arg(r.error.toHtmlEscaped()));
    clearPlots({});
    emit statsFailed(r.tensor, r.error);
    return;
  }
  if (!r.analysis) return;  // cancelled
  m_analysis = r.analysis;
  showStats(m_analysis->stats);
  if (m_remote && !r.plotted) {
    // An agent older than the plots: the statistics only, and why.
    m_histogram->hide();
    m_heat->hide();
    clearPlots(
        tr("No histogram or heat map: the host's ckptscope-cli is too old to compute "
           "them; update it there."));
  } else {
    showHistogram(m_analysis->histogram);
  }
  if (m_remote) {
    // The values a block at a time from the host.
    const auto remote = m_remote;
    m_values->setSource(remote->sizes[size_t(r.tensor)],
                        [remote, tensor = r.tensor](uint64_t first, size_t count, double* out) {
                          return remote->slice(tensor, first, count, out);
                        });
  }
  const bool plotted = !m_remote || r.plotted;
  if (plotted && m_analysis->heatMap.rows > 0) {
    showHeatMap(m_analysis->heatMap);
  } else if (plotted) {
    m_colorMap->setVisible(false);
    m_heat->replot();
    m_heatNote->setText(tr("No heat map: a heat map needs a matrix (2 or more dimensions)."));
    m_heatNote->show();
  }
  if (!m_remote) m_values->setTensor(r.data);
  {
    const QSignalBlocker block(m_rowBox);
    m_rowBox->setRange(
        0, int(std::clamp<int64_t>(m_values->totalRows() - 1, 0, std::numeric_limits<int>::max())));
    m_rowBox->setValue(0);
  }
  m_rowTotal->setText(tr("of %1").arg(groupedNumber(uint64_t(m_values->totalRows()))));
  emit statsReady(r.tensor);
}

void TensorView::showStats(const TensorStats& s) {
  const QString dim = palette().color(QPalette::PlaceholderText).name();
  QString html = "<table cellspacing='0' cellpadding='1'>";
  auto row = [&](const QString& label, const QString& value) {
    html += QString(
                "<tr><td style='color:%1; padding-right:10px' nowrap>%2</td><td "
                "align='right'>%3</td></tr>")
                .arg(dim, label.toHtmlEscaped(), value.toHtmlEscaped());
  };
  row(tr("elements"), groupedNumber(s.count));
  row(tr("min"), statText(s.min));
  row(tr("max"), statText(s.max));
  row(tr("mean"), statText(s.mean));
  row(tr("std"), statText(s.std));
  row(tr("L2 norm"), statText(s.l2norm));
  row(tr("zeros"), groupedNumber(s.zeros));
  row(tr("NaN"), groupedNumber(s.nans));
  row(tr("+Inf"), groupedNumber(s.posInf));
  row(tr("\u2212Inf"), groupedNumber(s.negInf));
  html += "</table>";
  if (s.finite != s.count)
    html += "<p style='color:#8a5a00'>" +
            tr("over the %1 finite values").arg(groupedNumber(s.finite)).toHtmlEscaped() + "</p>";
  html += QString("<p style='color:%1'>%2</p>")
              .arg(dim, tr("std: sample (N\u22121), as torch.std").toHtmlEscaped());
  m_stats->setText(html);
}

QString TensorView::statsText() const {
  QTextDocument doc;
  doc.setHtml(m_stats->text());
  return m_title->text() + "\n" + m_subtitle->text() + "\n" + doc.toPlainText();
}

void TensorView::showHistogram(const Histogram& h) {
  m_bars->data()->clear();
  if (h.counts.empty()) {
    m_histogram->replot();
    return;
  }
  const double width = (h.hi - h.lo) / h.bins();
  QVector<double> keys, values;
  double top = 0;
  for (int i = 0; i < h.bins(); ++i) {
    keys << h.lo + (i + 0.5) * width;
    values << double(h.counts[size_t(i)]);
    top = std::max(top, values.back());
  }
  m_bars->setWidth(width);
  m_bars->setData(keys, values, true);
  // Hovering a bar: its bin's edges and count (edges as torch.histc places them).
  setHoverReadout(m_histogram, [h](double key, double) -> QString {
    if (h.counts.empty() || !(h.hi > h.lo) || key < h.lo || key > h.hi) return {};
    const int bin = std::clamp(int((key - h.lo) / (h.hi - h.lo) * h.bins()), 0, h.bins() - 1);
    return QObject::tr("[%1, %2): %3 values")
        .arg(QString::number(h.edge(bin), 'g', 6), QString::number(h.edge(bin + 1), 'g', 6))
        .arg(groupedNumber(h.counts[size_t(bin)]));
  });
  m_histogram->xAxis->setRange(h.lo, h.hi);
  m_histogram->yAxis->setRange(0, std::max(1.0, top * 1.05));
  m_histogram->replot();
}

void TensorView::showHeatMap(const HeatMap& h) {
  m_heatNote->setText(
      tr("%1 \u00d7 %2 matrix shown as %3 \u00d7 %4 cells")
          .arg(groupedNumber(uint64_t(h.sourceRows)), groupedNumber(uint64_t(h.sourceCols)))
          .arg(h.rows)
          .arg(h.cols));
  m_heatNote->show();
  m_colorMap->setVisible(true);
  // Cell centres in matrix coordinates, so the axes read rows and columns.
  const double cw = double(h.sourceCols) / h.cols, rh = double(h.sourceRows) / h.rows;
  m_colorMap->data()->setSize(h.cols, h.rows);
  m_colorMap->data()->setRange(QCPRange(cw / 2, h.sourceCols - cw / 2),
                               QCPRange(rh / 2, h.sourceRows - rh / 2));
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) {
      const double v = h.at(i, j);
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  if (!(lo <= hi)) lo = hi = 0;
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) {
      const double v = h.at(i, j);
      m_colorMap->data()->setCell(j, i, std::isfinite(v) ? v : lo);
    }
  m_colorMap->setDataRange(QCPRange(lo, hi > lo ? hi : lo + 1));
  m_heat->xAxis->setRange(0, double(h.sourceCols));
  m_heat->yAxis->setRange(0, double(h.sourceRows));
  // Hovering: which rows and columns the cell covers, and their mean |x|.
  setHoverReadout(m_heat, [h, cw, rh](double key, double value) -> QString {
    const int j = int(key / cw), i = int(value / rh);
    if (key < 0 || value < 0 || j >= h.cols || i >= h.rows) return {};
    const auto span = [](double lo, double hi) {
      const qint64 a = qint64(std::floor(lo)), b = std::max(a, qint64(std::ceil(hi)) - 1);
      return a == b ? QString::number(a) : QStringLiteral("%1–%2").arg(a).arg(b);
    };
    const double v = h.at(i, j);
    return QObject::tr("rows %1, columns %2\nmean |x| %3")
        .arg(span(i * rh, (i + 1) * rh), span(j * cw, (j + 1) * cw),
             std::isfinite(v) ? QString::number(v, 'g', 5) : QObject::tr("none (no finite value)"));
  });
  m_heat->replot();
}

}  // namespace ckpt
