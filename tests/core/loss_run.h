#pragma once
// A run folder the remote tests write: a metrics.jsonl whose loss the test
// knows exactly (each value written with 17 digits: it reads back as the
// double the test computes).

#include <QDir>
#include <QFile>
#include <QString>
#include <QtTest>

namespace ckpt::test {

// `dir`/metrics.jsonl of `steps` lines: {"step": s, "loss": base - s / divisor}.
inline void writeLossRun(const QString& dir, int steps, double base, double divisor) {
  QVERIFY(QDir().mkpath(dir));
  QFile f(dir + "/metrics.jsonl");
  QVERIFY(f.open(QIODevice::WriteOnly));
  QByteArray text;
  for (int s = 1; s <= steps; ++s)
    text += QString("{\"step\": %1, \"loss\": %2}\n")
                .arg(s)
                .arg(base - s / divisor, 0, 'g', 17)
                .toUtf8();
  QCOMPARE(f.write(text), qint64(text.size()));
}

}  // namespace ckpt::test
