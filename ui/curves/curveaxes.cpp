#include "curves/curveaxes.h"

#include <qcustomplot.h>
#include <cmath>

#include "textformat.h"

namespace ckpt {
namespace {

// Tick labels with k/M/B suffixes: token counts run to billions. Steps
// and tokens are whole numbers: no tick between two of them.
class SiTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    return std::max(1.0, QCPAxisTicker::getTickStep(range));
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return siText(tick); }
};

// A log axis labelled wherever the range is: a tick at every decade when it
// spans three or more, else at 1, 2 and 5 times a power of ten (and at every
// multiple when even those are fewer than three), with the multiples as sub
// ticks. QCustomPlot's log ticker labels decades only: a loss from 1.8 to
// 4.5 got no label at all.
class LogTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange&) override { return 1; }
  int getSubTickCount(double) override { return 0; }
  QVector<double> createTickVector(double, const QCPRange& range) override {
    QVector<double> ticks;
    if (!(range.lower > 0) || !(range.upper > range.lower)) return ticks;
    const int first = int(std::floor(std::log10(range.lower)));
    const int last = int(std::ceil(std::log10(range.upper)));
    if (last - first > 60) return ticks;  // nothing sensible to label
    auto collect = [&](std::initializer_list<int> multiples) {
      QVector<double> out;
      for (int e = first; e <= last; ++e)
        for (int m : multiples) {
          const double v = m * std::pow(10.0, e);
          if (v >= range.lower && v <= range.upper) out << v;
        }
      return out;
    };
    if (std::log10(range.upper / range.lower) >= 3) {
      ticks = collect({1});
      // Many decades: every second or third one, as a linear axis thins.
      const int stride = int(std::ceil(ticks.size() / 8.0));
      if (stride > 1) {
        QVector<double> thin;
        for (qsizetype i = 0; i < ticks.size(); i += stride) thin << ticks[i];
        ticks = thin;
      }
      return ticks;
    }
    ticks = collect({1, 2, 5});
    if (ticks.size() < 3) ticks = collect({1, 2, 3, 4, 5, 6, 7, 8, 9});
    if (ticks.size() < 2) {
      // Less than a tenth of a decade: linear ticks do better.
      ticks.clear();
      const double span = range.upper - range.lower;
      const double magnitude = std::pow(10.0, std::floor(std::log10(span / 4)));
      double unit = magnitude;
      for (double f : {1.0, 2.0, 5.0, 10.0})
        if (span / (f * magnitude) <= 6) {
          unit = f * magnitude;
          break;
        }
      for (double v = std::ceil(range.lower / unit) * unit; v <= range.upper; v += unit) ticks << v;
    }
    return ticks;
  }
  QVector<double> createSubTickVector(int, const QVector<double>&) override { return {}; }
  QString getTickLabel(double tick, const QLocale& locale, QChar, int) override {
    return locale.toString(tick, 'g', 4);
  }
};

constexpr double kPad = 0.04;  // of the range, on each side

}  // namespace

QString axisLabel(CurveAxis axis) {
  switch (axis) {
    case CurveAxis::Step:
      return QObject::tr("step");
    case CurveAxis::WallTime:
      return QObject::tr("wall time");
    case CurveAxis::Tokens:
      return QObject::tr("tokens");
  }
  return {};
}

QString siText(double v) {
  const double a = std::abs(v);
  if (a < 1e3) return QString::number(v, 'g', 6);
  const char* suffix = a < 1e6 ? "k" : a < 1e9 ? "M" : a < 1e12 ? "B" : "T";
  const double scale = a < 1e6 ? 1e3 : a < 1e9 ? 1e6 : a < 1e12 ? 1e9 : 1e12;
  return QString::number(v / scale, 'g', 4) + QLatin1String(suffix);
}

QString axisValueText(CurveAxis axis, double x) {
  switch (axis) {
    case CurveAxis::Step:
      return groupedNumber(uint64_t(std::max(0.0, std::round(x))));
    case CurveAxis::WallTime: {
      const qint64 s = qint64(std::llround(std::max(0.0, x)));
      return QString("%1:%2:%3")
          .arg(s / 3600)
          .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
          .arg(s % 60, 2, 10, QLatin1Char('0'));
    }
    case CurveAxis::Tokens:
      return siText(x);
  }
  return {};
}

void setXTicker(QCPAxis* axis, CurveAxis kind) {
  if (kind == CurveAxis::WallTime) {
    auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
    ticker->setTimeFormat("%h:%m:%s");
    axis->setTicker(ticker);
  } else {
    axis->setTicker(QSharedPointer<SiTicker>::create());
  }
}

void setYScale(QCPAxis* axis, bool logarithmic) {
  if (logarithmic) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(QSharedPointer<LogTicker>::create());
    axis->setNumberFormat("g");
  } else {
    axis->setScaleType(QCPAxis::stLinear);
    axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    axis->setNumberFormat("g");
  }
}

void padRanges(QCPAxis* x, QCPAxis* y, bool logY) {
  QCPRange rx = x->range();
  const double wx = rx.size() > 0 ? rx.size() : std::max(1.0, std::abs(rx.lower));
  x->setRange(rx.lower - kPad * wx, rx.upper + kPad * wx);
  QCPRange ry = y->range();
  if (logY) {
    const double f = ry.size() > 0 ? std::pow(ry.upper / ry.lower, kPad) : 2.0;
    y->setRange(ry.lower / f, ry.upper * f);
  } else {
    const double wy = ry.size() > 0 ? ry.size() : std::max(1e-3, std::abs(ry.lower) * 0.1);
    y->setRange(ry.lower - kPad * wy, ry.upper + kPad * wy);
  }
}

}  // namespace ckpt
