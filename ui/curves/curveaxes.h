#pragma once
// How the curves view labels and scales its axes: step and token counts
// with k/M/B suffixes, wall time on a clock, relative time as a duration
// ("90s", "1m 30s", "2h 15m"), a log or linear y axis.

#include <QString>

#include "curves/curverun.h"

class QCPAxis;

namespace ckpt {

// "step", "relative step", "tokens", "wall time", "relative time".
[[nodiscard]] QString axisLabel(CurveAxis axis);
// A position on the x axis as the tooltip shows it: "1,200", "1.5M",
// "2026-12-03 16:30:05" (a Unix time; an elapsed one as "0:12:30"), "0:12:30".
[[nodiscard]] QString axisValueText(CurveAxis axis, double x);
// A distance along the x axis (a smoothing span): "30 steps", "1.5M tokens", "0:02:30".
[[nodiscard]] QString axisSpanText(CurveAxis axis, double span);
// A duration as the relative-time axis labels its ticks, every unit that is
// not zero: "0", "45s", "0.5s", "1m 30s", "2h", "1h 5s", "1d 4h".
[[nodiscard]] QString durationText(double seconds);
// True for the axes measured in seconds (WallTime, RelativeTime).
[[nodiscard]] bool isTimeAxis(CurveAxis axis);
// 1500 -> "1.5k", 2'000'000 -> "2M", 3e9 -> "3B"; below 1000 as is.
[[nodiscard]] QString siText(double v);

void setXTicker(QCPAxis* axis, CurveAxis kind);
void setYScale(QCPAxis* axis, bool logarithmic);
// Leaves a little room around the data after QCustomPlot::rescaleAxes, and
// gives a single point (a zero-width range) a width.
void padRanges(QCPAxis* x, QCPAxis* y, bool logY);

}  // namespace ckpt
