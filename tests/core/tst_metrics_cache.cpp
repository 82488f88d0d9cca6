// The metrics cache (metrics_cache.h) against reading the file whole
// without it: a second open answers from the cache and parses no byte;
// lines appended are the only bytes parsed, and the result is what a whole
// read gives (a restart in the appended lines included); a rewritten or
// truncated file is read whole; a damaged or foreign cache file is
// rejected and rewritten; a file changed too recently is never trusted on
// its stat; nothing is written under the run's directory; CKPTSCOPE_NO_CACHE
// turns it off.
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/scanner.h"
#include "ckpt/index/wandb.h"

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

// Lines as our trainer writes metrics.jsonl (json.dumps of a dict per step).
std::string lines(int64_t from, int64_t to, double shift) {
  std::string out;
  for (int64_t s = from; s <= to; ++s) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "{\"step\": %lld, \"loss\": %.17g, \"lr\": 0.0003, \"tokens\": %lld, "
                  "\"wall_time\": %.17g}\n",
                  static_cast<long long>(s), 2.0 + 1.0 / double(s) + shift,
                  static_cast<long long>(s * 4096), 1.7e9 + 0.37 * double(s * s % 101));
    out += b;
  }
  return out;
}

void writeFile(const fs::path& p, const std::string& text, bool append = false) {
  std::ofstream out(p, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << text;
}

// An hour old: long enough before any read for its stat to be trusted.
void age(const fs::path& p) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(1));
}

struct Read {
  std::vector<FileSeries> series;
  uint64_t end = 0;
  std::vector<std::string> problems;
};

Read cached(const fs::path& p) {
  Read r;
  r.series = readMetricsJsonlCached(p.string(), &r.end, &r.problems);
  return r;
}

// The truth: the file read whole, no cache.
Read whole(const fs::path& p) {
  Read r;
  r.series = readMetricsJsonlSeries(p.string(), &r.end, &r.problems);
  return r;
}

QString differs(const Read& a, const Read& b) {
  if (a.end != b.end) return QString("end %1 vs %2").arg(a.end).arg(b.end);
  if (a.series.size() != b.series.size()) return "series count";
  for (const FileSeries& s : a.series) {
    const auto it = std::find_if(b.series.begin(), b.series.end(),
                                 [&](const FileSeries& t) { return t.metric == s.metric; });
    if (it == b.series.end()) return QString::fromStdString("no " + s.metric);
    if (!(it->points == s.points))
      return QString::fromStdString(s.metric + ": points differ (" +
                                    std::to_string(s.points.size()) + " vs " +
                                    std::to_string(it->points.size()) + ")");
    if (it->restarts != s.restarts) return QString::fromStdString(s.metric + ": restarts differ");
  }
  return {};
}

// Rows as wandb before 0.10 wrote wandb-history.jsonl (json.dumps of the
// row dict: the logged keys, then _runtime, _timestamp and _step), one
// nested dict among them every 10th step (its numbers named "eval.loss").
std::string historyRows(int64_t from, int64_t to) {
  std::string out;
  for (int64_t s = from; s <= to; ++s) {
    char b[300];
    std::snprintf(b, sizeof b,
                  "{\"loss\": %.17g, \"acc\": %.17g, \"_runtime\": %.17g, \"_timestamp\": "
                  "%.17g, \"_step\": %lld}\n",
                  3.0 - 1.0 / double(s + 1), double(s % 7) / 8.0, 0.5 * double(s),
                  1.583e9 + 0.5 * double(s), static_cast<long long>(s));
    out += b;
    if (s % 10 == 0) {
      std::snprintf(b, sizeof b,
                    "{\"eval\": {\"loss\": %.17g}, \"_runtime\": %.17g, \"_timestamp\": %.17g, "
                    "\"_step\": %lld}\n",
                    2.5 + 1.0 / double(s + 3), 0.5 * double(s), 1.583e9 + 0.5 * double(s),
                    static_cast<long long>(s));
      out += b;
    }
  }
  return out;
}

Read cachedHistory(const fs::path& p) {
  Read r;
  r.series = readWandbHistoryCached(p.string(), &r.end, &r.problems);
  return r;
}

Read wholeHistory(const fs::path& p) {
  Read r;
  r.series = readWandbHistory(p.string(), &r.end, &r.problems);
  return r;
}

const FileSeries* seriesOf(const Read& r, const std::string& metric) {
  for (const FileSeries& s : r.series)
    if (s.metric == metric) return &s;
  return nullptr;
}

std::set<std::string> filesUnder(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(e.path().string());
  return out;
}

}  // namespace

class TestMetricsCache : public QObject {
  Q_OBJECT
  QTemporaryDir m_cache, m_runs;
  fs::path m_file;
  std::string m_text;  // what init() wrote

 private slots:
  void init() {
    qputenv("CKPTSCOPE_CACHE_DIR", m_cache.path().toUtf8());
    qunsetenv("CKPTSCOPE_NO_CACHE");
    setMetricsCacheEnabled(true);
    fs::remove_all(m_cache.path().toStdString());
    fs::create_directories(m_cache.path().toStdString());
    m_file = fs::path(m_runs.path().toStdString()) / "run1" / "metrics.jsonl";
    fs::create_directories(m_file.parent_path());
    // 3,000 steps, one bad line (a problem the cache must keep too).
    m_text = lines(1, 1500, 0) + "{\"step\": oops}\n" + lines(1501, 3000, 0);
    writeFile(m_file, m_text);
    age(m_file);
    resetMetricsCacheStats();
  }

  void secondOpenParsesNothing() {
    const auto runFiles = filesUnder(m_runs.path().toStdString());
    const Read first = cached(m_file);
    MetricsCacheStats s = metricsCacheStats();
    QCOMPARE(s.misses, uint64_t(1));
    QCOMPARE(s.bytesParsed, uint64_t(fs::file_size(m_file)));
    QCOMPARE(s.writes, uint64_t(1));
    const Read second = cached(m_file);
    s = metricsCacheStats();
    QCOMPARE(s.hits, uint64_t(1));
    QCOMPARE(s.bytesParsed, uint64_t(fs::file_size(m_file)));  // nothing more
    const Read truth = whole(m_file);
    QVERIFY2(differs(first, truth).isEmpty(), qPrintable(differs(first, truth)));
    QVERIFY2(differs(second, truth).isEmpty(), qPrintable(differs(second, truth)));
    QCOMPARE(second.problems, truth.problems);
    QCOMPARE(truth.problems.size(), size_t(1));
    // Exactly one point checked by hand: step 1500's loss.
    const auto loss = std::find_if(second.series.begin(), second.series.end(),
                                   [](const FileSeries& f) { return f.metric == "loss"; });
    QVERIFY(loss != second.series.end());
    QCOMPARE(loss->points.step(1499), int64_t(1500));
    QCOMPARE(loss->points.value(1499), 2.0 + 1.0 / 1500.0);
    QCOMPARE(loss->points.tokens(1499), std::optional<int64_t>(1500 * 4096));
    // The cache file is in the cache folder, nothing new under the runs.
    QVERIFY(fs::exists(metricsCacheFile(m_file.string())));
    QVERIFY(metricsCacheFile(m_file.string()).rfind(m_cache.path().toStdString(), 0) == 0);
    QCOMPARE(filesUnder(m_runs.path().toStdString()), runFiles);
  }

  // A job appends lines, restarting from an earlier step: only they are
  // parsed, and the series are the whole read's.
  void appendedBytesOnly() {
    (void)cached(m_file);
    const uint64_t before = fs::file_size(m_file);
    const std::string more = lines(3001, 3200, 0) + lines(2900, 3100, 0.5);
    writeFile(m_file, more, /*append=*/true);
    resetMetricsCacheStats();
    const Read r = cached(m_file);
    const MetricsCacheStats s = metricsCacheStats();
    QCOMPARE(s.appended, uint64_t(1));
    QCOMPARE(s.misses, uint64_t(0));
    QCOMPARE(s.bytesParsed, uint64_t(more.size()));
    QCOMPARE(fs::file_size(m_file), before + more.size());
    const Read truth = whole(m_file);
    QVERIFY2(differs(r, truth).isEmpty(), qPrintable(differs(r, truth)));
    const auto loss = std::find_if(r.series.begin(), r.series.end(),
                                   [](const FileSeries& f) { return f.metric == "loss"; });
    QCOMPARE(loss->restarts, std::vector<int64_t>{2900});
    QCOMPARE(loss->points.back().step, int64_t(3100));
    // A half-written last line is left for later, as a whole read leaves it.
    writeFile(m_file, "{\"step\": 3101, \"lo", true);
    age(m_file);
    resetMetricsCacheStats();
    const Read partial = cached(m_file);
    QCOMPARE(metricsCacheStats().bytesParsed, uint64_t(0));
    QCOMPARE(partial.end, fs::file_size(m_file) - 18);
    QVERIFY(differs(partial, whole(m_file)).isEmpty());
  }

  void rewrittenOrTruncatedReadWhole_data() {
    QTest::addColumn<bool>("sameSize");
    QTest::newRow("same size, other numbers") << true;
    QTest::newRow("truncated") << false;
  }
  void rewrittenOrTruncatedReadWhole() {
    QFETCH(bool, sameSize);
    (void)cached(m_file);
    const uint64_t size = fs::file_size(m_file);
    // The same size with one digit changed in the middle (not in the bytes
    // checksummed at the start and end: the new time tells), or cut to its
    // first 1,000 lines.
    std::string text = m_text;
    text[text.find("0.0003", text.size() / 2) + 5] = '4';
    writeFile(m_file, sameSize ? text : lines(1, 1000, 0));
    if (sameSize) QCOMPARE(fs::file_size(m_file), size);
    age(m_file);
    fs::last_write_time(m_file, fs::last_write_time(m_file) + std::chrono::seconds(7));
    resetMetricsCacheStats();
    const Read r = cached(m_file);
    QCOMPARE(metricsCacheStats().misses, uint64_t(1));
    QCOMPARE(metricsCacheStats().bytesParsed, uint64_t(fs::file_size(m_file)));
    QVERIFY(differs(r, whole(m_file)).isEmpty());
  }

  void damagedCacheRejected_data() {
    QTest::addColumn<int>("damage");
    QTest::newRow("a bit flipped in the points") << 0;
    QTest::newRow("cut short") << 1;
    QTest::newRow("not a cache file") << 2;
    QTest::newRow("another version") << 3;
  }
  void damagedCacheRejected() {
    QFETCH(int, damage);
    (void)cached(m_file);
    const std::string cacheFile = metricsCacheFile(m_file.string());
    std::string bytes;
    {
      std::ifstream in(cacheFile, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    QVERIFY(bytes.size() > 1000);
    if (damage == 0) bytes[bytes.size() - 100] ^= 0x10;
    if (damage == 1) bytes.resize(bytes.size() / 2);
    if (damage == 2) bytes = "{\"not\": \"ours\"}";
    if (damage == 3) bytes[8] = 2;
    writeFile(cacheFile, bytes);
    resetMetricsCacheStats();
    const Read r = cached(m_file);
    MetricsCacheStats s = metricsCacheStats();
    QCOMPARE(s.rejected, uint64_t(1));
    QCOMPARE(s.misses, uint64_t(1));
    QCOMPARE(s.writes, uint64_t(1));
    QVERIFY(differs(r, whole(m_file)).isEmpty());
    // Rewritten: the next open is a hit again.
    (void)cached(m_file);
    QCOMPARE(metricsCacheStats().hits, uint64_t(1));
  }

  // Written a moment ago: its size and time cannot tell a rewrite in the
  // same tick apart, so it is read whole every time.
  void freshFileNotTrusted() {
    writeFile(m_file, lines(1, 100, 0));
    resetMetricsCacheStats();
    (void)cached(m_file);
    (void)cached(m_file);
    QCOMPARE(metricsCacheStats().hits, uint64_t(0));
    QCOMPARE(metricsCacheStats().misses, uint64_t(2));
  }

  void disabled() {
    qputenv("CKPTSCOPE_NO_CACHE", "1");
    (void)cached(m_file);
    (void)cached(m_file);
    QCOMPARE(metricsCacheStats().writes, uint64_t(0));
    QCOMPARE(metricsCacheStats().hits, uint64_t(0));
    QVERIFY(!fs::exists(metricsCacheFile(m_file.string())));
    qunsetenv("CKPTSCOPE_NO_CACHE");
    setMetricsCacheEnabled(false);
    (void)cached(m_file);
    QVERIFY(!fs::exists(metricsCacheFile(m_file.string())));
  }

  // An older W&B SDK's wandb-history.jsonl goes through the cache as a
  // metrics.jsonl does: a second read parses nothing, an appended row is
  // the only thing parsed, and the series are the whole read's.
  void wandbHistoryCached() {
    const fs::path run =
        fs::path(m_runs.path().toStdString()) / "wandb" / "run-20200301_101500-old111";
    fs::create_directories(run);
    const fs::path file = run / "wandb-history.jsonl";
    writeFile(file, historyRows(0, 499));
    age(file);
    resetMetricsCacheStats();
    const Read first = cachedHistory(file);
    MetricsCacheStats s = metricsCacheStats();
    QCOMPARE(s.misses, uint64_t(1));
    QCOMPARE(s.writes, uint64_t(1));
    QCOMPARE(s.bytesParsed, uint64_t(fs::file_size(file)));
    QVERIFY(fs::exists(metricsCacheFile(file.string())));
    const Read second = cachedHistory(file);
    s = metricsCacheStats();
    QCOMPARE(s.hits, uint64_t(1));
    QCOMPARE(s.bytesParsed, uint64_t(fs::file_size(file)));
    const Read truth = wholeHistory(file);
    QVERIFY2(differs(first, truth).isEmpty(), qPrintable(differs(first, truth)));
    QVERIFY2(differs(second, truth).isEmpty(), qPrintable(differs(second, truth)));
    // Values by hand: step 499's loss, its wall time; eval.loss every 10th step.
    const FileSeries* loss = seriesOf(second, "loss");
    QVERIFY(loss);
    QCOMPARE(loss->points.size(), size_t(500));
    QCOMPARE(loss->points.step(499), int64_t(499));
    QCOMPARE(loss->points.value(499), 3.0 - 1.0 / 500.0);
    QCOMPARE(loss->points.back().wallTime, std::optional<double>(1.583e9 + 0.5 * 499));
    const FileSeries* eval = seriesOf(second, "eval.loss");
    QVERIFY(eval);
    QCOMPARE(eval->points.size(), size_t(50));

    // The second read answered from the cache file: a byte changed in place
    // (same size, same time) is not seen, the cached value is.
    {
      std::string text = historyRows(0, 499);
      const size_t at = text.find("\"_step\": 499}");
      const size_t lossAt = text.rfind("{\"loss\": 2.99", at);
      QVERIFY(at != std::string::npos && lossAt != std::string::npos);
      text[lossAt + 9] = '1';  // 2.99... -> 1.99...
      const auto when = fs::last_write_time(file);
      writeFile(file, text);
      fs::last_write_time(file, when);
      const Read fromCache = cachedHistory(file);
      QCOMPARE(seriesOf(fromCache, "loss")->points.value(499), 3.0 - 1.0 / 500.0);
      QVERIFY(seriesOf(wholeHistory(file), "loss")->points.value(499) < 2.0);
      writeFile(file, historyRows(0, 499));  // as it was, the time too
      fs::last_write_time(file, when);
    }

    // Rows appended (a new metric among them, and a restart at step 480):
    // only they are parsed.
    const std::string more = historyRows(500, 519) + historyRows(480, 530);
    writeFile(file, more, /*append=*/true);
    age(file);
    resetMetricsCacheStats();
    const Read grown = cachedHistory(file);
    s = metricsCacheStats();
    QCOMPARE(s.appended, uint64_t(1));
    QCOMPARE(s.misses, uint64_t(0));
    QCOMPARE(s.bytesParsed, uint64_t(more.size()));
    const Read grownTruth = wholeHistory(file);
    QVERIFY2(differs(grown, grownTruth).isEmpty(), qPrintable(differs(grown, grownTruth)));
    QCOMPARE(grown.problems, grownTruth.problems);
    QCOMPARE(seriesOf(grown, "loss")->restarts, std::vector<int64_t>{480});
    QCOMPARE(seriesOf(grown, "loss")->points.back().step, int64_t(530));

    // A row still being written: left for later, and said; once whole, read.
    const std::string row = historyRows(531, 531);
    writeFile(file, row.substr(0, 20), true);
    age(file);
    const Read partial = cachedHistory(file);
    QCOMPARE(partial.end, fs::file_size(file) - 20);
    QVERIFY2(differs(partial, wholeHistory(file)).isEmpty(), "partial");
    QCOMPARE(partial.problems.size(), size_t(1));
    QVERIFY(partial.problems[0].find(kWandbHistoryCutShort) != std::string::npos);
    writeFile(file, row.substr(20), true);
    age(file);
    resetMetricsCacheStats();
    const Read done = cachedHistory(file);
    QCOMPARE(metricsCacheStats().appended, uint64_t(1));
    QCOMPARE(metricsCacheStats().bytesParsed, uint64_t(row.size()));
    QVERIFY(done.problems.empty());
    QCOMPARE(seriesOf(done, "loss")->points.back().step, int64_t(531));
    QVERIFY2(differs(done, wholeHistory(file)).isEmpty(), "done");

    // The Curves tab's and the CLI's read goes through it too.
    const ScanResult scanned = scanDirectory(m_runs.path().toStdString() + "/wandb");
    QCOMPARE(scanned.runs.size(), size_t(1));
    resetMetricsCacheStats();
    const RunMetrics a = collectRunMetrics(scanned.runs[0]);
    QCOMPARE(metricsCacheStats().hits, uint64_t(1));
    QCOMPARE(metricsCacheStats().bytesParsed, uint64_t(0));
    QVERIFY(a.find("loss"));
    QVERIFY(a.find("loss")->points == seriesOf(done, "loss")->points);
  }

  // What the Curves tab and the CLI call goes through the cache.
  void collectUsesIt() {
    RunEntry run;
    run.name = "run1";
    run.path = m_file.parent_path().string();
    const RunMetrics a = collectRunMetrics(run);
    const RunMetrics b = collectRunMetrics(run);
    QCOMPARE(metricsCacheStats().hits, uint64_t(1));
    QVERIFY(a.find("loss") && b.find("loss"));
    QVERIFY(a.find("loss")->points == b.find("loss")->points);
    QCOMPARE(a.readEnds, b.readEnds);
  }
};

QTEST_GUILESS_MAIN(TestMetricsCache)
#include "tst_metrics_cache.moc"
