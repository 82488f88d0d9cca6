// What the chart draws of a curve: M4 decimation keeps a one-point spike in
// a million at every zoom level with the first and last points (checked
// column by column against a brute-force pass over the raw points), and the
// smoothing methods: the time-weighted EMA and the centred moving average
// give the same value at a step whether a run logged every step or every
// 10 steps, within the bound each method allows; hand-computed values.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ckpt/index/decimate.h"
#include "ckpt/index/smoothing.h"

using namespace ckpt;

namespace {

struct Curve {
  std::vector<double> x, y;
};

// A million noisy points with one spike.
Curve spiky(size_t n, size_t spikeAt, double spike) {
  Curve c;
  c.x.resize(n);
  c.y.resize(n);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  for (size_t i = 0; i < n; ++i) {
    c.x[i] = double(i) * 2;  // steps logged every 2
    c.y[i] = 2 + std::exp(-double(i) / 2e5) + noise(rng);
  }
  c.y[spikeAt] = spike;
  return c;
}

bool has(const std::vector<size_t>& v, size_t i) {
  return std::binary_search(v.begin(), v.end(), i);
}

// The smooth curve both samplings are taken of, and bounds on its slope and
// curvature (by hand: |d/dt| of each term summed).
double signal(double t) {
  return 2 + 3 * std::exp(-t / 3000) + 0.1 * std::sin(t / 400);
}
constexpr double kMaxSlope = 3.0 / 3000 + 0.1 / 400;
constexpr double kMaxCurvature = 3.0 / (3000.0 * 3000) + 0.1 / (400.0 * 400);

Curve sampled(int every, int last) {
  Curve c;
  for (int t = 0; t <= last; t += every) {
    c.x.push_back(t);
    c.y.push_back(signal(t));
  }
  return c;
}

}  // namespace

class TestCurveDrawing : public QObject {
  Q_OBJECT

 private slots:
  void spikeAtEveryZoom_data() {
    QTest::addColumn<int>("pixels");
    QTest::newRow("1 px") << 1;
    QTest::newRow("7 px") << 7;
    QTest::newRow("800 px") << 800;
    QTest::newRow("1920 px") << 1920;
  }
  void spikeAtEveryZoom() {
    QFETCH(int, pixels);
    const size_t n = 1'000'000, spikeAt = 654'321;
    const Curve c = spiky(n, spikeAt, 50.0);
    // Zoom in on the spike, halving the range 20 times, off-centre so the
    // spike falls anywhere in its column.
    double lo = c.x.front(), hi = c.x.back();
    for (int zoom = 0; zoom < 21; ++zoom) {
      const auto kept = decimateM4(c.x, c.y, lo, hi, pixels);
      QVERIFY2(has(kept, spikeAt), qPrintable(QString("zoom %1: spike lost").arg(zoom)));
      QVERIFY(has(kept, 0) && has(kept, n - 1));  // the curve's first and last, always
      const size_t first = size_t(std::lower_bound(c.x.begin(), c.x.end(), lo) - c.x.begin());
      const size_t end = size_t(std::upper_bound(c.x.begin(), c.x.end(), hi) - c.x.begin());
      QVERIFY(has(kept, first) && has(kept, end - 1));  // the view's first and last
      if (first > 0) QVERIFY(has(kept, first - 1));     // the line into the view
      if (end < n) QVERIFY(has(kept, end));             // and out of it
      QVERIFY(kept.size() <= size_t(4 * pixels + 4));
      QVERIFY(std::is_sorted(kept.begin(), kept.end()));
      const double width = (hi - lo) / 2;
      const double centre = c.x[spikeAt] + width * 0.37;
      lo = std::max(c.x.front(), centre - width / 2 - width * 0.1);
      hi = std::min(c.x.back(), lo + width);
    }
  }

  // Column by column: the lowest and highest raw value of each pixel column
  // (found here by scanning every raw point) are among the kept points of
  // that column, and so are its first and last points.
  void columnsAgainstBruteForce() {
    const Curve c = spiky(200'000, 123'457, -30.0);
    const double lo = 1000.5, hi = 350'000.25;
    const int pixels = 640;
    const auto kept = decimateM4(c.x, c.y, lo, hi, pixels);
    auto column = [&](double x) {
      return std::min(pixels - 1, int(std::floor((x - lo) / (hi - lo) * pixels)));
    };
    std::vector<double> rawMin(pixels, INFINITY), rawMax(pixels, -INFINITY);
    std::vector<double> keptMin(pixels, INFINITY), keptMax(pixels, -INFINITY);
    std::vector<long> firstIn(pixels, -1), lastIn(pixels, -1);
    for (size_t i = 0; i < c.x.size(); ++i) {
      if (c.x[i] < lo || c.x[i] > hi) continue;
      const int k = column(c.x[i]);
      rawMin[k] = std::min(rawMin[k], c.y[i]);
      rawMax[k] = std::max(rawMax[k], c.y[i]);
      if (firstIn[k] < 0) firstIn[k] = long(i);
      lastIn[k] = long(i);
    }
    for (size_t i : kept) {
      if (c.x[i] < lo || c.x[i] > hi) continue;
      const int k = column(c.x[i]);
      keptMin[k] = std::min(keptMin[k], c.y[i]);
      keptMax[k] = std::max(keptMax[k], c.y[i]);
    }
    for (int k = 0; k < pixels; ++k) {
      QCOMPARE(keptMin[k], rawMin[k]);
      QCOMPARE(keptMax[k], rawMax[k]);
      if (firstIn[k] >= 0) QVERIFY(has(kept, size_t(firstIn[k])) && has(kept, size_t(lastIn[k])));
    }
  }

  void gapsAndBadInput() {
    const std::vector<double> x = {0, 1, 2, 3, 4, 5}, y = {1.5, NAN, 0.5, 3, INFINITY, 1};
    const auto kept = decimateM4(x, y, 0, 5, 1);
    QVERIFY(has(kept, 1));                  // the first NaN of the column: the line breaks there
    QVERIFY(has(kept, 2) && has(kept, 3));  // lowest and highest finite
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decimateM4(x, y, 5, 0, 10));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decimateM4(x, y, 0, 5, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decimateM4(x, y, 0, NAN, 10));
    const std::vector<double> shuffled = {0, 2, 1, 3, 4, 5};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decimateM4(shuffled, y, 0, 5, 10));
    const std::vector<double> shortY = {1, 2};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decimateM4(x, shortY, 0, 5, 10));
    QVERIFY(decimateM4({}, {}, 0, 1, 10).empty());
  }

  // The same curve logged every step and every 10 steps: at every step both
  // have, the time-weighted EMA differs by at most 10 * max|y'| (each point
  // holds its value over the 10 steps before it), the moving average by at
  // most 10^2 / 8 * max|y''| (straight lines between points 10 apart). The
  // debiased EMA (weight per point) is not density-independent: it differs
  // by far more, which is why the other two exist.
  void smoothingDoesNotDependOnDensity() {
    const Curve dense = sampled(1, 20000), sparse = sampled(10, 20000);
    struct Case {
      Smoothing s;
      double bound;
    };
    const Case cases[] = {
        {{SmoothingMethod::TimeWeightedEma, 0, 200}, 10 * kMaxSlope},
        {{SmoothingMethod::CentredMovingAverage, 0, 500}, 100.0 / 8 * kMaxCurvature},
    };
    for (const Case& c : cases) {
      const auto a = smoothCurve(dense.x, dense.y, c.s);
      const auto b = smoothCurve(sparse.x, sparse.y, c.s);
      double worst = 0;
      for (size_t j = 0; j < sparse.x.size(); ++j)
        worst = std::max(worst, std::abs(a[size_t(sparse.x[j])] - b[j]));
      QVERIFY2(
          worst <= c.bound,
          qPrintable(QString("%1: %2 > %3")
                         .arg(QString::fromStdString(std::string(smoothingMethodName(c.s.method))))
                         .arg(worst)
                         .arg(c.bound)));
      qInfo("%s: %g between the samplings (bound %g)",
            std::string(smoothingMethodName(c.s.method)).c_str(), worst, c.bound);
      QVERIFY(worst > 0);  // two samplings really were compared
    }
    // The per-point EMA with the weight that matches a 200-step half-life
    // for the dense run.
    const double w = std::exp2(-1.0 / 200);
    const auto a = smoothCurve(dense.x, dense.y, {SmoothingMethod::DebiasedEma, w, 0});
    const auto b = smoothCurve(sparse.x, sparse.y, {SmoothingMethod::DebiasedEma, w, 0});
    double worst = 0;
    for (size_t j = 0; j < sparse.x.size(); ++j)
      worst = std::max(worst, std::abs(a[size_t(sparse.x[j])] - b[j]));
    qInfo("debiased EMA: %g between the samplings", worst);
    QVERIFY(worst > 10 * 10 * kMaxSlope);
  }

  void smoothingByHand() {
    const std::vector<double> x = {0, 1, 3}, y = {1, 2, 4};
    // Half-life 1: a = 1/2 over one step, 1/4 over two.
    const auto t = smoothCurve(x, y, {SmoothingMethod::TimeWeightedEma, 0, 1});
    QCOMPARE(t[0], 1.0);
    QCOMPARE(t[1], 1.5);
    QCOMPARE(t[2], 0.25 * 1.5 + 0.75 * 4);
    // Window 2 around x=1: [0, 2]; the lines 1->2 on [0,1] (area 1.5) and
    // 2->3 on [1,2] (area 2.5): mean 2. Around x=0: [0, 1]: 1.5. Around
    // x=3: [2, 3]: the line 3->4: 3.5.
    const auto m = smoothCurve(x, y, {SmoothingMethod::CentredMovingAverage, 0, 2});
    QCOMPARE(m[0], 1.5);
    QCOMPARE(m[1], 2.0);
    QCOMPARE(m[2], 3.5);
    // NaN passes through and takes no part.
    const std::vector<double> yn = {1, NAN, 4};
    const auto tn = smoothCurve(x, yn, {SmoothingMethod::TimeWeightedEma, 0, 1});
    QVERIFY(std::isnan(tn[1]));
    QCOMPARE(tn[2], 0.125 * 1 + 0.875 * 4);  // three steps from the last finite point
    // TensorBoard's debiased EMA, as the app has always drawn it.
    const auto e = smoothCurve(x, y, {SmoothingMethod::DebiasedEma, 0.5, 0});
    QCOMPARE(e[1], (0.5 * 0.5 * 1 + 0.5 * 2) / 0.75);
    QCOMPARE(halfLifeForWeight(0.5, 10), 10.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             smoothCurve(x, y, {SmoothingMethod::TimeWeightedEma, 0, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             smoothCurve(x, y, {SmoothingMethod::DebiasedEma, 1.0, 0}));
    const std::vector<double> back = {0, 2, 1};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             smoothCurve(back, y, {SmoothingMethod::CentredMovingAverage, 0, 1}));
    SmoothingMethod m2{};
    QVERIFY(parseSmoothingMethod("time-ema", m2) && m2 == SmoothingMethod::TimeWeightedEma);
    QVERIFY(!parseSmoothingMethod("gaussian", m2));
  }
};

QTEST_GUILESS_MAIN(TestCurveDrawing)
#include "tst_curve_drawing.moc"
