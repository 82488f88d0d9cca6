#pragma once
// What the chart draws of a long curve: per pixel column the first, last,
// lowest and highest raw point (M4, Jugel et al. 2014). Recomputed from the
// raw points for every zoom range, so a one-point spike is drawn at every
// zoom level and the line between columns is the real one. No Qt.

#include <cstddef>
#include <span>
#include <vector>

namespace ckpt {

// The indices (ascending, each once) of the points to draw of a curve with
// ascending `x` (equal x allowed) over [xMin, xMax] in `pixels` columns:
//  * per column, its first and last point and those of its lowest and
//    highest finite value;
//  * the first non-finite point of a column (NaN: the chart breaks the line
//    there, so a gap stays a gap);
//  * the last point before xMin and the first after xMax, so the line runs to
//    the edges of the view;
//  * the curve's first and last point, always.
// Throws std::invalid_argument when x and y differ in length, x is not
// ascending, the range is empty or not finite, or pixels < 1. At most
// 4 * pixels + 4 indices, whatever the number of points; the cost is the
// points in the range plus two binary searches.
std::vector<size_t> decimateM4(std::span<const double> x, std::span<const double> y, double xMin,
                               double xMax, int pixels);

}  // namespace ckpt
