// A series' points as columns (series_points.h): whatever is pushed, popped,
// cut and appended reads back exactly as the same operations on a plain
// std::vector<MetricPoint> (bit for bit: -0.0, NaN, huge and wrapping
// steps), and a column that is an arithmetic progression costs nothing
// while one that is not costs 8 bytes a point.
#include <QtTest>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bulk_memory.h"  // core/index/src
#include "ckpt/index/series_points.h"

using namespace ckpt;

namespace {

bool sameDouble(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// Every point, field by field, against the plain list; "" when equal.
QString compare(const SeriesPoints& got, const std::vector<MetricPoint>& want) {
  if (got.size() != want.size())
    return QString("%1 points, want %2").arg(got.size()).arg(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const MetricPoint& w = want[i];
    const MetricPoint g = got[i];
    const bool wallSame = g.wallTime.has_value() == w.wallTime.has_value() &&
                          (!w.wallTime || sameDouble(*g.wallTime, *w.wallTime));
    if (g.step != w.step || got.step(i) != w.step || !sameDouble(g.value, w.value) ||
        !sameDouble(got.value(i), w.value) || !wallSame || g.tokens != w.tokens)
      return QString("point %1: step %2 value %3, want step %4 value %5")
          .arg(i)
          .arg(g.step)
          .arg(g.value)
          .arg(w.step)
          .arg(w.value);
  }
  // Iteration gives the same points.
  size_t i = 0;
  for (const MetricPoint& p : got)
    if (p.step != want[i++].step) return QString("iteration differs at %1").arg(i - 1);
  return {};
}

// What the kernel says about transparent huge pages ("[madvise]" or
// "[always]": bulk memory is used), read here on our own.
bool bulkMemoryOn() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return mode.find("[madvise]") != std::string::npos || mode.find("[always]") != std::string::npos;
#endif
}

// Whether the mapping that holds `p` was advised MADV_HUGEPAGE: its
// VmFlags in /proc/self/smaps have "hg".
bool hugePagesAdvised(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 &&
        line.find(' ') != std::string::npos && line.find('-') < line.find(' ')) {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return (" " + line.substr(8) + " ").find(" hg ") != std::string::npos;
  }
  return false;
}

// Random runs of pushes (regular stretches, irregular ones, special
// values), pops, cuts and appends, done to the columns and to a plain vector.
struct RandomOps {
  explicit RandomOps(uint64_t seed) : rng(seed) {
    step = pick(2) ? 0 : std::numeric_limits<int64_t>::max() - 5000;
    stride = 1 + pick(10);
  }
  int pick(int n) { return int(rng() % uint64_t(n)); }
  MetricPoint make(int64_t at) {
    static const double specials[] = {0.0,
                                      -0.0,
                                      std::nan(""),
                                      -std::nan(""),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      1e308,
                                      5e-324,
                                      0.1,
                                      0.30000000000000004};
    MetricPoint p;
    p.step = at;
    switch (pick(4)) {
      case 0:
        p.value = specials[pick(10)];
        break;
      case 1:
        p.value = 0.25 * double(at);
        break;  // a progression
      case 2:
        p.value = 3e-4;
        break;  // constant
      default:
        p.value = std::ldexp(double(rng() >> 11), -40);
        break;
    }
    if (pick(3) != 0) p.wallTime = pick(2) ? 1.7e9 + 0.5 * double(at) : specials[pick(10)];
    if (std::isnan(p.wallTime.value_or(0))) p.wallTime.reset();  // NaN reads as "none"
    if (pick(3) != 0) p.tokens = pick(2) ? at * 4096 : int64_t(rng() >> 1);
    return p;
  }
  void run(SeriesPoints& got, std::vector<MetricPoint>& want, int count) {
    for (int op = 0; op < count; ++op) {
      const int what = pick(20);
      if (what < 14) {
        // Steps in a progression most of the time, now and then a jump (and
        // past INT64_MAX the wrap, which the column must still read back).
        step = int64_t(uint64_t(step) + uint64_t(pick(8) ? stride : 1 + pick(1000)));
        const MetricPoint p = make(step);
        if (pick(2))
          got.push_back(p);
        else
          got.push(p.step, p.value, p.wallTime, p.tokens);
        want.push_back(p);
      } else if (what < 16 && !want.empty()) {
        got.pop_back();
        want.pop_back();
      } else if (what < 18 && !want.empty()) {
        // Anywhere, or (cutNearEnd) within 20 of the end: a long series kept long.
        const size_t n =
            cutNearEnd ? want.size() - size_t(pick(int(std::min<size_t>(want.size(), 20)) + 1))
                       : size_t(pick(int(want.size()) + 1));
        got.truncate(n);
        want.resize(n);
      } else {
        SeriesPoints more;
        std::vector<MetricPoint> moreWant;
        for (int k = pick(50); k > 0; --k) {
          step = int64_t(uint64_t(step) + uint64_t(stride));
          const MetricPoint p = make(step);
          more.push_back(p);
          moreWant.push_back(p);
        }
        got.append(more);
        want.insert(want.end(), moreWant.begin(), moreWant.end());
      }
    }
  }
  std::mt19937_64 rng;
  bool cutNearEnd = false;
  int64_t step = 0;
  int64_t stride = 1;
};

}  // namespace

class TestSeriesPoints : public QObject {
  Q_OBJECT
 private slots:
  // Random runs of pushes (regular stretches, irregular ones, special
  // values), pops, cuts and appends, against a plain vector.
  void randomOperations_data() {
    QTest::addColumn<int>("seed");
    for (int seed = 0; seed < 40; ++seed) QTest::newRow(qPrintable(QString::number(seed))) << seed;
  }
  void randomOperations() {
    QFETCH(int, seed);
    RandomOps ops{uint64_t(seed)};
    SeriesPoints got;
    std::vector<MetricPoint> want;
    ops.run(got, want, 3000);
    const QString why = compare(got, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    SeriesPoints copy;
    for (const MetricPoint& p : want) copy.push_back(p);
    QVERIFY(copy == got);
  }

  // A series as the metrics cache keeps it (save) and reads it back (load:
  // a big column's values in bulk memory, bulk_memory.h), then worked on as
  // a live run's is: pushed to (out of the loaded room, onto the heap), cut,
  // appended to, copied and moved. Against the plain vector all along.
  void loadedFromTheCache_data() {
    QTest::addColumn<int>("seed");
    for (int seed = 0; seed < 8; ++seed) QTest::newRow(qPrintable(QString::number(seed))) << seed;
  }
  void loadedFromTheCache() {
    QFETCH(int, seed);
    RandomOps ops(uint64_t(seed) + 100);
    ops.cutNearEnd = true;
    SeriesPoints built;
    std::vector<MetricPoint> want;
    // Enough points that a column of them is bulk memory (64 KiB: 8,192 values).
    while (want.size() < 30000) ops.run(built, want, 2000);
    std::string bytes;
    built.save(bytes);
    std::string_view in = bytes;
    SeriesPoints loaded;
    QVERIFY(loaded.load(in, want.size()));
    QVERIFY(in.empty());
    QString why = compare(loaded, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QVERIFY(loaded.valueData() != nullptr);  // random values: a vector
    if (bulkMemoryOn())
      QVERIFY2(hugePagesAdvised(loaded.valueData()),
               "a loaded column is not in memory advised for huge pages");
    ops.run(loaded, want, 3000);
    why = compare(loaded, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    SeriesPoints copied(loaded);
    why = compare(copied, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    SeriesPoints moved;
    moved.push(1, 2.0);
    moved = std::move(copied);
    why = compare(moved, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QCOMPARE(copied.size(), size_t(0));  // NOLINT(bugprone-use-after-move): moved from, empty
    // A second load into a series that holds bulk memory gives it back first.
    in = bytes;
    QVERIFY(loaded.load(in, 1 << 20));
    QVERIFY(loaded == built);
  }

  // A series given room up front (a metrics.jsonl's lines, as the reader
  // reserves them) takes it from bulk memory once a column turns into a
  // vector; pushed past that room it moves to the heap, every value kept.
  void reservedRoomIsBulk() {
    RandomOps ops{7};
    SeriesPoints got;
    got.reserve(20000);
    std::vector<MetricPoint> want;
    for (int64_t i = 0; i < 15000; ++i) {
      const MetricPoint p = ops.make(i * 10);
      got.push_back(p);
      want.push_back(p);
    }
    QVERIFY(got.valueData() != nullptr);  // random values: a vector
    if (bulkMemoryOn())
      QVERIFY2(hugePagesAdvised(got.valueData()),
               "a column in the room reserved for it is not in memory advised for huge pages");
    for (int64_t i = 15000; i < 26000; ++i) {
      const MetricPoint p = ops.make(i * 10);
      got.push_back(p);
      want.push_back(p);
    }
    const QString why = compare(got, want);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    if (bulkMemoryOn()) QVERIFY(!hugePagesAdvised(got.valueData()));  // grown: the heap's
  }

  // Bulk memory's regions: each is unmapped once every block carved from
  // it is released and the thread that carved it has ended (blocks
  // released on another thread, as a run loaded on the pool and dropped on
  // the GUI thread is); more than one region's worth makes several.
  void bulkRegionsGiveBack() {
    if (!bulkMemoryOn()) QSKIP("no transparent huge pages here: no bulk memory");
    const size_t before = detail::bulkRegionsMapped();
    std::vector<SeriesPoints> kept;
    std::thread loader([&kept] {
      SeriesPoints one;
      for (int64_t i = 0; i < 20000; ++i)
        one.push(i * 3 + (i % 7), double(i) * 0.37 + 1e-3 * double(i % 11));
      std::string bytes;
      one.save(bytes);
      for (int k = 0; k < 300; ++k) {  // 300 x 320 KB: three 32 MiB regions
        std::string_view in = bytes;
        SeriesPoints s;
        if (!s.load(in, 1 << 20)) return;
        kept.push_back(std::move(s));
      }
    });
    loader.join();
    QCOMPARE(kept.size(), size_t(300));
    QVERIFY2(detail::bulkRegionsMapped() >= before + 3,
             qPrintable(QString::number(detail::bulkRegionsMapped() - before)));
    kept.erase(kept.begin(), kept.begin() + 150);
    QVERIFY(detail::bulkRegionsMapped() > before);  // the rest still hold theirs
    kept.clear();
    QCOMPARE(detail::bulkRegionsMapped(), before);
    // A big block has a mapping of its own, gone with it.
    void* big = detail::bulkAllocate(size_t(40) << 20);
    QVERIFY(big != nullptr);
    std::memset(big, 1, size_t(40) << 20);
    QCOMPARE(detail::bulkRegionsMapped(), before + 1);
    detail::bulkRelease(big);
    QCOMPARE(detail::bulkRegionsMapped(), before);
    QCOMPARE(detail::bulkAllocate(detail::kBulkMinBytes - 1), nullptr);  // the heap's
  }

  // The bytes a point costs: nothing for progressions (steps every 10, a
  // constant, tokens = step x 4096, wall time every 0.5 s), 8 for each
  // irregular column, 16 for irregular steps and values, nothing for wall
  // time / tokens a series never has.
  void bytesPerPoint() {
    constexpr size_t n = 100000;
    SeriesPoints regular, values, irregular;
    std::mt19937_64 rng(1);
    int64_t step = 0;
    for (size_t i = 0; i < n; ++i) {
      regular.push(int64_t(i) * 10, 3e-4, 100.0 + 0.5 * double(i), int64_t(i) * 40960);
      values.push(int64_t(i) * 10, double(rng() >> 11));
      step += 1 + int64_t(rng() % 3);
      irregular.push(step, double(rng() >> 11));
    }
    QCOMPARE(regular.bytes(), size_t(0));
    QCOMPARE(regular.size(), n);
    QCOMPARE(regular.back().tokens, std::optional<int64_t>(int64_t(n - 1) * 40960));
    QVERIFY(regular.hasWallTimes() && regular.hasTokens());
    QVERIFY(!values.hasWallTimes() && !values.hasTokens());
    // A vector grows by half again: at most 1.5x what the points need.
    QVERIFY2(values.bytes() >= 8 * n && values.bytes() <= 12 * n,
             qPrintable(QString::number(values.bytes())));
    QVERIFY2(irregular.bytes() >= 16 * n && irregular.bytes() <= 24 * n,
             qPrintable(QString::number(irregular.bytes())));
    // With the room asked for first, exactly 16 bytes a point.
    SeriesPoints exact;
    exact.reserve(n);
    rng.seed(1);
    step = 0;
    for (size_t i = 0; i < n; ++i) {
      step += 1 + int64_t(rng() % 3);
      exact.push(step, double(rng() >> 11));
    }
    QCOMPARE(exact.bytes(), 16 * n);
  }

  // A field that only later points have: the earlier ones read as none.
  void fieldStartedLater() {
    SeriesPoints s;
    s.push(1, 1.0);
    s.push(2, 2.0);
    s.push(3, 3.0, 12.5, 99);
    s.push(4, 4.0);
    QCOMPARE(s.wallTime(0), std::optional<double>());
    QCOMPARE(s.tokens(1), std::optional<int64_t>());
    QCOMPARE(s.wallTime(2), std::optional<double>(12.5));
    QCOMPARE(s.tokens(2), std::optional<int64_t>(99));
    QCOMPARE(s.wallTime(3), std::optional<double>());
    QCOMPARE(s.lowerBound(3), size_t(2));
    QCOMPARE(s.lowerBound(0), size_t(0));
    QCOMPARE(s.lowerBound(5), size_t(4));
  }

  // The smallest step and finite wall time, read off the columns: a
  // progression's ends, a vector's values, a NaN, an infinity and a column
  // missing on some points left out. By hand.
  void smallestStepAndWallTime() {
    SeriesPoints rising;  // steps and wall times progressions
    for (int64_t i = 0; i < 50; ++i) rising.push(100 + 10 * i, 1.0, 5.0 + 0.5 * double(i));
    QCOMPARE(rising.minStep(), std::optional<int64_t>(100));
    QCOMPARE(rising.minWallTime(), std::optional<double>(5.0));
    SeriesPoints falling;  // a restart's steps counting down (progression, negative stride)
    for (int64_t i = 0; i < 5; ++i) falling.push(40 - 10 * i, 1.0, 9.0 - double(i));
    QCOMPARE(falling.minStep(), std::optional<int64_t>(0));
    QCOMPARE(falling.minWallTime(), std::optional<double>(5.0));
    SeriesPoints dense;  // vectors: the smallest is in the middle
    const int64_t steps[] = {7, 3, 9, 5};
    const double walls[] = {2.0, std::nan(""), -std::numeric_limits<double>::infinity(), 1.5};
    for (int i = 0; i < 4; ++i) dense.push(steps[i], 0.0, walls[i]);
    QCOMPARE(dense.minStep(), std::optional<int64_t>(3));
    QCOMPARE(dense.minWallTime(), std::optional<double>(1.5));
    SeriesPoints later;  // the wall time from the third point on
    later.push(1, 0.0);
    later.push(2, 0.0);
    later.push(3, 0.0, 30.0);
    later.push(4, 0.0, 20.0);
    QCOMPARE(later.minWallTime(), std::optional<double>(20.0));
    SeriesPoints none;
    QCOMPARE(none.minStep(), std::optional<int64_t>());
    none.push(5, 1.0);
    QCOMPARE(none.minStep(), std::optional<int64_t>(5));
    QCOMPARE(none.minWallTime(), std::optional<double>());
    // A step progression that wraps past the largest int64: its smallest
    // is not at an end.
    SeriesPoints wraps;
    const int64_t big = std::numeric_limits<int64_t>::max() - 5;
    for (int64_t i = 0; i < 4; ++i) wraps.push(int64_t(uint64_t(big) + 4 * uint64_t(i)), 1.0);
    QCOMPARE(wraps.stepData(), nullptr);  // still a progression
    QCOMPARE(wraps.minStep(), std::optional<int64_t>(wraps.step(2)));
    QVERIFY(wraps.step(2) < 0);
  }
};

QTEST_GUILESS_MAIN(TestSeriesPoints)
#include "tst_series_points.moc"
