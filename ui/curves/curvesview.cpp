#include "curves/curvesview.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSet>
#include <QSignalBlocker>
#include <QSlider>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <map>

#include "curves/curveaxes.h"
#include "curves/curvescsv.h"
#include "curves/runfollower.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {
namespace {

// A qualitative palette (matplotlib's tab10): distinct hues that stay
// readable as thin lines on white. Runs take them in order.
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                           QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                           QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                           QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                           QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
constexpr int kPaletteSize = int(sizeof(kPalette) / sizeof(kPalette[0]));
constexpr int kRawAlpha = 90;     // the raw curve, faint behind the smoothed one
constexpr int kReplotMs = 100;    // live updates redraw at most this often
constexpr int kSliderSteps = 99;  // smoothing 0 .. 0.99 in steps of 0.01
const char* const kMarkerLayer = "markers";

QColor runColour(size_t index) {
  return kPalette[index % kPaletteSize];
}

QColor faint(QColor c) {
  c.setAlpha(kRawAlpha);
  return c;
}

QString valueText(double v) {
  return QString::number(v, 'g', 5);
}

}  // namespace

CurvesView::CurvesView(QWidget* parent) : QWidget(parent) {
  buildControls();
  setUpPlot();

  connect(&m_loader, &QFutureWatcherBase::resultsReadyAt, this,
          [this](int, int) { takeLoadedRuns(); });
  connect(&m_loader, &QFutureWatcherBase::finished, this, &CurvesView::onLoadFinished);
  m_follower = new RunFollower(this);
  connect(m_follower, &RunFollower::changed, this, &CurvesView::readLiveUpdates);
  m_replotTimer.setSingleShot(true);
  m_replotTimer.setInterval(kReplotMs);
  connect(&m_replotTimer, &QTimer::timeout, this, [this] {
    if (m_followData) fitToData();
    m_plot->replot();
  });
  clear(tr("Open a directory of runs to see their curves"));
}

CurvesView::~CurvesView() {
  // A run being read finishes (collectRunMetrics cannot be interrupted); the
  // ones after it are never started.
  m_loader.cancel();
  m_loader.waitForFinished();
}

void CurvesView::buildControls() {
  m_metricBox = new QComboBox(this);
  m_metricBox->setObjectName("metric");
  m_metricBox->setMinimumContentsLength(10);
  m_metricBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  connect(m_metricBox, &QComboBox::activated, this,
          [this](int i) { setMetric(m_metricBox->itemText(i)); });

  m_smoothSlider = new QSlider(Qt::Horizontal, this);
  m_smoothSlider->setObjectName("smoothing");
  m_smoothSlider->setRange(0, kSliderSteps);
  m_smoothSlider->setValue(int(std::lround(m_smoothing * 100)));
  m_smoothSlider->setMinimumWidth(90);
  m_smoothSlider->setToolTip(
      tr("Exponential moving average weight, debiased as TensorBoard does (0: raw values)"));
  m_smoothLabel = new QLabel(this);
  m_smoothLabel->setMinimumWidth(m_smoothLabel->fontMetrics().horizontalAdvance("0.00  "));
  connect(m_smoothSlider, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });

  m_axisBox = new QComboBox(this);
  m_axisBox->setObjectName("xaxis");
  m_axisBox->addItem(tr("Step"), int(CurveAxis::Step));
  m_axisBox->addItem(tr("Wall time"), int(CurveAxis::WallTime));
  m_axisBox->addItem(tr("Tokens"), int(CurveAxis::Tokens));
  connect(m_axisBox, &QComboBox::activated, this,
          [this](int i) { setXAxis(CurveAxis(m_axisBox->itemData(i).toInt())); });

  m_logBox = new QCheckBox(tr("Log scale"), this);
  m_logBox->setObjectName("logscale");
  connect(m_logBox, &QCheckBox::toggled, this, &CurvesView::setLogScale);

  auto* fit = new QPushButton(tr("Fit"), this);
  fit->setToolTip(tr("Fit the axes to the data and follow new points (after zooming or panning)"));
  connect(fit, &QPushButton::clicked, this, [this] {
    fitToData();
    m_plot->replot();
  });
  // One button for the three formats keeps the row narrow enough to leave
  // the checkpoint list its width.
  // A push button with a menu: it makes room for its arrow (a tool button's
  // arrow was drawn over its text).
  auto* exportButton = new QPushButton(tr("Export"), this);
  exportButton->setObjectName("export");
  auto* exportMenu = new QMenu(exportButton);
  auto addExport = [this, exportMenu](const QString& label, const QString& format) {
    QAction* a = exportMenu->addAction(label);
    connect(a, &QAction::triggered, this, [this, format] { chooseExport(format); });
  };
  addExport(tr("Chart as PNG image..."), "png");
  addExport(tr("Chart as PDF (vector)..."), "pdf");
  addExport(tr("Shown metric as CSV..."), "csv");
  exportButton->setMenu(exportMenu);

  // Two rows: narrow enough to leave the experiments browser its width.
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Metric"), this));
  controls->addWidget(m_metricBox);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("X axis"), this));
  controls->addWidget(m_axisBox);
  controls->addSpacing(8);
  controls->addWidget(m_logBox);
  controls->addStretch(1);
  auto* smoothing = new QHBoxLayout;
  smoothing->addWidget(new QLabel(tr("Smoothing"), this));
  smoothing->addWidget(m_smoothSlider, 1);
  smoothing->addWidget(m_smoothLabel);
  smoothing->addSpacing(8);
  smoothing->addWidget(fit);
  smoothing->addWidget(exportButton);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName("curves");
  m_plot->setMinimumSize(320, 200);
  m_status = new QLabel(this);
  m_status->setObjectName("status");
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(controls);
  layout->addLayout(smoothing);
  layout->addWidget(m_plot, 1);
  layout->addWidget(m_status);
  m_smoothLabel->setText(QString::number(m_smoothing, 'f', 2));
}

void CurvesView::setUpPlot() {
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->setNoAntialiasingOnDrag(true);
  m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeScatters);
  m_plot->addLayer(kMarkerLayer, m_plot->layer("main"), QCustomPlot::limAbove);

  // The legend to the right of the chart, so it never hides a curve.
  QCPLegend* legend = m_plot->legend;
  legend->setVisible(true);
  m_plot->axisRect()->insetLayout()->take(legend);
  auto* side = new QCPLayoutGrid;
  m_plot->plotLayout()->addElement(0, 1, side);
  m_plot->plotLayout()->setColumnStretchFactor(1, 0.001);
  side->addElement(0, 0, legend);
  side->addElement(1, 0, new QCPLayoutElement(m_plot));  // takes the height below the legend
  side->setRowStretchFactor(0, 0.001);
  side->setMargins(QMargins(0, 10, 8, 0));
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setIconSize(22, 10);
  legend->setLayer("legend");

  m_cursor = new QCPItemStraightLine(m_plot);
  m_cursor->setLayer("overlay");
  m_cursor->setSelectable(false);
  m_cursor->setVisible(false);

  m_message = new QCPItemText(m_plot);
  m_message->setLayer("overlay");
  m_message->position->setType(QCPItemPosition::ptAxisRectRatio);
  m_message->position->setCoords(0.5, 0.5);
  m_message->setSelectable(false);
  QFont font = m_message->font();
  font.setPointSizeF(font.pointSizeF() * 1.2);
  m_message->setFont(font);

  for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) axis->grid()->setSubGridVisible(false);
  applyColours();
  applyAxisTypes();

  // Marker clicks are found by distance in pixels: QCustomPlot gives a
  // click to the topmost item under the mouse, which is the hover cursor
  // line (always under the mouse), so plottableClick never reached a marker.
  connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) { m_pressPos = event->position(); });
  connect(m_plot, &QCustomPlot::mouseRelease, this, &CurvesView::onPlotRelease);
  connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] { placeBareMarkers(); });
  connect(m_plot, &QCustomPlot::legendClick, this, &CurvesView::onLegendClick);
  connect(m_plot, &QCustomPlot::mouseMove, this, &CurvesView::onMouseMove);
  // Once the user zooms or pans, new points no longer move the axes (Fit restores it).
  connect(m_plot, &QCustomPlot::mouseWheel, this, [this] { m_followData = false; });
  connect(m_plot, &QCustomPlot::mousePress, this, [this] { m_followData = false; });
  m_plot->setMouseTracking(true);  // the tooltip follows the mouse without a button held
  m_plot->installEventFilter(this);
}

void CurvesView::clear(const QString& message) {
  m_loader.cancel();
  m_loadPending = false;
  m_follower->stop();
  m_runs.clear();
  m_plots.clear();
  m_plot->clearGraphs();
  updateMetricChoices();
  showPlotMessage(message);
  updateStatus();
  m_plot->replot();
}

void CurvesView::setRuns(std::vector<RunEntry> runs, std::vector<std::string> extraLogs) {
  clear(runs.empty()
            ? tr("No runs")
            : tr("Reading the metrics of %1...").arg(countText(runs.size(), "run", "runs")));
  m_loadPending = true;
  m_expectedRuns = runs.size();
  m_followData = true;
  m_loader.setFuture(QtConcurrent::run([runs = std::move(runs), logs = std::move(extraLogs)](
                                           QPromise<std::shared_ptr<CurveRun>>& promise) {
    for (const RunEntry& run : runs) {
      if (promise.isCanceled()) return;
      promise.addResult(std::make_shared<CurveRun>(loadCurveRun(run, logs)));
    }
  }));
  updateStatus();
}

void CurvesView::takeLoadedRuns() {
  // Results are taken in order, as many as are there; a stale notification
  // from a future that setRuns() replaced takes nothing it should not.
  const QFuture<std::shared_ptr<CurveRun>> future = m_loader.future();
  const size_t before = m_runs.size();
  while (m_runs.size() < m_expectedRuns && future.isResultReadyAt(int(m_runs.size()))) {
    m_runs.push_back(std::move(*future.resultAt(int(m_runs.size()))));
    m_plots.emplace_back();
  }
  if (m_runs.size() == before) return;
  if (updateMetricChoices()) {
    rebuildGraphs();
  } else {
    for (size_t i = before; i < m_runs.size(); ++i) fillRun(i);
  }
  updateStatus();
  scheduleReplot();
}

void CurvesView::onLoadFinished() {
  if (!m_loadPending || !m_loader.future().isFinished() || m_loader.future().isCanceled()) return;
  takeLoadedRuns();
  m_loadPending = false;
  showPlotMessage(
      m_runs.empty() ? tr("No runs")
      : metrics().empty()
          ? tr("No metrics found: no metrics.jsonl, training log or checkpoint with a loss")
          : QString());
  m_follower->follow(m_runs);
  updateStatus();
  m_replotTimer.stop();
  fitToData();
  m_plot->replot();
  emit curvesReady();
}

QStringList CurvesView::metrics() const {
  QSet<QString> names;
  for (const CurveRun& run : m_runs)
    for (const auto& [name, series] : run.series)
      if (!series.points.empty()) names.insert(fromStd(name));
  QStringList sorted(names.begin(), names.end());
  sorted.sort();
  return sorted;
}

bool CurvesView::updateMetricChoices() {
  const QStringList names = metrics();
  QStringList shown;
  for (int i = 0; i < m_metricBox->count(); ++i) shown << m_metricBox->itemText(i);
  if (shown != names) {
    const QSignalBlocker block(m_metricBox);
    m_metricBox->clear();
    m_metricBox->addItems(names);
  }
  // "loss" unless the user chose another metric that is still there.
  QString wanted = m_metric;
  if (names.isEmpty())
    wanted = m_metricChosen ? m_metric : QString();
  else if (!m_metricChosen || !names.contains(wanted))
    wanted = names.contains("loss") ? QStringLiteral("loss") : names.first();
  {
    const QSignalBlocker block(m_metricBox);
    m_metricBox->setCurrentIndex(names.indexOf(wanted));
  }
  if (wanted == m_metric) return false;
  m_metric = wanted;
  return true;
}

void CurvesView::setMetric(const QString& metric) {
  m_metricChosen = true;
  if (metric == m_metric) return;
  m_metric = metric;
  updateMetricChoices();
  m_followData = true;
  rebuildGraphs();
  fitToData();
  m_plot->replot();
}

void CurvesView::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, kSliderSteps / 100.0);
  {
    const QSignalBlocker block(m_smoothSlider);
    m_smoothSlider->setValue(int(std::lround(weight * 100)));
  }
  m_smoothLabel->setText(QString::number(weight, 'f', 2));
  if (weight == m_smoothing) return;
  m_smoothing = weight;
  // Only the smoothed lines and the markers on them change; the axes stay.
  for (size_t i = 0; i < m_runs.size(); ++i) fillRun(i);
  m_plot->replot();
}

void CurvesView::setXAxis(CurveAxis axis) {
  {
    const QSignalBlocker block(m_axisBox);
    m_axisBox->setCurrentIndex(m_axisBox->findData(int(axis)));
  }
  if (axis == m_axis) return;
  m_axis = axis;
  applyAxisTypes();
  rebuildGraphs();
  fitToData();
  m_plot->replot();
}

void CurvesView::setLogScale(bool on) {
  {
    const QSignalBlocker block(m_logBox);
    m_logBox->setChecked(on);
  }
  if (on == m_logY) return;
  m_logY = on;
  applyAxisTypes();
  updateStatus();
  fitToData();
  m_plot->replot();
}

void CurvesView::applyAxisTypes() {
  setXTicker(m_plot->xAxis, m_axis);
  m_plot->xAxis->setLabel(axisLabel(m_axis));
  setYScale(m_plot->yAxis, m_logY);
  m_plot->yAxis->setLabel(m_metric);
}

void CurvesView::setRunVisible(const QString& run, bool visible) {
  const int i = runIndex(run);
  if (i < 0) return;
  RunPlot& rp = m_plots[size_t(i)];
  rp.visible = visible;
  for (QCPGraph* g : {rp.raw, rp.smoothed, rp.markers})
    if (g) g->setVisible(visible);
  if (rp.raw && effectiveSmoothing() == 0) rp.raw->setVisible(false);
  if (rp.bare) rp.bare->setVisible(visible);
  if (rp.smoothed)
    if (QCPPlottableLegendItem* item = m_plot->legend->itemWithPlottable(rp.smoothed))
      item->setTextColor(visible ? palette().color(QPalette::Text) : paletteMix(palette(), 0.4));
  m_plot->replot();
}

int CurvesView::runIndex(const QString& run) const {
  for (size_t i = 0; i < m_runs.size(); ++i)
    if (m_runs[i].name == run) return int(i);
  return -1;
}

QCPGraph* CurvesView::rawGraph(const QString& run) const {
  const int i = runIndex(run);
  return i < 0 ? nullptr : m_plots[size_t(i)].raw;
}

QCPGraph* CurvesView::smoothedGraph(const QString& run) const {
  const int i = runIndex(run);
  return i < 0 ? nullptr : m_plots[size_t(i)].smoothed;
}

QCPGraph* CurvesView::markerGraph(const QString& run) const {
  const int i = runIndex(run);
  return i < 0 ? nullptr : m_plots[size_t(i)].markers;
}

QCPGraph* CurvesView::bareMarkerGraph(const QString& run) const {
  const int i = runIndex(run);
  return i < 0 ? nullptr : m_plots[size_t(i)].bare;
}

QString CurvesView::markerFile(const QString& run, int index) const {
  const int i = runIndex(run);
  if (i < 0 || index < 0 || size_t(index) >= m_plots[size_t(i)].markerFiles.size()) return {};
  return m_plots[size_t(i)].markerFiles[size_t(index)];
}

void CurvesView::smoothAll(RunPlot& rp, const MetricSeries& series) const {
  rp.ema = EmaSmoother(effectiveSmoothing());
  rp.smoothedValues.clear();
  rp.smoothedValues.reserve(series.points.size());
  for (const MetricPoint& p : series.points) rp.smoothedValues.push_back(rp.ema.next(p.value));
}

void CurvesView::rebuildGraphs() {
  // A schedule is drawn as it is: the slider says so rather than doing nothing.
  const bool schedule = isScheduleMetric(pathToStd(m_metric));
  m_smoothSlider->setEnabled(!schedule);
  m_smoothLabel->setText(schedule ? tr("off for %1").arg(m_metric) : QString::number(m_smoothing, 'f', 2));
  m_plot->clearGraphs();
  for (RunPlot& rp : m_plots) {
    const bool visible = rp.visible;  // hidden runs stay hidden
    rp = RunPlot{};
    rp.visible = visible;
  }
  for (size_t i = 0; i < m_runs.size(); ++i) fillRun(i);
  applyAxisTypes();
  updateStatus();
}

void CurvesView::fillRun(size_t index) {
  const CurveRun& run = m_runs[index];
  RunPlot& rp = m_plots[index];
  const MetricSeries* series = run.find(pathToStd(m_metric));
  if (!series || series->points.empty()) return;
  if (!rp.smoothed) {
    const QColor colour = runColour(index);
    rp.raw = m_plot->addGraph();
    rp.raw->setName(run.name + tr(" (raw)"));
    rp.raw->setPen(QPen(faint(colour), 1));
    rp.raw->removeFromLegend();
    rp.smoothed = m_plot->addGraph();
    rp.smoothed->setName(run.name);
    rp.smoothed->setPen(QPen(colour, 2));
    rp.markers = m_plot->addGraph();
    rp.markers->setName(run.name + tr(" (checkpoints)"));
    rp.markers->setLayer(kMarkerLayer);
    rp.markers->setLineStyle(QCPGraph::lsNone);
    rp.markers->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(colour, 2), palette().brush(QPalette::Base), 9));
    rp.markers->removeFromLegend();
    rp.bare = m_plot->addGraph();
    rp.bare->setName(run.name + tr(" (checkpoints without a value)"));
    rp.bare->setLayer(kMarkerLayer);
    rp.bare->setLineStyle(QCPGraph::lsNone);
    rp.bare->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(faint(colour), 1.5), Qt::NoBrush, 8));
    rp.bare->removeFromLegend();
    rp.bare->setSelectable(QCP::stNone);
    rp.bare->setVisible(rp.visible);
    for (QCPGraph* g : {rp.raw, rp.smoothed}) {
      g->setAdaptiveSampling(true);
      g->setSelectable(QCP::stNone);  // clicks go to the markers above
    }
    rp.markers->setSelectable(QCP::stNone);  // clicks: markerFileAt
    for (QCPGraph* g : {rp.raw, rp.smoothed, rp.markers}) g->setVisible(rp.visible);
    if (effectiveSmoothing() == 0) rp.raw->setVisible(false);  // it would coincide with the smoothed one
    if (!rp.visible)
      if (QCPPlottableLegendItem* item = m_plot->legend->itemWithPlottable(rp.smoothed))
        item->setTextColor(paletteMix(palette(), 0.4));
  }
  rp.raw->setVisible(rp.visible && effectiveSmoothing() > 0);

  smoothAll(rp, *series);
  const std::vector<double>& smoothed = rp.smoothedValues;
  const auto& points = series->points;
  std::vector<size_t> order;
  std::vector<double> xs(points.size());
  rp.skipped = 0;
  for (size_t j = 0; j < points.size(); ++j) {
    if (const auto x = run.x(points[j], m_axis)) {
      xs[j] = *x;
      order.push_back(j);
    } else {
      ++rp.skipped;
    }
  }
  // Steps are sorted already; wall times and token counts nearly always are.
  if (!std::is_sorted(order.begin(), order.end(),
                      [&](size_t a, size_t b) { return xs[a] < xs[b]; }))
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return xs[a] < xs[b]; });
  QVector<double> keys, raw, smooth;
  keys.reserve(qsizetype(order.size()));
  raw.reserve(qsizetype(order.size()));
  smooth.reserve(qsizetype(order.size()));
  rp.steps.clear();
  rp.steps.reserve(order.size());
  for (size_t j : order) {
    keys << xs[j];
    raw << points[j].value;
    smooth << smoothed[j];
    rp.steps.push_back(points[j].step);
  }
  rp.raw->setData(keys, raw, /*alreadySorted=*/true);
  rp.smoothed->setData(keys, smooth, /*alreadySorted=*/true);
  // A run with nothing on this axis leaves the legend (the status line says why).
  if (keys.isEmpty())
    rp.smoothed->removeFromLegend();
  else if (!m_plot->legend->hasItemWithPlottable(rp.smoothed))
    rp.smoothed->addToLegend();
  fillMarkers(index);
}

double CurvesView::effectiveSmoothing() const {
  return isScheduleMetric(pathToStd(m_metric)) ? 0.0 : m_smoothing;
}

void CurvesView::fillMarkers(size_t index) {
  const CurveRun& run = m_runs[index];
  RunPlot& rp = m_plots[index];
  const std::string metric = pathToStd(m_metric);
  const MetricSeries* series = run.find(metric);
  if (!rp.markers || !series) return;
  const auto& points = series->points;
  struct Marker {
    double x, y;
    QString file;
    int64_t step;
    bool recorded;
  };
  std::vector<Marker> markers, bare;
  for (int64_t step : run.checkpointSteps) {
    const auto pos = std::lower_bound(points.begin(), points.end(), step,
                                      [](const MetricPoint& p, int64_t s) { return p.step < s; });
    const size_t j = size_t(pos - points.begin());
    const bool logged = pos != points.end() && pos->step == step;
    // Where the step sits on the x axis: a logged point's own coordinate,
    // between two logged points on the line joining them, or the step itself.
    std::optional<double> x;
    if (logged) {
      x = run.x(*pos, m_axis);
    } else if (m_axis == CurveAxis::Step) {
      x = double(step);
    } else if (pos != points.begin() && pos != points.end()) {
      const auto xa = run.x(points[j - 1], m_axis), xb = run.x(points[j], m_axis);
      const double t = double(step - points[j - 1].step) / double(points[j].step - points[j - 1].step);
      if (xa && xb) x = *xa + t * (*xb - *xa);
    }
    if (!x) continue;
    const auto fileIt = run.checkpointFiles.find(step);
    const QString file = fileIt == run.checkpointFiles.end() ? QString() : fileIt->second;
    const std::optional<double> recorded = run.recordedValue(step, metric);
    std::optional<double> y = recorded;
    if (!y && logged && std::isfinite(pos->value)) y = pos->value;
    if (y && std::isfinite(*y) && (!m_logY || *y > 0))
      markers.push_back({*x, *y, file, step, recorded.has_value()});
    else
      bare.push_back({*x, 0, file, step, false});
  }
  auto byX = [](const Marker& a, const Marker& b) { return a.x < b.x; };
  std::stable_sort(markers.begin(), markers.end(), byX);
  std::stable_sort(bare.begin(), bare.end(), byX);
  QVector<double> keys, values;
  rp.markerFiles.clear();
  rp.markerSteps.clear();
  rp.markerRecorded.clear();
  for (const Marker& m : markers) {
    keys << m.x;
    values << m.y;
    rp.markerFiles.push_back(m.file);
    rp.markerSteps.push_back(m.step);
    rp.markerRecorded.push_back(m.recorded);
  }
  rp.markers->setData(keys, values, /*alreadySorted=*/true);
  keys.clear();
  values.clear();
  rp.bareFiles.clear();
  rp.bareSteps.clear();
  for (const Marker& m : bare) {
    keys << m.x;
    values << 0;
    rp.bareFiles.push_back(m.file);
    rp.bareSteps.push_back(m.step);
  }
  rp.bare->setData(keys, values, /*alreadySorted=*/true);
  placeBareMarkers();
}

void CurvesView::placeBareMarkers() {
  // On the x axis whatever the zoom: their height means nothing.
  const double y = m_plot->yAxis->range().lower;
  for (RunPlot& rp : m_plots) {
    if (!rp.bare || rp.bare->data()->isEmpty()) continue;
    for (auto it = rp.bare->data()->begin(); it != rp.bare->data()->end(); ++it) it->value = y;
  }
}

void CurvesView::appendPoints(size_t index, size_t firstNew) {
  const CurveRun& run = m_runs[index];
  RunPlot& rp = m_plots[index];
  const MetricSeries* series = run.find(pathToStd(m_metric));
  if (!series) return;
  if (!rp.smoothed) {
    fillRun(index);  // the run's first points of this metric
    return;
  }
  const auto& points = series->points;
  // The EMA of a new point depends on the ones before it only: the old
  // smoothed values stand and only the new points are smoothed (a million
  // points again per update would stall the window).
  if (rp.smoothedValues.size() != firstNew) {
    fillRun(index);
    return;
  }
  for (size_t j = firstNew; j < points.size(); ++j) rp.smoothedValues.push_back(rp.ema.next(points[j].value));
  const std::vector<double>& smoothed = rp.smoothedValues;
  QVector<double> keys, raw, smooth;
  std::vector<int64_t> steps;
  size_t skipped = 0;
  double last =
      rp.smoothed->data()->isEmpty() ? -qInf() : (rp.smoothed->data()->constEnd() - 1)->key;
  for (size_t j = firstNew; j < points.size(); ++j) {
    const auto x = run.x(points[j], m_axis);
    if (!x) {
      ++skipped;
      continue;
    }
    if (*x < last) {
      fillRun(index);  // time or tokens went backwards: sort the whole curve again
      return;
    }
    last = *x;
    keys << *x;
    raw << points[j].value;
    smooth << smoothed[j];
    steps.push_back(points[j].step);
  }
  rp.skipped += skipped;
  rp.raw->addData(keys, raw, /*alreadySorted=*/true);
  rp.smoothed->addData(keys, smooth, /*alreadySorted=*/true);
  rp.steps.insert(rp.steps.end(), steps.begin(), steps.end());
  fillMarkers(index);  // markers of steps just logged get their values
}

void CurvesView::fitToData() {
  m_followData = true;
  bool any = false;
  for (const RunPlot& rp : m_plots)
    if (rp.visible && rp.smoothed && !rp.smoothed->data()->isEmpty()) any = true;
  if (!any) {
    m_plot->xAxis->setRange(0, 1);
    m_plot->yAxis->setRange(m_logY ? QCPRange(0.1, 10) : QCPRange(0, 1));
    return;
  }
  // The hollow markers on the x axis follow the range; they do not set it.
  std::vector<QCPGraph*> hidden;
  for (const RunPlot& rp : m_plots)
    if (rp.bare && rp.bare->visible()) {
      rp.bare->setVisible(false);
      hidden.push_back(rp.bare);
    }
  m_plot->rescaleAxes(/*onlyVisiblePlottables=*/true);
  for (QCPGraph* g : hidden) g->setVisible(true);
  // One point (or one step): a range around it, not QCustomPlot's unit
  // width that put ticks at 99.6 .. 100.4 around step 100.
  const QCPRange x = m_plot->xAxis->range();
  if (x.size() <= 1 && m_axis != CurveAxis::WallTime) {
    const double half = std::max(1.0, std::abs(x.center()) * 0.05);
    m_plot->xAxis->setRange(std::max(0.0, x.center() - half), x.center() + half);
  }
  padRanges(m_plot->xAxis, m_plot->yAxis, m_logY);
  placeBareMarkers();
}

void CurvesView::scheduleReplot() {
  if (!m_replotTimer.isActive()) m_replotTimer.start();
}

void CurvesView::showPlotMessage(const QString& text) {
  m_message->setText(text);
  m_message->setVisible(!text.isEmpty());
}

void CurvesView::updateStatus() {
  QStringList parts;
  if (m_loadPending)
    parts << tr("Reading metrics: %1 of %2 runs").arg(m_runs.size()).arg(m_expectedRuns);
  else if (m_runs.empty())
    parts << tr("No runs");
  const std::string metric = pathToStd(m_metric);
  size_t withMetric = 0, skipped = 0, nonPositive = 0, undrawn = 0;
  std::map<MetricSource, size_t> sources;
  for (size_t i = 0; i < m_runs.size(); ++i) {
    const MetricSeries* s = m_runs[i].find(metric);
    if (!s || s->points.empty()) continue;
    skipped += m_plots[i].skipped;
    if (!m_plots[i].smoothed || m_plots[i].smoothed->data()->isEmpty()) {
      ++undrawn;  // none of its points has the x axis' coordinate
      continue;
    }
    ++withMetric;
    ++sources[s->source];
    if (m_logY)
      for (const MetricPoint& p : s->points)
        if (!(p.value > 0)) ++nonPositive;
  }
  if (!m_runs.empty() && !m_metric.isEmpty()) {
    // Where the curves come from: a run without logs has only its checkpoints' values.
    QStringList from;
    for (const auto& [source, n] : sources)
      from << tr("%1 from %2")
                  .arg(n)
                  .arg(source == MetricSource::MetricsJsonl ? tr("metrics.jsonl")
                       : source == MetricSource::ConsoleLog ? tr("logs")
                                                            : tr("checkpoints"));
    parts << tr("%1 of %2 with %3")
                     .arg(withMetric)
                     .arg(countText(m_runs.size(), "run", "runs"), m_metric) +
                 (from.isEmpty() ? QString() : " (" + from.join(", ") + ")");
  }
  if (skipped) {
    const QString what = m_axis == CurveAxis::WallTime ? tr("wall time") : tr("token count");
    parts << tr("%1 without a %2 not drawn").arg(countText(skipped, "point", "points"), what);
    if (undrawn) parts << tr("%1 with none not drawn").arg(countText(undrawn, "run", "runs"));
  }
  if (nonPositive)
    parts
        << tr("%1 at or below 0 off the log scale").arg(countText(nonPositive, "value", "values"));
  QStringList problems;
  for (const CurveRun& run : m_runs) problems << run.problems;
  if (!problems.isEmpty()) {
    parts << tr("%1 (first: %2)")
                 .arg(countText(size_t(problems.size()), "problem", "problems"), problems.first());
    m_status->setToolTip(problems.join('\n'));
  } else {
    m_status->setToolTip({});
  }
  m_status->setText(parts.join(QStringLiteral(" · ")));
}

QString CurvesView::statusText() const {
  return m_status->text();
}

QString CurvesView::valuesAt(double key) const {
  QStringList lines;
  bool header = false;
  for (size_t i = 0; i < m_runs.size(); ++i) {
    const RunPlot& rp = m_plots[i];
    if (!rp.visible || !rp.smoothed || rp.smoothed->data()->isEmpty()) continue;
    const auto data = rp.smoothed->data();
    auto it = data->findBegin(key, /*expandedRange=*/false);
    if (it == data->constEnd() || (it != data->constBegin() && key - (it - 1)->key < it->key - key))
      --it;
    const int j = int(it - data->constBegin());
    if (!header) {
      lines << tr("%1 %2").arg(axisLabel(m_axis), axisValueText(m_axis, key));
      header = true;
    }
    QString line = tr("%1: %2").arg(m_runs[i].name, valueText(it->value));
    if (const auto note = m_runs[i].restartNotes.find(pathToStd(m_metric)); note != m_runs[i].restartNotes.end())
      line += QStringLiteral(" (%1)").arg(note->second);
    if (effectiveSmoothing() > 0) line += tr(" (raw %1)").arg(valueText(rp.raw->data()->at(j)->value));
    line += tr(" at step %1").arg(rp.steps[size_t(j)]);
    lines << line;
  }
  return lines.join('\n');
}

void CurvesView::onMouseMove(QMouseEvent* event) {
  const QPointF pos = event->position();
  const bool inside =
      m_plot->axisRect()->rect().contains(pos.toPoint()) && !(event->buttons() & Qt::LeftButton);
  QString marker;
  if (inside) (void)markerFileAt(pos, &marker);
  const QString text = !inside ? QString() : !marker.isEmpty() ? marker : valuesAt(m_plot->xAxis->pixelToCoord(pos.x()));
  if (text.isEmpty()) {
    QToolTip::hideText();
    if (m_cursor->visible()) {
      m_cursor->setVisible(false);
      m_plot->layer("overlay")->replot();
    }
    return;
  }
  const double key = m_plot->xAxis->pixelToCoord(pos.x());
  m_cursor->point1->setCoords(key, 0);
  m_cursor->point2->setCoords(key, 1);
  m_cursor->setVisible(true);
  m_plot->layer("overlay")->replot();
  QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

void CurvesView::applyColours() {
  const QPalette& pal = palette();
  applyPalette(m_plot, pal);
  QColor cursor = pal.color(QPalette::Text);
  cursor.setAlpha(90);
  m_cursor->setPen(QPen(cursor, 1, Qt::DashLine));
  m_message->setColor(paletteMix(pal, 0.6));
  for (const RunPlot& rp : m_plots) {
    if (rp.markers) {
      QCPScatterStyle style = rp.markers->scatterStyle();
      style.setBrush(pal.brush(QPalette::Base));
      rp.markers->setScatterStyle(style);
    }
    if (rp.smoothed && !rp.visible)
      if (QCPPlottableLegendItem* item = m_plot->legend->itemWithPlottable(rp.smoothed))
        item->setTextColor(paletteMix(pal, 0.4));
  }
}

void CurvesView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_plot) {
    applyColours();
    m_plot->replot();
  }
}

bool CurvesView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_plot && event->type() == QEvent::Leave && m_cursor->visible()) {
    m_cursor->setVisible(false);
    m_plot->layer("overlay")->replot();
  }
  return QWidget::eventFilter(watched, event);
}

QString CurvesView::markerFileAt(const QPointF& pos, QString* description) const {
  constexpr double kHitPixels = 8;
  double best = kHitPixels * kHitPixels;
  QString file;
  for (size_t i = 0; i < m_plots.size(); ++i) {
    const RunPlot& rp = m_plots[i];
    if (!rp.visible) continue;
    for (QCPGraph* g : {rp.markers, rp.bare}) {
      if (!g || !g->visible()) continue;
      int k = 0;
      for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it, ++k) {
        const QPointF p = g->coordsToPixels(it->key, it->value);
        const double d2 = (p.x() - pos.x()) * (p.x() - pos.x()) + (p.y() - pos.y()) * (p.y() - pos.y());
        if (d2 > best) continue;
        const bool valued = g == rp.markers;
        const QString f = valued ? rp.markerFiles[size_t(k)] : rp.bareFiles[size_t(k)];
        if (f.isEmpty()) continue;
        best = d2;
        file = f;
        if (description) {
          const int64_t step = valued ? rp.markerSteps[size_t(k)] : rp.bareSteps[size_t(k)];
          QString what;
          if (!valued)
            what = tr("no recorded %1").arg(m_metric);
          else if (rp.markerRecorded[size_t(k)])
            what = tr("%1 %2 (recorded in the checkpoint)").arg(m_metric, valueText(it->value));
          else
            what = tr("%1 %2 (logged at its step)").arg(m_metric, valueText(it->value));
          *description = tr("%1: %2\nstep %3 · %4\nclick to inspect")
                             .arg(m_runs[i].name, QFileInfo(f).fileName())
                             .arg(step)
                             .arg(what);
        }
      }
    }
  }
  return file;
}

void CurvesView::onPlotRelease(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  if ((event->position() - m_pressPos).manhattanLength() > 4) return;  // a drag, not a click
  const QString file = markerFileAt(event->position());
  if (!file.isEmpty()) emit checkpointActivated(file);
}

void CurvesView::onLegendClick(QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
  auto* entry = qobject_cast<QCPPlottableLegendItem*>(item);
  if (!entry) return;
  for (size_t i = 0; i < m_plots.size(); ++i)
    if (m_plots[i].smoothed == entry->plottable())
      setRunVisible(m_runs[i].name, !m_plots[i].visible);
}

void CurvesView::readLiveUpdates() {
  if (m_loadPending) return;
  const auto changes = m_follower->readNew(m_runs);
  bool any = false;
  for (size_t i = 0; i < changes.size(); ++i) {
    for (const auto& [metric, change] : changes[i]) {
      any = true;
      if (fromStd(metric) != m_metric) continue;
      if (change.rewritten)
        fillRun(i);  // rare: a resumed run rewrote steps, or a preferred source appeared
      else
        appendPoints(i, change.firstNew);
    }
  }
  if (!any) return;
  if (updateMetricChoices()) rebuildGraphs();  // the first metric of a run that had none
  if (!metrics().isEmpty()) showPlotMessage({});
  updateStatus();
  scheduleReplot();
}

bool CurvesView::exportCsv(const QString& fileName, QString* error) const {
  return writeCurvesCsv(fileName, m_runs, pathToStd(m_metric), effectiveSmoothing(), error);
}

void CurvesView::setPollInterval(int ms) {
  m_follower->setPollInterval(ms);
}

bool CurvesView::exportPng(const QString& fileName, QString* error) {
  if (m_plot->savePng(fileName)) return true;
  if (error) *error = tr("cannot write %1").arg(fileName);
  return false;
}

bool CurvesView::exportPdf(const QString& fileName, QString* error) {
  if (m_plot->savePdf(fileName)) return true;
  if (error) *error = tr("cannot write %1").arg(fileName);
  return false;
}

void CurvesView::chooseExport(const QString& format) {
  const QString filter = format == "png"   ? tr("PNG images (*.png)")
                         : format == "pdf" ? tr("PDF documents (*.pdf)")
                                           : tr("CSV files (*.csv)");
  const QString base = m_metric.isEmpty() ? QStringLiteral("curves") : m_metric;
  const QString suggested =
      QDir(m_exportDir.isEmpty() ? QDir::homePath() : m_exportDir).filePath(base + '.' + format);
  QString fileName = QFileDialog::getSaveFileName(this, tr("Export curves"), suggested, filter);
  if (fileName.isEmpty()) return;
  if (QFileInfo(fileName).suffix().isEmpty()) fileName += '.' + format;
  m_exportDir = QFileInfo(fileName).absolutePath();
  QString error;
  const bool ok = format == "png"   ? exportPng(fileName, &error)
                  : format == "pdf" ? exportPdf(fileName, &error)
                                    : exportCsv(fileName, &error);
  if (!ok) QMessageBox::warning(this, tr("Export curves"), error);
}

}  // namespace ckpt
