#include "ckpt/index/decimate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ckpt {

std::vector<size_t> decimateM4(std::span<const double> x, std::span<const double> y, double xMin,
                               double xMax, int pixels) {
  if (x.size() != y.size())
    throw std::invalid_argument("decimate: " + std::to_string(x.size()) + " x values for " +
                                std::to_string(y.size()) + " y values");
  if (pixels < 1) throw std::invalid_argument("decimate: the width must be at least 1 pixel");
  if (!std::isfinite(xMin) || !std::isfinite(xMax) || !(xMax > xMin))
    throw std::invalid_argument("decimate: the x range must be finite and not empty");
  std::vector<size_t> out;
  if (x.empty()) return out;
  out.push_back(0);
  const size_t first = size_t(std::lower_bound(x.begin(), x.end(), xMin) - x.begin());
  const size_t end = size_t(std::upper_bound(x.begin(), x.end(), xMax) - x.begin());
  if (first > 0) out.push_back(first - 1);
  const double perPixel = double(pixels) / (xMax - xMin);
  size_t i = first;
  while (i < end) {
    // One column: the points from i on whose x maps to the same pixel.
    const auto column = std::min<long long>(pixels - 1, (long long)((x[i] - xMin) * perPixel));
    size_t lo = SIZE_MAX, hi = SIZE_MAX, gap = SIZE_MAX;
    const size_t start = i;
    for (; i < end; ++i) {
      if (i > first && !(x[i] >= x[i - 1]))
        throw std::invalid_argument("decimate: x is not ascending at point " + std::to_string(i));
      if (std::min<long long>(pixels - 1, (long long)((x[i] - xMin) * perPixel)) != column) break;
      const double v = y[i];
      if (!std::isfinite(v)) {
        if (gap == SIZE_MAX) gap = i;
        continue;
      }
      if (lo == SIZE_MAX || v < y[lo]) lo = i;
      if (hi == SIZE_MAX || v > y[hi]) hi = i;
    }
    for (size_t k : {start, lo, hi, gap, i - 1})
      if (k != SIZE_MAX) out.push_back(k);
  }
  if (end < x.size()) out.push_back(end);
  out.push_back(x.size() - 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ckpt
