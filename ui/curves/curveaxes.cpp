#include "curves/curveaxes.h"

#include <qcustomplot.h>
#include <cmath>

#include "textformat.h"

namespace ckpt {
namespace {

// Tick labels with k/M/B suffixes: token counts run to billions.
class SiTicker : public QCPAxisTicker {
 protected:
  QString getTickLabel(double tick, const QLocale&, QChar, int) override { return siText(tick); }
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
    auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
    ticker->setSubTickCount(8);
    axis->setTicker(ticker);
    axis->setNumberFormat("gb");
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
