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
#include <QRegularExpression>
#include <QSet>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QToolButton>
#include <QToolTip>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentMap>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <map>

#include "ckpt/index/hparams.h"
#include "curves/curveaxes.h"
#include "curves/curvedrawing.h"
#include "curves/curvescsv.h"
#include "curves/curvetrace.h"
#include "curves/runfollower.h"
#include "curves/runstable.h"
#include "plotstyle.h"
#include "textformat.h"
#include "workpool.h"

namespace ckpt {
namespace {

constexpr int kReplotMs = 100;  // live updates redraw at most this often

// The metric the chart opens on: the training loss under the name its
// writer gives it ("loss"; Lightning's "train_loss", TensorBoard's and
// W&B's "train/loss", "loss/train", ...), then any other loss that is not a
// validation one, then any loss, then the first name. The alphabetical first
// of another trainer's names is usually "epoch".
QString defaultMetric(const QStringList& names) {
  static const QRegularExpression separators(QStringLiteral("[/._\\-]"));
  int best = 4;
  QString chosen = names.isEmpty() ? QString() : names.first();
  for (const QString& name : names) {
    const QString lower = name.toLower();
    const QStringList parts = lower.split(separators, Qt::SkipEmptyParts);
    auto has = [&parts](std::initializer_list<const char*> words) {
      for (const char* w : words)
        if (parts.contains(QLatin1String(w))) return true;
      return false;
    };
    int rank = 4;
    if (lower == QLatin1String("loss"))
      rank = 0;
    else if (has({"loss"}) && has({"train", "training"}))
      rank = 1;
    else if (has({"loss"}) && !has({"val", "valid", "validation", "eval", "test"}))
      rank = 2;
    else if (has({"loss"}))
      rank = 3;
    if (rank < best) {
      best = rank;
      chosen = name;
    }
  }
  return chosen;
}

}  // namespace

CurvesView::CurvesView(QWidget* parent) : QWidget(parent) {
  buildControls();
  setUpPlot();
  restoreChartSettings();

  connect(&m_loader, &QFutureWatcherBase::resultsReadyAt, this,
          [this](int, int) { takeLoadedRuns(); });
  connect(&m_loader, &QFutureWatcherBase::finished, this, &CurvesView::onLoadFinished);
  // Runs finish out of order on the pool: the count read, not the count taken.
  connect(&m_loader, &QFutureWatcherBase::progressValueChanged, this, [this] {
    if (m_loadPending) updateStatus();
  });
  m_follower = new RunFollower(this);
  connect(m_follower, &RunFollower::changed, this, &CurvesView::readLiveUpdates);
  m_tableTimer.setSingleShot(true);
  m_tableTimer.setInterval(1000);
  connect(&m_tableTimer, &QTimer::timeout, this, &CurvesView::updateRunsTable);
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

void CurvesView::setUpPlot() {
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->setNoAntialiasingOnDrag(true);
  m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeScatters);
  m_plot->addLayer(kMarkerLayer, m_plot->layer("main"), QCustomPlot::limAbove);

  // The legend is a list beside the chart (CurvesLegend): it scrolls.
  m_plot->legend->setVisible(false);
  m_highlightCurve = new QCPCurve(m_plot->xAxis, m_plot->yAxis);
  m_highlightCurve->setLayer("overlay");
  m_highlightCurve->setSelectable(QCP::stNone);
  m_highlightCurve->removeFromLegend();
  m_highlightCurve->setVisible(false);

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
  connect(m_plot, &QCustomPlot::mousePress, this,
          [this](QMouseEvent* event) { m_pressPos = event->position(); });
  connect(m_plot, &QCustomPlot::mouseRelease, this, &CurvesView::onPlotRelease);
  connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          [this] { placeBareMarkers(); });
  // Curves are decimated for the view: again whenever the x range or the
  // width changes (afterLayout: the width is known, nothing painted yet).
  connect(m_plot, &QCustomPlot::afterLayout, this, &CurvesView::redrawIfViewChanged);
  connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          &CurvesView::redrawIfViewChanged);
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
  m_loadCancelled = false;
  m_cancelledOf = 0;
  m_cancelButton->hide();
  m_follower->stop();
  m_runs.clear();
  m_plots.clear();
  m_groups.clear();
  m_groupOf.clear();
  m_summaries.clear();
  m_kept.clear();
  m_tableTimer.stop();
  m_runsTable->setTable({}, false);
  m_plot->clearGraphs();
  m_highlight = {};
  m_highlightCurve->setVisible(false);
  m_legend->setEntries({});
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
  m_openClock.start();
  m_cancelButton->setVisible(!runs.empty());
  // One task per run on the thread pool; a cancel starts no more of them.
  // The runs' folders listed once for all of them (a sweep's runs share their parent).
  auto listings = std::make_shared<FolderListings>();
  m_loader.setFuture(QtConcurrent::mapped(
      workPool(), std::move(runs), [logs = std::move(extraLogs), listings](const RunEntry& run) {
        auto loaded = std::make_shared<LoadedRun>();
        loaded->run = loadCurveRun(run, logs, listings.get());
        std::vector<std::string> problems;
        loaded->run.hparams =
            traceWorker(CurveWorkerPhase::Hparams, [&] { return readHparams(run, &problems); });
        for (const std::string& p : problems) loaded->run.problems << fromStd(p);
        loaded->summary =
            traceWorker(CurveWorkerPhase::Summary, [&] { return summarizeCurveRun(loaded->run); });
        return loaded;
      }));
  updateStatus();
}

void CurvesView::setLoadedRuns(std::vector<CurveRun> runs) {
  clear(runs.empty() ? tr("No runs") : QString());
  m_loadPending = true;
  m_expectedRuns = runs.size();
  m_followData = true;
  // Through the loader all the same: the runs arrive as read ones do.
  auto shared = std::make_shared<std::vector<CurveRun>>(std::move(runs));
  m_loader.setFuture(
      QtConcurrent::run(workPool(), [shared](QPromise<std::shared_ptr<LoadedRun>>& promise) {
        for (CurveRun& run : *shared) {
          if (promise.isCanceled()) return;
          auto loaded = std::make_shared<LoadedRun>();
          loaded->run = std::move(run);
          loaded->summary = summarizeCurveRun(loaded->run);
          promise.addResult(std::move(loaded));
        }
      }));
  updateStatus();
}

bool CurvesView::addLivePoints(const QString& runPath, const LiveSource& source,
                               const MetricPoints& points, bool rewritten) {
  if (m_loadPending) return false;
  std::vector<std::map<std::string, SeriesChange>> changes(m_runs.size());
  bool found = false;
  for (size_t i = 0; i < m_runs.size(); ++i)
    if (m_runs[i].path == runPath) {
      changes[i] = mergeLivePoints(m_runs[i], source, points, rewritten);
      found = true;
    }
  if (found) showLiveChanges(changes);
  return found;
}

void CurvesView::takeLoadedRuns() {
  // Results are taken in order, as many as are there; a stale notification
  // from a future that setRuns() replaced takes nothing it should not.
  if (!m_loadPending) return;
  const QFuture<std::shared_ptr<LoadedRun>> future = m_loader.future();
  const size_t before = m_runs.size();
  while (m_runs.size() < m_expectedRuns && future.isResultReadyAt(int(m_runs.size()))) {
    LoadedRun& loaded = *future.resultAt(int(m_runs.size()));
    m_runs.push_back(std::move(loaded.run));
    m_summaries.push_back(std::move(loaded.summary));
    m_plots.emplace_back();
  }
  if (m_runs.size() != before) updateStatus();
}

void CurvesView::showScanProgress(uint64_t done, uint64_t total) {
  if (m_loadPending) return;  // the runs of an earlier scan are read: their progress shows
  m_status->setText(total ? tr("Scanning: %1 of %2 files").arg(done).arg(total)
                          : tr("Scanning..."));
}

void CurvesView::cancelLoading() {
  if (!m_loadPending || m_loadCancelled) return;
  m_loadCancelled = true;
  m_cancelButton->setEnabled(false);
  m_loader.cancel();  // the runs being read finish; finished() follows
  updateStatus();
}

void CurvesView::onLoadFinished() {
  if (!m_loadPending || !m_loader.future().isFinished()) return;
  if (m_loader.future().isCanceled() && !m_loadCancelled) return;  // replaced or cleared
  if (curveTraceOn()) {
    traceNote("runs read (setRuns to finished)", double(m_openClock.nsecsElapsed()) / 1e6);
    reportWorkers();
  }
  const CurveTracePhase whole("shown (finished to replotted)");
  takeLoadedRuns();
  const size_t asked = m_expectedRuns;
  m_expectedRuns = m_runs.size();  // a cancel: the runs read before the first one not read
  m_loadPending = false;
  m_cancelButton->hide();
  m_cancelButton->setEnabled(true);
  // Drawn once every run is there: the metric, the clock axis and the
  // grouping (their hyperparameters decide the choices) are known.
  {
    const CurveTracePhase phase("metric and group choices");
    updateMetricChoices();
    updateGroupChoices();
  }
  rebuildGraphs();  // and the runs table
  if (m_loadCancelled) {
    m_loadCancelled = false;
    // The status line says so, unless every run was read before the cancel
    // took effect ("cancelled: 1000 of 1000 read" was seen under Xvfb).
    if (m_runs.size() < asked) m_cancelledOf = asked;
  }
  showPlotMessage(
      m_runs.empty() ? tr("No runs")
      : metrics().empty()
          ? tr("No metrics found: no metrics.jsonl, training log or checkpoint with a loss")
          : QString());
  {
    const CurveTracePhase phase("follow, status, fit");
    m_follower->followSoon(m_runs);
    updateStatus();
    m_replotTimer.stop();
    fitToData();
  }
  {
    const CurveTracePhase phase("replot");
    m_plot->replot();
  }
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
  // The training loss (defaultMetric) unless the user chose another metric
  // that is still there.
  QString wanted = m_metric;
  if (names.isEmpty())
    wanted = m_metricChosen ? m_metric : QString();
  else if (!m_metricChosen || !names.contains(wanted))
    wanted = defaultMetric(names);
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
  refillGroups();
  m_plot->replot();
}

void CurvesView::setSmoothingMethod(SmoothingMethod method) {
  if (method == SmoothingMethod::None) method = SmoothingMethod::DebiasedEma;  // the slider's 0
  {
    const QSignalBlocker block(m_smoothMethodBox);
    m_smoothMethodBox->setCurrentIndex(m_smoothMethodBox->findData(int(method)));
  }
  if (method == m_smoothMethod) return;
  m_smoothMethod = method;
  for (size_t i = 0; i < m_runs.size(); ++i) fillRun(i);
  refillGroups();
  updateStatus();
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
  m_plots[size_t(i)].visible = visible;
  applyVisibility();
  if (QTreeWidgetItem* row = m_legend->item({false, i})) {
    const QSignalBlocker block(m_legend->tree());
    row->setCheckState(0, visible ? Qt::Checked : Qt::Unchecked);
  }
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

void CurvesView::scheduleReplot() {
  if (!m_replotTimer.isActive()) m_replotTimer.start();
}

void CurvesView::showPlotMessage(const QString& text) {
  m_message->setText(text);
  m_message->setVisible(!text.isEmpty());
}

void CurvesView::updateStatus() {
  if (m_loadPending) {
    // Only the progress while runs are read: the rest is about what is drawn.
    const size_t read = std::max(size_t(std::max(m_loader.progressValue(), 0)), m_runs.size());
    m_status->setText(m_loadCancelled
                          ? tr("Cancelling: the runs being read finish first...")
                          : tr("Reading metrics: %1 of %2 runs").arg(read).arg(m_expectedRuns));
    return;
  }
  QStringList parts;
  if (m_cancelledOf)
    parts << tr("Reading cancelled: %1 of %2 runs read").arg(m_runs.size()).arg(m_cancelledOf);
  else if (m_runs.empty())
    parts << tr("No runs");
  const std::string metric = pathToStd(m_metric);
  size_t withMetric = 0, skipped = 0, nonPositive = 0;
  QStringList undrawn;  // runs with the metric but no point on this x axis
  QStringList elapsed;  // of those, runs whose wall times the clock axis cannot place
  std::map<MetricSource, size_t> sources;
  for (size_t i = 0; i < m_runs.size(); ++i) {
    const MetricSeries* s = m_runs[i].find(metric);
    if (!s || s->points.empty()) continue;
    const bool folded = foldedInGroup(i);  // drawn in its group's line (on a step axis)
    if (!folded && (!m_plots[i].smoothed || m_plots[i].smoothed->data()->isEmpty())) {
      // None of its points has the x axis' coordinate.
      (m_axis == CurveAxis::WallTime && m_clockAxis && m_runs[i].wallStart &&
               !m_runs[i].clockTimes()
           ? elapsed
           : undrawn)
          << m_runs[i].name;
      continue;
    }
    // Points missing from runs that are drawn (a run with none is named below).
    if (!folded) skipped += m_plots[i].skipped;
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
                  .arg(source == MetricSource::MetricsJsonl   ? tr("metrics.jsonl")
                       : source == MetricSource::TrainerState ? tr("trainer_state.json")
                       : source == MetricSource::LightningCsv ? tr("metrics.csv")
                       : source == MetricSource::Mlflow       ? tr("MLflow")
                       : source == MetricSource::Wandb        ? tr("W&B history")
                       : source == MetricSource::TensorBoard  ? tr("TensorBoard event files")
                       : source == MetricSource::ConsoleLog   ? tr("logs")
                                                              : tr("checkpoints"));
    parts << tr("%1 of %2 with %3")
                     .arg(withMetric)
                     .arg(countText(m_runs.size(), "run", "runs"), m_metric) +
                 (from.isEmpty() ? QString() : " (" + from.join(", ") + ")");
  }
  if (!m_kept.empty())
    parts << tr("%1 kept by the table's filter")
                 .arg(countText(size_t(std::count(m_kept.begin(), m_kept.end(), true)), "run",
                                "runs"));
  auto named = [](const QStringList& runs) {
    // The first few: a run missing from the chart is otherwise a mystery.
    constexpr qsizetype kNamed = 3;
    QString names = QStringList(runs.mid(0, kNamed)).join(", ");
    if (runs.size() > kNamed) names += tr(", ... %1 more").arg(runs.size() - kNamed);
    return names;
  };
  if (!elapsed.isEmpty())
    parts << tr("%1 seconds since a start, not clock times: not drawn on Wall time, see Rel. "
                "time (%2)")
                 .arg(
                     elapsed.size() == 1 ? tr("1 run logs") : tr("%1 runs log").arg(elapsed.size()),
                     named(elapsed));
  {
    const QString what = isTimeAxis(m_axis) ? tr("wall time") : tr("token count");
    if (skipped)
      parts << tr("%1 without a %2 not drawn").arg(countText(skipped, "point", "points"), what);
    if (!undrawn.isEmpty())
      parts << tr("%1 no %2: not drawn (%3)")
                   .arg(undrawn.size() == 1 ? tr("1 run has")
                                            : tr("%1 runs have").arg(undrawn.size()),
                        what, named(undrawn));
  }
  if (!m_runs.empty() && effectiveSmoothing() > 0 &&
      m_smoothMethod != SmoothingMethod::DebiasedEma) {
    const Smoothing sm = smoothingParameters();
    parts << (m_smoothMethod == SmoothingMethod::TimeWeightedEma
                  ? tr("time-weighted EMA, half-life %1")
                  : tr("centred moving average over %1"))
                 .arg(axisSpanText(m_axis, sm.span));
  }
  if (m_groupBy != QLatin1String("none") && !stepAxis() && !m_runs.empty())
    parts << tr("groups are aligned by step: drawn on the Step and Rel. step axes only");
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

void CurvesView::onPlotRelease(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  if ((event->position() - m_pressPos).manhattanLength() > 4) return;  // a drag, not a click
  const QString file = markerFileAt(event->position());
  if (!file.isEmpty()) emit checkpointActivated(file);
}

void CurvesView::readLiveUpdates() {
  if (m_loadPending) return;
  showLiveChanges(m_follower->readNew(m_runs));
}

void CurvesView::showLiveChanges(const std::vector<std::map<std::string, SeriesChange>>& changes) {
  bool any = false;
  for (size_t i = 0; i < changes.size(); ++i) {
    if (!changes[i].empty()) m_summaries[i] = summarizeCurveRun(m_runs[i]);
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
  if (updateMetricChoices() || (updateClockAxis() && m_axis == CurveAxis::WallTime))
    rebuildGraphs();  // the first metric of a run that had none, or the first Unix time
  else if (groupingActive())
    refillGroups();  // the groups' statistics with the new points
  if (!metrics().isEmpty()) showPlotMessage({});
  if (!m_tableTimer.isActive()) m_tableTimer.start();
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
