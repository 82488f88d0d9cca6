#pragma once
// What a QCPGraph shows of a long curve: the points ckpt::decimateM4 keeps
// for the visible x range at the plot's width in pixels. The full curve
// stays with the caller; this is redone on every zoom, pan and resize, so a
// one-point spike is drawn at every zoom level and the first and last point
// always are (QCustomPlot's adaptive sampling works on what it was given).

#include <span>

class QCPGraph;

namespace ckpt {

// Replaces `graph`'s data with the points of (x, y) (x ascending) that M4
// keeps over [lower, upper] in `pixels` columns: at most 4 * pixels + 4,
// whatever the curve's length. A range that is empty or not finite (no
// layout yet) shows the curve's first and last point only; the next replot
// draws the rest.
void showDecimated(QCPGraph* graph, std::span<const double> x, std::span<const double> y,
                   double lower, double upper, int pixels);

}  // namespace ckpt
