// CurvesView, drawing the runs: each run's raw and smoothed graphs, the
// checkpoint markers (bare ones on the x axis where no value was recorded),
// points appended live, the axes fitted to the data, and the values and
// marker under the mouse. The widget itself (controls, loading, status,
// export): curvesview.cpp.
#include <qcustomplot.h>
#include <QFileInfo>
#include <QMouseEvent>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "curves/curveaxes.h"
#include "curves/curvedrawing.h"
#include "curves/curvesview.h"
#include "curves/curvetrace.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {
namespace {

constexpr int kRawAlpha = 90;  // the raw curve, faint behind the smoothed one

QColor faint(QColor c) {
  c.setAlpha(kRawAlpha);
  return c;
}

QString valueText(double v) {
  return QString::number(v, 'g', 5);
}

}  // namespace

QString CurvesView::markerFile(const QString& run, int index) const {
  const int i = runIndex(run);
  if (i < 0 || index < 0 || size_t(index) >= m_plots[size_t(i)].markerFiles.size()) return {};
  return m_plots[size_t(i)].markerFiles[size_t(index)];
}

void CurvesView::smoothAll(RunPlot& rp, const MetricSeries& series,
                           std::vector<double>& into) const {
  rp.ema = EmaSmoother(effectiveSmoothing());
  const SeriesPoints& points = series.points;
  into.clear();
  into.reserve(points.size());
  for (size_t j = 0; j < points.size(); ++j) into.push_back(rp.ema.next(points.value(j)));
}

void CurvesView::rebuildGraphs() {
  // A schedule is drawn as it is: the slider says so rather than doing nothing.
  const bool schedule = isScheduleMetric(pathToStd(m_metric));
  m_smoothSlider->setEnabled(!schedule);
  m_smoothMethodBox->setEnabled(!schedule);
  m_smoothLabel->setText(schedule ? tr("off for %1").arg(m_metric)
                                  : QString::number(m_smoothing, 'f', 2));
  m_plot->clearGraphs();
  for (RunPlot& rp : m_plots) {
    const bool visible = rp.visible;  // hidden runs stay hidden
    rp = RunPlot{};
    rp.visible = visible;
  }
  {
    const CurveTracePhase phase("rebuild: spacing, groups");
    updateClockAxis();
    updateSpacing();
    computeGroups();
  }
  {
    const CurveTracePhase phase("rebuild: runs' curves");
    for (size_t i = 0; i < m_runs.size(); ++i) fillRun(i);
  }
  {
    const CurveTracePhase phase("rebuild: group statistics");
    fillGroups();
  }
  {
    const CurveTracePhase phase("rebuild: visibility, legend");
    applyVisibility();
    rebuildLegend();
  }
  m_highlight = {};
  m_highlightCurve->setVisible(false);
  applyAxisTypes();
  updateStatus();
  const CurveTracePhase phase("rebuild: runs table");
  updateRunsTable();  // the metric or the grouping may have changed
}

void CurvesView::dropRunPlot(size_t index) {
  RunPlot& rp = m_plots[index];
  for (QCPGraph* g : {rp.raw, rp.smoothed, rp.markers, rp.bare})
    if (g) m_plot->removeGraph(g);
  const bool visible = rp.visible;  // hidden runs stay hidden
  rp = RunPlot{};
  rp.visible = visible;
}

void CurvesView::fillRun(size_t index) {
  // A run folded into its group's line keeps no curve of its own: at 1,000
  // runs of 20,000 points those were 800 MB, and hidden.
  if (foldedInGroup(index)) {
    if (m_plots[index].smoothed) dropRunPlot(index);
    return;
  }
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
    rp.markers->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(colour, 2),
                                                palette().brush(QPalette::Base), 9));
    rp.markers->removeFromLegend();
    rp.bare = m_plot->addGraph();
    rp.bare->setName(run.name + tr(" (checkpoints without a value)"));
    rp.bare->setLayer(kMarkerLayer);
    rp.bare->setLineStyle(QCPGraph::lsNone);
    rp.bare->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(faint(colour), 1.5), Qt::NoBrush, 8));
    rp.bare->removeFromLegend();
    rp.bare->setSelectable(QCP::stNone);
    rp.bare->setVisible(rp.visible);
    for (QCPGraph* g : {rp.raw, rp.smoothed}) {
      g->setAdaptiveSampling(false);  // M4 decimation (showDecimated) instead
      g->setSelectable(QCP::stNone);  // clicks go to the markers above
    }
    rp.markers->setSelectable(QCP::stNone);  // clicks: markerFileAt
    for (QCPGraph* g : {rp.raw, rp.smoothed, rp.markers}) {
      g->removeFromLegend();  // the legend is CurvesLegend
      g->setVisible(rp.visible);
    }
    if (effectiveSmoothing() == 0)
      rp.raw->setVisible(false);  // it would coincide with the smoothed one
  }
  rp.raw->setVisible(rp.smoothed->visible() && effectiveSmoothing() > 0);

  const auto& points = series->points;
  std::vector<double> xs(points.size());
  std::vector<char> hasX(points.size());
  rp.skipped = 0;
  rp.origin = axisOrigin(run);
  // On a step axis the x is the step: read off its column, not a whole
  // point made of the four (a second of 1,000 runs drawn apart).
  const bool byStep = stepAxis();
  bool sorted = true;
  double last = -qInf();
  for (size_t j = 0; j < points.size(); ++j) {
    if (const auto x = byStep ? run.stepX(points.step(j), m_axis) : xOf(run, points[j])) {
      xs[j] = *x;
      hasX[j] = 1;
      sorted = sorted && !(*x < last);
      last = *x;
    } else {
      ++rp.skipped;
    }
  }
  if (sorted && rp.skipped == 0) {
    // Every point, in order (steps always; wall times and token counts
    // nearly always): the x's as they are, no order kept.
    rp.order = {};
    rp.xs = std::move(xs);
  } else {
    std::vector<size_t> order;
    order.reserve(points.size() - rp.skipped);
    for (size_t j = 0; j < points.size(); ++j)
      if (hasX[j]) order.push_back(j);
    if (!sorted)
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return xs[a] < xs[b]; });
    rp.xs.clear();
    rp.xs.reserve(order.size());
    for (size_t j : order) rp.xs.push_back(xs[j]);
    rp.order = std::move(order);
  }
  setRawValues(rp, *series);
  smoothRun(rp, *series);
  drawRun(rp);
  fillMarkers(index);
}
std::optional<double> CurvesView::axisOrigin(const CurveRun& run) const {
  if (m_axis == CurveAxis::RelativeStep && run.firstStep) return double(*run.firstStep);
  if (m_axis == CurveAxis::RelativeTime) return run.wallStart;
  return std::nullopt;
}

std::optional<double> CurvesView::xOf(const CurveRun& run, const MetricPoint& p) const {
  if (m_axis == CurveAxis::WallTime && m_clockAxis && !run.clockTimes()) return std::nullopt;
  return run.x(p, m_axis);
}

bool CurvesView::updateClockAxis() {
  const bool clock =
      std::any_of(m_runs.begin(), m_runs.end(), [](const CurveRun& r) { return r.clockTimes(); });
  if (clock == m_clockAxis) return false;
  m_clockAxis = clock;
  return true;
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
    const size_t j = points.lowerBound(step);
    const bool logged = j < points.size() && points.step(j) == step;
    // Where the step sits on the x axis: a logged point's own coordinate,
    // between two logged points on the line joining them, or the step itself.
    std::optional<double> x;
    if (logged) {
      x = xOf(run, points[j]);
    } else if (stepAxis()) {
      x = run.stepX(step, m_axis);
    } else if (j > 0 && j < points.size()) {
      const auto xa = xOf(run, points[j - 1]), xb = xOf(run, points[j]);
      const double t =
          double(step - points.step(j - 1)) / double(points.step(j) - points.step(j - 1));
      if (xa && xb) x = *xa + t * (*xb - *xa);
    }
    if (!x) continue;
    const auto fileIt = run.checkpointFiles.find(step);
    const QString file = fileIt == run.checkpointFiles.end() ? QString() : fileIt->second;
    const std::optional<double> recorded = run.recordedValue(step, metric);
    std::optional<double> y = recorded;
    if (!y && logged && std::isfinite(points.value(j))) y = points.value(j);
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
  // points again per update would stall the window). The distance-based
  // methods look at neighbours on both sides or at a span: smoothed whole.
  const bool inOrder = rp.order.empty();  // every point drawn, as logged
  const size_t smoothedSoFar = inOrder ? rp.smoothYs.size() : rp.smoothedValues.size();
  if (smoothedSoFar != firstNew || rp.origin != axisOrigin(run) ||
      (m_smoothMethod != SmoothingMethod::DebiasedEma && effectiveSmoothing() > 0)) {
    fillRun(index);
    return;
  }
  // The new points' x's first: one without an x, or going back, draws the
  // whole curve again (nothing changed yet).
  std::vector<double> newXs;
  newXs.reserve(points.size() - firstNew);
  double last = rp.xs.empty() ? -qInf() : rp.xs.back();
  for (size_t j = firstNew; j < points.size(); ++j) {
    const auto x = xOf(run, points[j]);
    if (!x && inOrder) {
      fillRun(index);  // the first point without an x: the drawn points get an order
      return;
    }
    if (!x) {
      newXs.push_back(qQNaN());
      continue;
    }
    if (*x < last) {
      fillRun(index);  // time or tokens went backwards: sort the whole curve again
      return;
    }
    last = *x;
    newXs.push_back(*x);
  }
  const size_t before = rp.xs.size();
  std::vector<double>& smoothed = inOrder ? rp.smoothYs : rp.smoothedValues;
  for (size_t j = firstNew; j < points.size(); ++j)
    smoothed.push_back(rp.ema.next(points.value(j)));
  for (size_t j = firstNew; j < points.size(); ++j) {
    const double x = newXs[j - firstNew];
    if (std::isnan(x)) {
      ++rp.skipped;
      continue;
    }
    rp.xs.push_back(x);
    if (!inOrder) {
      rp.order.push_back(j);
      rp.smoothYs.push_back(rp.smoothedValues[j]);
    }
  }
  setRawValues(rp, *series, before);  // the column may have moved; new values appended
  if (rp.xs.size() != before) drawRun(rp);
  fillMarkers(index);  // markers of steps just logged get their values
}

void CurvesView::fitToData() {
  m_followData = true;
  // From the full curves, not the graphs (they hold what the last view kept).
  // (QCPRange would swap an empty range's bounds: plain numbers until found.)
  double x0 = qInf(), x1 = -qInf(), y0 = qInf(), y1 = -qInf();
  auto addY = [&](double v) {
    if (!std::isfinite(v) || (m_logY && v <= 0)) return;
    y0 = std::min(y0, v);
    y1 = std::max(y1, v);
  };
  for (const RunPlot& rp : m_plots) {
    if (!rp.smoothed || !rp.smoothed->visible() || rp.xs.empty()) continue;
    x0 = std::min(x0, rp.xs.front());
    x1 = std::max(x1, rp.xs.back());
    if (rp.raw->visible())
      for (double v : rp.rawYs) addY(v);
    for (double v : rp.smoothYs) addY(v);
    // The valued markers (the hollow ones on the x axis follow the range; they do not set it).
    if (rp.markers && rp.markers->visible())
      for (auto it = rp.markers->data()->constBegin(); it != rp.markers->data()->constEnd(); ++it)
        addY(it->value);
  }
  for (const GroupPlot& gp : m_groups) {
    if (!gp.line || !gp.line->visible() || gp.xs.empty()) continue;
    x0 = std::min(x0, gp.xs.front());
    x1 = std::max(x1, gp.xs.back());
    for (const auto* ys : {&gp.lowYs, &gp.highYs, &gp.lineYs})
      for (double v : *ys) addY(v);
  }
  if (!(x0 <= x1) || !(y0 <= y1)) {
    m_plot->xAxis->setRange(0, 1);
    m_plot->yAxis->setRange(m_logY ? QCPRange(0.1, 10) : QCPRange(0, 1));
    return;
  }
  const QCPRange x(x0, x1);
  m_plot->xAxis->setRange(x);
  m_plot->yAxis->setRange(y0, y1);
  // One point (or one step): a range around it, not QCustomPlot's unit
  // width that put ticks at 99.6 .. 100.4 around step 100.
  if (x.size() <= 1 && !isTimeAxis(m_axis)) {
    const double half = std::max(1.0, std::abs(x.center()) * 0.05);
    m_plot->xAxis->setRange(std::max(0.0, x.center() - half), x.center() + half);
  } else if (x.size() <= 1) {
    // A minute around it: padRanges' width for a single point scales with
    // the value, which for a Unix time is years.
    m_plot->xAxis->setRange(x.center() - 30, x.center() + 30);
  }
  padRanges(m_plot->xAxis, m_plot->yAxis, m_logY);
  placeBareMarkers();
}

QString CurvesView::valuesAt(double key, std::optional<double> y) const {
  struct Line {
    double distance;
    QString text;
  };
  std::vector<Line> lines;
  for (size_t i = 0; i < m_runs.size(); ++i) {
    const RunPlot& rp = m_plots[i];
    if (!rp.visible || !rp.smoothed || !rp.smoothed->visible() || rp.xs.empty()) continue;
    auto it = std::lower_bound(rp.xs.begin(), rp.xs.end(), key);
    if (it == rp.xs.end() || (it != rp.xs.begin() && key - *(it - 1) < *it - key)) --it;
    const size_t j = size_t(it - rp.xs.begin());
    QString line = tr("%1: %2").arg(m_runs[i].name, valueText(rp.smoothYs[j]));
    if (const auto note = m_runs[i].restartNotes.find(pathToStd(m_metric));
        note != m_runs[i].restartNotes.end())
      line += QStringLiteral(" (%1)").arg(note->second);
    if (effectiveSmoothing() > 0) line += tr(" (raw %1)").arg(valueText(rp.rawYs[j]));
    if (const MetricSeries* series = m_runs[i].find(pathToStd(m_metric)))
      line += tr(" at step %1").arg(series->points.step(rp.order.empty() ? j : rp.order[j]));
    const double d = y && std::isfinite(rp.smoothYs[j]) ? std::abs(rp.smoothYs[j] - *y) : 0.0;
    lines.push_back({std::isnan(d) ? qInf() : d, line});
  }
  for (const GroupPlot& gp : m_groups) {
    if (!gp.line || !gp.line->visible() || gp.xs.empty()) continue;
    auto it = std::lower_bound(gp.xs.begin(), gp.xs.end(), key);
    if (it == gp.xs.end() || (it != gp.xs.begin() && key - *(it - 1) < *it - key)) --it;
    const size_t j = size_t(it - gp.xs.begin());
    QString line = tr("%1: %2 %3")
                       .arg(gp.label, m_groupLine == GroupLine::Mean ? tr("mean") : tr("median"),
                            valueText(gp.lineYs[j]));
    if (effectiveSmoothing() > 0) line += tr(" (raw %1)").arg(valueText(gp.rawLine[j]));
    line += tr(", band %1 to %2, %3 of %4 at %5 %6")
                .arg(valueText(gp.lowYs[j]), valueText(gp.highYs[j]))
                .arg(countText(size_t(gp.counts[j]), "run", "runs"))
                .arg(gp.runs.size())
                .arg(axisLabel(m_axis))
                .arg(gp.steps[j]);
    const double d = y && std::isfinite(gp.lineYs[j]) ? std::abs(gp.lineYs[j] - *y) : 0.0;
    lines.push_back({std::isnan(d) ? qInf() : d, line});
  }
  if (lines.empty()) return {};
  // Hundreds of runs: the ones nearest the mouse, then how many more.
  size_t more = 0;
  if (lines.size() > size_t(kTooltipLines) && y) {
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line& a, const Line& b) { return a.distance < b.distance; });
    more = lines.size() - size_t(kTooltipLines);
    lines.resize(size_t(kTooltipLines));
  }
  QStringList out{tr("%1 %2").arg(axisLabel(m_axis), axisValueText(m_axis, key))};
  for (const Line& l : lines) out << l.text;
  if (more)
    out << tr("... and %1 more (nearest the mouse shown)").arg(countText(more, "run", "runs"));
  return out.join('\n');
}

void CurvesView::onMouseMove(QMouseEvent* event) {
  const QPointF pos = event->position();
  const bool inside =
      m_plot->axisRect()->rect().contains(pos.toPoint()) && !(event->buttons() & Qt::LeftButton);
  QString marker;
  if (inside) (void)markerFileAt(pos, &marker);
  const QString text = !inside             ? QString()
                       : !marker.isEmpty() ? marker
                                           : valuesAt(m_plot->xAxis->pixelToCoord(pos.x()),
                                                      m_plot->yAxis->pixelToCoord(pos.y()));
  setHighlight(inside ? curveAt(pos) : LegendKey{});
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
        const double d2 =
            (p.x() - pos.x()) * (p.x() - pos.x()) + (p.y() - pos.y()) * (p.y() - pos.y());
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

}  // namespace ckpt
