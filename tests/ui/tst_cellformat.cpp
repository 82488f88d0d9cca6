// The browser's Modified text (cellformat.h) keeps the text of the last
// local minute: every second of a stretch of time, in order and out of
// order, gives what strftime gives for it, across minute and hour
// boundaries, a daylight-saving change, and a zone whose offset had
// seconds (Amsterdam before 1937: +00:19:32, and a POSIX zone of that
// offset: its minutes begin 28 s into UTC's).
#include <QtTest>

#include <cstdlib>
#include <ctime>
#include <random>

#include "browser/cellformat.h"

using namespace ckpt;

namespace {

QString strftimeText(int64_t secs) {
  const time_t t = static_cast<time_t>(secs);
  struct tm local {};
  localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &local);
  return QString::fromLatin1(buf);
}

}  // namespace

class TestCellFormat : public QObject {
  Q_OBJECT

 private slots:
  void timeTextIsStrftimes_data() {
    QTest::addColumn<QByteArray>("zone");
    QTest::addColumn<qint64>("from");
    QTest::addColumn<int>("seconds");
    // 2026-03-29 00:55 UTC: Berlin goes from +01:00 to +02:00 at 01:00 UTC.
    QTest::newRow("Berlin, summer time begins")
        << QByteArray("Europe/Berlin") << qint64(1774745700) << 600;
    QTest::newRow("UTC") << QByteArray("UTC") << qint64(1796000000) << 400;
    // 1930-06-01: Amsterdam's time was UTC+00:19:32.
    QTest::newRow("Amsterdam 1930") << QByteArray("Europe/Amsterdam") << qint64(-1248998400) << 400;
    // A POSIX zone 19 min 32 s east of UTC: its minutes begin 28 s into UTC's.
    QTest::newRow("UTC+00:19:32") << QByteArray("XST-00:19:32") << qint64(1796000000) << 400;
    QTest::newRow("Kathmandu") << QByteArray("Asia/Kathmandu") << qint64(1796000000) << 400;
  }

  void timeTextIsStrftimes() {
    QFETCH(QByteArray, zone);
    QFETCH(qint64, from);
    QFETCH(int, seconds);
    qputenv("TZ", zone);
    tzset();
    for (int64_t s = from; s < from + seconds; ++s) QCOMPARE(timeText(s), strftimeText(s));
    std::mt19937 random(7);
    std::uniform_int_distribution<int> pick(0, seconds - 1);
    for (int i = 0; i < 2000; ++i) {
      const int64_t s = from + pick(random);
      QCOMPARE(timeText(s), strftimeText(s));
    }
    QCOMPARE(timeText(0), QString());
  }
};

QTEST_GUILESS_MAIN(TestCellFormat)
#include "tst_cellformat.moc"
