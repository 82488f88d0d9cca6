#include "curves/curveaxes.h"

#include <qcustomplot.h>
#include <QDateTime>
#include <array>
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

QString elapsedText(double x) {
  const qint64 s = qint64(std::llround(std::abs(x)));
  return QString("%1%2:%3:%4")
      .arg(x < 0 && s > 0 ? "-" : "")
      .arg(s / 3600)
      .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
      .arg(s % 60, 2, 10, QLatin1Char('0'));
}

double niceDays(double days) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(days)));
  for (double f : {1.0, 2.0, 5.0})
    if (f * magnitude >= days) return f * magnitude;
  return 10 * magnitude;
}

// A tick step of whole seconds, minutes, hours or days for about `ticks`
// ticks over `range`; 0 below a second (the caller's decimal steps then).
double durationStep(const QCPRange& range, int ticks) {
  static constexpr std::array<double, 18> kSteps{
      1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  const double raw = range.size() / std::max(1, ticks);
  if (!(raw >= 1)) return 0;
  for (double s : kSteps)
    if (s >= raw) return s;
  return 86400 * niceDays(raw / 86400);  // days: 1, 2, 5 times a power of ten of them
}

// Wall time as logged: Unix times on a clock in local time, the date on
// the first tick and wherever the day changes ("3 Dec 12:00", "18:00",
// "4 Dec", "06:00": "d MMM hh:mm" on every tick overlapped on a narrow
// chart); elapsed seconds as h:mm:ss on whole seconds, minutes or hours.
class ClockTicker : public QCPAxisTickerDateTime {
 protected:
  double getTickStep(const QCPRange& range) override {
    m_clock = range.upper >= kUnixTimeFloor;
    if (!m_clock) {
      const double step = durationStep(range, tickCount());
      return step > 0 ? step : 1;
    }
    const double step = QCPAxisTickerDateTime::getTickStep(range);
    m_seconds = step < 60;
    return step;
  }
  int getSubTickCount(double tickStep) override {
    return m_clock ? QCPAxisTickerDateTime::getSubTickCount(tickStep) : 0;
  }
  QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
    // The date ticker snaps to days and months: not for elapsed seconds.
    return m_clock ? QCPAxisTickerDateTime::createTickVector(tickStep, range)
                   : QCPAxisTicker::createTickVector(tickStep, range);
  }
  QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar,
                                     int) override {
    QVector<QString> labels;
    labels.reserve(ticks.size());
    QDate previous;
    for (double tick : ticks) {
      if (!m_clock) {
        labels << elapsedText(tick);
        continue;
      }
      const QDateTime t = keyToDateTime(tick);
      const QString time = t.toString(m_seconds ? "hh:mm:ss" : "hh:mm");
      if (t.date() == previous)
        labels << time;
      else if (t.time() == QTime(0, 0))
        labels << locale.toString(t.date(), "d MMM");
      else
        labels << locale.toString(t.date(), "d MMM") + ' ' + time;
      previous = t.date();
    }
    return labels;
  }

 private:
  bool m_clock = true;
  bool m_seconds = false;
};

// Relative time: ticks on whole seconds, minutes, hours or days, labelled
// with their units (durationText); below a second, decimal fractions.
class DurationTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    const double step = durationStep(range, tickCount());
    return step > 0 ? step : QCPAxisTicker::getTickStep(range);
  }
  int getSubTickCount(double) override { return 0; }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    return durationText(tick);
  }
};

}  // namespace

QString axisLabel(CurveAxis axis) {
  switch (axis) {
    case CurveAxis::Step:
      return QObject::tr("step");
    case CurveAxis::RelativeStep:
      return QObject::tr("relative step");
    case CurveAxis::Tokens:
      return QObject::tr("tokens");
    case CurveAxis::WallTime:
      return QObject::tr("wall time");
    case CurveAxis::RelativeTime:
      return QObject::tr("relative time");
  }
  return {};
}

bool isTimeAxis(CurveAxis axis) {
  return axis == CurveAxis::WallTime || axis == CurveAxis::RelativeTime;
}

QString durationText(double seconds) {
  if (!std::isfinite(seconds)) return QString::number(seconds);
  const QString sign = seconds < 0 ? QStringLiteral("-") : QString();
  // In milliseconds: tick values such as 0.1 * 3 carry rounding noise.
  const qint64 ms = qint64(std::llround(std::abs(seconds) * 1000));
  if (ms == 0) return QStringLiteral("0");
  const qint64 d = ms / 86'400'000, h = ms / 3'600'000 % 24, m = ms / 60'000 % 60;
  const double sec = double(ms % 60'000) / 1000;
  // Every unit that is not zero: ticks fall on multiples of their step, so
  // coarse ticks read "2h", fine ones "1h 5s", and no two ticks read alike.
  QStringList parts;
  if (d) parts << QString::number(d) + "d";
  if (h) parts << QString::number(h) + "h";
  if (m) parts << QString::number(m) + "m";
  if (sec > 0) parts << QString::number(sec, 'g', 5) + "s";
  return sign + parts.join(' ');
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
    case CurveAxis::RelativeStep:
      return groupedNumber(uint64_t(std::max(0.0, std::round(x))));
    case CurveAxis::Tokens:
      return siText(x);
    case CurveAxis::WallTime:
      if (x >= kUnixTimeFloor)
        return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(x * 1000)))
            .toString("yyyy-MM-dd hh:mm:ss");
      return elapsedText(x);
    case CurveAxis::RelativeTime:
      return elapsedText(x);
  }
  return {};
}

QString axisSpanText(CurveAxis axis, double span) {
  if (isTimeAxis(axis)) return elapsedText(span);
  if (axis == CurveAxis::Tokens) return QObject::tr("%1 tokens").arg(siText(span));
  return QObject::tr("%1 steps").arg(axisValueText(axis, span));
}

void setXTicker(QCPAxis* axis, CurveAxis kind) {
  if (kind == CurveAxis::WallTime)
    axis->setTicker(QSharedPointer<ClockTicker>::create());
  else if (kind == CurveAxis::RelativeTime)
    axis->setTicker(QSharedPointer<DurationTicker>::create());
  else
    axis->setTicker(QSharedPointer<SiTicker>::create());
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
