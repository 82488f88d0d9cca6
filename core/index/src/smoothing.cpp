#include "ckpt/index/smoothing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ckpt/index/metrics.h"

namespace ckpt {
namespace {

void checkInput(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size())
    throw std::invalid_argument("smoothing: " + std::to_string(x.size()) + " x values for " +
                                std::to_string(y.size()) + " y values");
  for (size_t i = 1; i < x.size(); ++i)
    if (!(x[i] >= x[i - 1]))
      throw std::invalid_argument("smoothing: x is not ascending at point " + std::to_string(i));
}

std::vector<double> timeWeightedEma(std::span<const double> x, std::span<const double> y,
                                    double halfLife) {
  std::vector<double> out(y.begin(), y.end());
  bool started = false;
  double s = 0, lastX = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) continue;
    if (started) {
      const double a = std::exp2(-(x[i] - lastX) / halfLife);
      s = a * s + (1 - a) * y[i];
    } else {
      s = y[i];
      started = true;
    }
    lastX = x[i];
    out[i] = s;
  }
  return out;
}

// The mean of the piecewise-linear curve through the finite points over
// [xi - w/2, xi + w/2], the window cut to where the curve is (so the first
// point's mean covers only what follows it).
std::vector<double> centredMovingAverage(std::span<const double> x, std::span<const double> y,
                                         double width) {
  std::vector<double> out(y.begin(), y.end());
  std::vector<double> fx, fy;
  std::vector<size_t> at;
  for (size_t i = 0; i < y.size(); ++i)
    if (std::isfinite(y[i])) {
      fx.push_back(x[i]);
      fy.push_back(y[i]);
      at.push_back(i);
    }
  if (fx.empty()) return out;
  // area[k]: the integral from fx[0] to fx[k].
  std::vector<double> area(fx.size(), 0.0);
  for (size_t k = 1; k < fx.size(); ++k)
    area[k] = area[k - 1] + (fx[k] - fx[k - 1]) * (fy[k] + fy[k - 1]) / 2;
  auto integral = [&](double u) {
    // The last point at or before u.
    const size_t k = size_t(std::upper_bound(fx.begin(), fx.end(), u) - fx.begin()) - 1;
    if (k + 1 >= fx.size()) return area.back();
    const double dx = fx[k + 1] - fx[k];
    const double t = dx > 0 ? (u - fx[k]) / dx : 0;
    const double yu = fy[k] + t * (fy[k + 1] - fy[k]);
    return area[k] + (u - fx[k]) * (fy[k] + yu) / 2;
  };
  for (size_t k = 0; k < fx.size(); ++k) {
    const double lo = std::max(fx.front(), fx[k] - width / 2);
    const double hi = std::min(fx.back(), fx[k] + width / 2);
    out[at[k]] = hi > lo ? (integral(hi) - integral(lo)) / (hi - lo) : fy[k];
  }
  return out;
}

}  // namespace

std::string_view smoothingMethodName(SmoothingMethod m) {
  switch (m) {
    case SmoothingMethod::None:
      return "none";
    case SmoothingMethod::DebiasedEma:
      return "ema";
    case SmoothingMethod::TimeWeightedEma:
      return "time-ema";
    case SmoothingMethod::CentredMovingAverage:
      return "moving-average";
  }
  return "none";
}

bool parseSmoothingMethod(std::string_view word, SmoothingMethod& out) {
  for (SmoothingMethod m :
       {SmoothingMethod::None, SmoothingMethod::DebiasedEma, SmoothingMethod::TimeWeightedEma,
        SmoothingMethod::CentredMovingAverage})
    if (smoothingMethodName(m) == word) {
      out = m;
      return true;
    }
  return false;
}

double halfLifeForWeight(double weight, double spacing) {
  if (!(weight > 0 && weight < 1) || !(spacing > 0)) return 0;
  return spacing * std::log(2.0) / -std::log(weight);
}

std::vector<double> smoothCurve(std::span<const double> x, std::span<const double> y,
                                const Smoothing& smoothing) {
  checkInput(x, y);
  switch (smoothing.method) {
    case SmoothingMethod::None:
      return {y.begin(), y.end()};
    case SmoothingMethod::DebiasedEma: {
      if (!(smoothing.weight >= 0 && smoothing.weight < 1))
        throw std::invalid_argument("smoothing: the EMA weight must be in [0, 1) (got " +
                                    std::to_string(smoothing.weight) + ")");
      // The app's own smoother (metrics.h), so a live curve and this agree.
      return smoothEma(std::vector<double>(y.begin(), y.end()), smoothing.weight);
    }
    case SmoothingMethod::TimeWeightedEma:
    case SmoothingMethod::CentredMovingAverage:
      if (!(smoothing.span > 0) || !std::isfinite(smoothing.span))
        throw std::invalid_argument(
            std::string("smoothing: ") +
            (smoothing.method == SmoothingMethod::TimeWeightedEma ? "the half-life"
                                                                  : "the window") +
            " must be a positive number (got " + std::to_string(smoothing.span) + ")");
      return smoothing.method == SmoothingMethod::TimeWeightedEma
                 ? timeWeightedEma(x, y, smoothing.span)
                 : centredMovingAverage(x, y, smoothing.span);
  }
  return {y.begin(), y.end()};
}

// TensorBoard's EMA (metrics.h), one value at a time and over a list.
EmaSmoother::EmaSmoother(double smoothing)
    : m_w(std::clamp(smoothing, 0.0, 0.999999)), m_debiasing(m_w > 0) {}

double EmaSmoother::next(double x) {
  if (!std::isfinite(x)) return x;
  m_last = m_last * m_w + (1 - m_w) * x;
  ++m_count;
  double debias = 1.0;
  // Once w^count is below half an ulp of 1, 1 - w^count is exactly 1: stop
  // calling pow (deep in its underflow path it is slow: most of a live
  // update of a million-point curve was spent there).
  if (m_debiasing) {
    const double wn = std::pow(m_w, double(m_count));
    debias = 1.0 - wn;
    if (wn < 1e-17) m_debiasing = false;
  }
  return m_last / debias;
}

std::vector<double> smoothEma(const std::vector<double>& values, double smoothing) {
  std::vector<double> out;
  out.reserve(values.size());
  EmaSmoother ema(smoothing);
  for (double x : values) out.push_back(ema.next(x));
  return out;
}

}  // namespace ckpt
