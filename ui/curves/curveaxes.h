#pragma once
// How the curves view labels and scales its axes: step and token counts
// with k/M/B suffixes, wall time as h:mm:ss, a log or linear y axis.

#include <QString>

#include "curves/curverun.h"

class QCPAxis;

namespace ckpt {

// "step", "wall time", "tokens".
[[nodiscard]] QString axisLabel(CurveAxis axis);
// A position on the x axis as the tooltip shows it: "1,200", "0:12:30", "1.5M".
[[nodiscard]] QString axisValueText(CurveAxis axis, double x);
// 1500 -> "1.5k", 2'000'000 -> "2M", 3e9 -> "3B"; below 1000 as is.
[[nodiscard]] QString siText(double v);

void setXTicker(QCPAxis* axis, CurveAxis kind);
void setYScale(QCPAxis* axis, bool logarithmic);
// Leaves a little room around the data after QCustomPlot::rescaleAxes, and
// gives a single point (a zero-width range) a width.
void padRanges(QCPAxis* x, QCPAxis* y, bool logY);

}  // namespace ckpt
