#include "curves/curvedrawing.h"

#include <qcustomplot.h>
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ckpt/index/decimate.h"
#include "curves/curvesview.h"
#include "textformat.h"

namespace ckpt {

void showDecimated(QCPGraph* graph, std::span<const double> x, std::span<const double> y,
                   double lower, double upper, int pixels) {
  QVector<QCPGraphData> data;
  std::vector<size_t> keep;
  if (!x.empty()) {
    const bool usable =
        std::isfinite(lower) && std::isfinite(upper) && upper > lower && pixels >= 1;
    try {
      if (usable) keep = decimateM4(x, y, lower, upper, pixels);
    } catch (const std::invalid_argument&) {
      keep.clear();  // x out of order cannot happen (the caller sorts); show the ends
    }
    if (keep.empty()) {
      keep.push_back(0);
      if (x.size() > 1) keep.push_back(x.size() - 1);
    }
  }
  data.reserve(qsizetype(keep.size()));
  for (size_t i : keep) data.append(QCPGraphData(x[i], y[i]));
  graph->data()->set(data, /*alreadySorted=*/true);
}

// ------------------------------------------------ CurvesView: drawing, smoothing

Smoothing CurvesView::smoothingParameters() const {
  const double weight = effectiveSmoothing();
  if (weight <= 0) return {};
  if (m_smoothMethod == SmoothingMethod::DebiasedEma)
    return {SmoothingMethod::DebiasedEma, weight, 0};
  const double halfLife = halfLifeForWeight(weight, m_spacing);
  return {m_smoothMethod, weight,
          m_smoothMethod == SmoothingMethod::TimeWeightedEma ? halfLife : 2 * halfLife};
}

void CurvesView::setRawValues(RunPlot& rp, const MetricSeries& series, size_t fromIndex) {
  const SeriesPoints& points = series.points;
  if (rp.order.empty() && points.valueData()) {
    rp.ownRawYs = {};
    rp.rawYs = std::span<const double>(points.valueData(), points.size());
    return;
  }
  // A column kept as its first value and stride (a constant learning
  // rate), or points drawn in another order or without some.
  if (fromIndex == 0 || rp.ownRawYs.size() != fromIndex) rp.ownRawYs.clear();
  const size_t n = rp.order.empty() ? points.size() : rp.order.size();
  rp.ownRawYs.reserve(n);
  for (size_t j = rp.ownRawYs.size(); j < n; ++j)
    rp.ownRawYs.push_back(points.value(rp.order.empty() ? j : rp.order[j]));
  rp.rawYs = rp.ownRawYs;
}

size_t CurvesView::drawnBytes() const {
  size_t bytes = 0;
  for (const RunPlot& rp : m_plots)
    bytes += (rp.xs.capacity() + rp.smoothYs.capacity() + rp.ownRawYs.capacity() +
              rp.smoothedValues.capacity()) *
                 sizeof(double) +
             rp.order.capacity() * sizeof(size_t);
  return bytes;
}

void CurvesView::smoothRun(RunPlot& rp, const MetricSeries& series) {
  const Smoothing smoothing = smoothingParameters();
  if (smoothing.method == SmoothingMethod::None ||
      smoothing.method == SmoothingMethod::DebiasedEma) {
    // In logging order, and kept with the EMA's state: live points are
    // smoothed alone (appendPoints). Drawn in that order: the values are
    // the smoothed line.
    if (rp.order.empty()) {
      rp.smoothedValues = {};
      smoothAll(rp, series, rp.smoothYs);
      return;
    }
    smoothAll(rp, series, rp.smoothedValues);
    rp.smoothYs.clear();
    rp.smoothYs.reserve(rp.order.size());
    for (size_t j : rp.order) rp.smoothYs.push_back(rp.smoothedValues[j]);
    return;
  }
  // On the x the chart shows: the time-weighted EMA decays over token or
  // second distances on those axes. A relative axis shifts a run's x by a
  // constant, so its curve is smoothed exactly as on Step or Wall time.
  rp.smoothedValues.clear();  // appendPoints smooths the whole curve again
  try {
    rp.smoothYs = smoothCurve(rp.xs, rp.rawYs, smoothing);
  } catch (const std::invalid_argument&) {
    rp.smoothYs.assign(rp.rawYs.begin(), rp.rawYs.end());  // a span of 0: nothing to smooth over
  }
}

int CurvesView::drawnPixels() const {
  // Before its first layout (a window not shown yet) the axis rect has no
  // size: the widget's width stands in until the layout redraws.
  const int width = m_plot->axisRect()->width();
  return width > 0 ? width : std::max(1, m_plot->width());
}

CurvesView::DrawnView CurvesView::viewNow() const {
  const QCPRange range = m_plot->xAxis->range();
  return {range.lower, range.upper, drawnPixels()};
}

void CurvesView::drawRun(RunPlot& rp) {
  if (!rp.raw) return;
  rp.drawn = viewNow();
  showDecimated(rp.raw, rp.xs, rp.rawYs, rp.drawn.lower, rp.drawn.upper, rp.drawn.pixels);
  showDecimated(rp.smoothed, rp.xs, rp.smoothYs, rp.drawn.lower, rp.drawn.upper, rp.drawn.pixels);
}

void CurvesView::redrawIfViewChanged() {
  const DrawnView now = viewNow();
  bool redrawn = false;
  for (RunPlot& rp : m_plots)
    if (rp.raw && (rp.raw->visible() || rp.smoothed->visible()) && !(rp.drawn == now)) {
      drawRun(rp);
      redrawn = true;
    }
  for (GroupPlot& gp : m_groups)
    if (gp.line && gp.line->visible() && !(gp.drawn == now)) {
      drawGroup(gp);
      redrawn = true;
    }
  if (redrawn) refreshHighlight();
}

bool CurvesView::updateSpacing() {
  std::vector<double> spacings;
  const std::string metric = pathToStd(m_metric);
  for (const CurveRun& run : m_runs) {
    const MetricSeries* s = run.find(metric);
    if (!s) continue;
    std::optional<double> first, last;
    size_t n = 0;
    if (stepAxis() && !s->points.empty()) {
      // Every point has a step, sorted: its ends (points made whole cost
      // seconds at 20 M).
      n = s->points.size();
      first = run.stepX(s->points.step(0), m_axis);
      last = run.stepX(s->points.step(n - 1), m_axis);
    } else {
      for (const MetricPoint& p : s->points)
        if (const auto x = xOf(run, p)) {
          if (!first) first = x;
          last = x;
          ++n;
        }
    }
    if (n >= 2 && *last > *first) spacings.push_back((*last - *first) / double(n - 1));
  }
  double spacing = 1;
  if (!spacings.empty()) {
    std::nth_element(spacings.begin(), spacings.begin() + std::ptrdiff_t(spacings.size() / 2),
                     spacings.end());
    spacing = spacings[spacings.size() / 2];
  }
  if (spacing == m_spacing) return false;
  m_spacing = spacing;
  return true;
}

}  // namespace ckpt
