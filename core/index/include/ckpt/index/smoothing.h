#pragma once
// Smoothing a curve on its raw points, for the Curves tab and the runs table.
// Three methods:
//  * DebiasedEma: TensorBoard's (the slider the app has always had): weight
//    `weight` per point, so what it means depends on how often a run logged.
//  * TimeWeightedEma: the weight of a point decays with the x distance
//    (steps, seconds), not with the number of points: a run logged every
//    step and the same run logged every 10 steps give the same curve, up to
//    the sampling (see smoothCurve).
//  * CentredMovingAverage: the mean of the curve over [x - window/2,
//    x + window/2], the curve read as straight lines between its points
//    (an integral, so point density does not weigh in).
// Non-finite values pass through unchanged and take no part. No Qt.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

enum class SmoothingMethod { None, DebiasedEma, TimeWeightedEma, CentredMovingAverage };

// "none", "ema", "time-ema", "moving-average"; parse gives false for another word.
std::string_view smoothingMethodName(SmoothingMethod m);
bool parseSmoothingMethod(std::string_view word, SmoothingMethod& out);

struct Smoothing {
  SmoothingMethod method = SmoothingMethod::None;
  // DebiasedEma: the weight of the past per point, in [0, 1).
  double weight = 0;
  // TimeWeightedEma: x distance over which a point's weight halves (> 0).
  // CentredMovingAverage: the window's width in x (> 0).
  double span = 0;
};

// The time-weighted EMA's half-life that behaves as a debiased EMA of
// `weight` does on points `spacing` apart (the slider's value for a run's
// typical spacing): spacing * ln 2 / -ln(weight).
double halfLifeForWeight(double weight, double spacing);

// One smoothed value per point. `x` ascending (equal x allowed), the same
// length as `y`; throws std::invalid_argument otherwise, or when the
// parameter is out of its range (the message names it).
//
// TimeWeightedEma: s0 = y0; si = a*s(i-1) + (1-a)*yi with
// a = 2^-((xi - x(i-1)) / span): each point stands for the stretch of x since
// the point before it. Sampling the same smooth curve every k steps instead
// of every step changes the result by at most k * max|y'| (a point holds its
// value over its stretch); noise averages over span/k points instead of span.
std::vector<double> smoothCurve(std::span<const double> x, std::span<const double> y,
                                const Smoothing& smoothing);

}  // namespace ckpt
