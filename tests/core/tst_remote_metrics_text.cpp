// The `metrics` answer as text (ckpt/remote/metrics_wire.h:
// appendMetricsResultText, metricsResultFromText), read back without a JSON
// tree: every point equals, bit for bit, what the local reader makes of the
// same metrics.jsonl files (written here as Python's json.dumps writes them:
// NaN, Infinity, -Infinity, -0.0, subnormals, wall time and tokens present
// or not); an older agent's layout reads the same; a wrong field is named;
// no prefix of an answer, and no hostile nesting, crashes the reader.
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ckpt/format/json_export.h"
#include "ckpt/index/metrics.h"
#include "ckpt/remote/metrics_wire.h"

using ckpt::RunMetrics;
using Json = nlohmann::ordered_json;

namespace {

uint64_t bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// What the local reader makes of `dir` (the host's own `metrics`).
std::vector<RunMetrics> localReading(const std::string& dir) {
  return ckpt::collectMetrics(ckpt::findMetricRuns(dir));
}

// Every field a client uses, points compared by the bits of every double.
void compareRuns(const std::vector<RunMetrics>& got, const std::vector<RunMetrics>& want) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const RunMetrics &g = got[i], &w = want[i];
    QCOMPARE(g.run, w.run);
    QCOMPARE(g.path, w.path);
    QCOMPARE(g.checkpointSteps, w.checkpointSteps);
    QCOMPARE(g.problems, w.problems);
    QVERIFY(g.readEnds == w.readEnds);
    QCOMPARE(g.summaryFile, w.summaryFile);
    QCOMPARE(g.series.size(), w.series.size());
    for (size_t k = 0; k < w.series.size(); ++k) {
      const auto &gs = g.series[k], &ws = w.series[k];
      QCOMPARE(gs.metric, ws.metric);
      QVERIFY(gs.source == ws.source);
      QCOMPARE(gs.files, ws.files);
      QCOMPARE(gs.restarts, ws.restarts);
      QCOMPARE(gs.points.size(), ws.points.size());
      for (size_t p = 0; p < ws.points.size(); ++p) {
        const ckpt::MetricPoint a = gs.points[p], b = ws.points[p];
        QCOMPARE(a.step, b.step);
        QCOMPARE(bits(a.value), bits(b.value));
        QCOMPARE(a.wallTime.has_value(), b.wallTime.has_value());
        if (b.wallTime) QCOMPARE(bits(*a.wallTime), bits(*b.wallTime));
        QCOMPARE(a.tokens, b.tokens);
      }
    }
  }
}

// A run of hand values: one point of each kind.
RunMetrics handRun() {
  RunMetrics r;
  r.run = "hand";
  r.path = "/x/hand";
  ckpt::MetricSeries s;
  s.metric = "loss";
  s.source = ckpt::MetricSource::MetricsJsonl;
  s.files = {"/x/hand/metrics.jsonl"};
  s.points.push(1, 2.5, 0.25, 4096);
  s.points.push(2, 2.25, std::nullopt, std::nullopt);
  r.series.push_back(std::move(s));
  r.readEnds["/x/hand/metrics.jsonl"] = 10;
  return r;
}

std::string answerOf(const std::vector<RunMetrics>& runs) {
  std::string text;
  ckpt::remote::appendMetricsResultText(text, runs);
  return text;
}

}  // namespace

class TestRemoteMetricsText : public QObject {
  Q_OBJECT

 private slots:
  void pointsEqualTheLocalReading();
  void olderAgentsLayoutReadsTheSame();
  void handValues();
  void columnsHandValues();
  void wrongFieldIsNamed_data();
  void wrongFieldIsNamed();
  void truncatedOrHostileNeverCrashes();
};

void TestRemoteMetricsText::pointsEqualTheLocalReading() {
  QTemporaryDir tmp;
  const std::string root = tmp.path().toStdString();
  // As Python's json.dumps writes them (allow_nan: NaN, Infinity).
  std::filesystem::create_directories(root + "/a");
  std::filesystem::create_directories(root + "/b");
  writeText(
      root + "/a/metrics.jsonl",
      "{\"step\": 1, \"loss\": 2.302585092994046, \"tokens\": 4096, \"wall_time\": "
      "1733480000.123456}\n"
      "{\"step\": 2, \"loss\": NaN, \"tokens\": 8192, \"wall_time\": 1733480001.5}\n"
      "{\"step\": 3, \"loss\": Infinity, \"tokens\": 12288}\n"
      "{\"step\": 4, \"loss\": -Infinity, \"wall_time\": 1733480003.0}\n"
      "{\"step\": 5, \"loss\": -0.0, \"lr\": 3e-4}\n"
      "{\"step\": 6, \"loss\": 5e-324, \"lr\": 3e-4, \"grad_norm\": 1.7976931348623157e+308}\n"
      "{\"step\": 7, \"loss\": 0.1, \"lr\": 2.9999999999999997e-4, \"grad_norm\": 1e-300}\n"
      "{\"step\": 9223372036854775807, \"loss\": 1.0, \"tokens\": -3}\n");
  std::string many;
  for (int s = 1; s <= 3000; ++s)
    many += "{\"step\": " + std::to_string(s * 10) + ", \"loss\": " + std::to_string(1.0 / s) +
            ", \"lr\": 0.001, \"tokens\": " + std::to_string(s * 40960) +
            ", \"wall_time\": " + std::to_string(s * 0.37) + "}\n";
  writeText(root + "/b/metrics.jsonl", many);
  const std::vector<RunMetrics> local = localReading(root);
  QCOMPARE(local.size(), size_t(2));
  const std::vector<RunMetrics> read = ckpt::remote::metricsResultFromText(answerOf(local));
  compareRuns(read, local);
  // The same as columns (progressions as first and stride: run b's steps,
  // lr and tokens; its wall times s * 0.37 are written rounded: an array).
  std::string columns;
  ckpt::remote::appendMetricsResultText(columns, local, /*columns=*/true);
  QVERIFY(columns.find("\"step\":{\"first\":10,\"stride\":10}") != std::string::npos);
  QVERIFY(columns.size() < answerOf(local).size() / 2);
  compareRuns(ckpt::remote::metricsResultFromText(columns), local);
  // What the other fields become is what the tree of them gave.
  for (size_t i = 0; i < local.size(); ++i)
    QCOMPARE(ckpt::dumpJson(ckpt::remote::runMetricsToWire(read[i])),
             ckpt::dumpJson(ckpt::remote::runMetricsToWire(local[i])));
}

void TestRemoteMetricsText::olderAgentsLayoutReadsTheSame() {
  // An agent before the text answer sent dumpJson of runMetricsToWire's
  // trees (and a client may send it on, laid out with spaces).
  QTemporaryDir tmp;
  const std::string root = tmp.path().toStdString();
  std::filesystem::create_directories(root + "/r");
  writeText(root + "/r/metrics.jsonl",
            "{\"step\": 1, \"loss\": NaN, \"wall_time\": 0.5}\n"
            "{\"step\": 2, \"loss\": 1.5, \"tokens\": 7}\n");
  const std::vector<RunMetrics> local = localReading(root);
  Json runs = Json::array();
  for (const RunMetrics& r : local) runs.push_back(ckpt::remote::runMetricsToWire(r));
  const Json result{{"runs", runs}};
  compareRuns(ckpt::remote::metricsResultFromText(ckpt::dumpJson(result)), local);
  compareRuns(ckpt::remote::metricsResultFromText(ckpt::dumpJson(result, 2)), local);
}

void TestRemoteMetricsText::handValues() {
  const std::string text = answerOf({handRun()});
  // The points as docs/REMOTE.md writes them.
  QVERIFY(text.find("\"points\":[[1,2.5,0.25,4096],[2,2.25,null,null]]") != std::string::npos);
  const auto runs = ckpt::remote::metricsResultFromText(
      R"({"runs": [{"name": "h", "path": "/p", "series": [{"metric": "loss", "source": "metrics.jsonl",
       "files": [], "restarts": [], "points": [[3, "nan", "inf", null], [4, "-inf", null, 12],
       [5, 1e999, -0.0, null]]}], "checkpoint_steps": [], "markers": [], "problems": [],
       "read_ends": {}, "summary": {}, "summary_file": ""}]})");
  QCOMPARE(runs.size(), size_t(1));
  const auto& p = runs[0].series.at(0).points;
  QCOMPARE(p.size(), size_t(3));
  QVERIFY(std::isnan(p[0].value));
  QCOMPARE(*p[0].wallTime, std::numeric_limits<double>::infinity());
  QVERIFY(!p[0].tokens);
  QCOMPARE(p[1].value, -std::numeric_limits<double>::infinity());
  QVERIFY(!p[1].wallTime);
  QCOMPARE(*p[1].tokens, int64_t(12));
  QCOMPARE(p[2].value, std::numeric_limits<double>::infinity());  // as strtod reads 1e999
  QCOMPARE(bits(*p[2].wallTime), bits(-0.0));
}

void TestRemoteMetricsText::columnsHandValues() {
  const std::string head =
      R"({"runs": [{"name": "h", "path": "/p", "series": [{"metric": "loss", "source": "metrics.jsonl",
       "files": [], "restarts": [], "columns": )";
  const std::string tail = R"(}], "checkpoint_steps": [], "markers": [], "problems": [],
       "read_ends": {}, "summary": {}, "summary_file": ""}]})";
  // 0.1 added ten times is not 1.0: a progression is computed with one
  // rounding (fma), here 0.1 * 3 + 0 = 0.30000000000000004.
  const auto runs = ckpt::remote::metricsResultFromText(
      head +
      R"({"count": 4, "step": {"first": 100, "stride": -25}, "value": {"first": 0.0, "stride": 0.1},
          "wall_time": [1.5, null, "nan", "-inf"], "tokens": [null, 7, null, -9223372036854775808]})" +
      tail);
  const auto& p = runs.at(0).series.at(0).points;
  QCOMPARE(p.size(), size_t(4));
  QCOMPARE(p[0].step, int64_t(100));
  QCOMPARE(p[3].step, int64_t(25));
  QCOMPARE(bits(p[3].value), bits(0.30000000000000004));
  QCOMPARE(*p[0].wallTime, 1.5);
  QVERIFY(!p[1].wallTime);
  QVERIFY(!p[2].wallTime);  // a NaN wall time counts as none (SeriesPoints)
  QCOMPARE(*p[3].wallTime, -std::numeric_limits<double>::infinity());
  QVERIFY(!p[0].tokens);
  QCOMPARE(*p[1].tokens, int64_t(7));
  QCOMPARE(*p[3].tokens, std::numeric_limits<int64_t>::min());
  const auto failsWith = [&](const std::string& columns, const QString& message) {
    try {
      (void)ckpt::remote::metricsResultFromText(head + columns + tail);
      QFAIL(qPrintable("read: " + QString::fromStdString(columns)));
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains(message), e.what());
    }
  };
  failsWith(R"({"count": 3, "step": [1, 2], "value": [1.0, 2.0, 3.0]})",
            "columns.step has 2 values for 3 points");
  failsWith(R"({"count": 2, "step": {"first": 1}, "value": [1.0, 2.0]})",
            "step: a progression needs first and stride");
  failsWith(R"({"count": 2, "value": [1.0, 2.0]})", "columns need step and value");
  failsWith(R"({"step": [1, 2], "value": [1.0, 2.0]})", "columns.count is missing");
  failsWith(R"({"count": 2, "step": [1, null], "value": [1.0, 2.0]})",
            "columns.step has null at 1");
  failsWith(R"({"count": 1, "step": [1.5], "value": [1.0]})", "step is not an integer");
  failsWith(R"({"count": 1, "step": [1], "value": "x"})", "columns.value is neither");
  failsWith(R"({"count": 1, "step": [1], "value": [1.0])", "expected '}'");
}

void TestRemoteMetricsText::wrongFieldIsNamed_data() {
  QTest::addColumn<QString>("from");
  QTest::addColumn<QString>("to");
  QTest::addColumn<QString>("message");
  QTest::newRow("value") << "[1,2.5,"
                         << "[1,\"x\","
                         << "runs[0].series[0].points[0]: value is not a number";
  QTest::newRow("step") << "[2,2.25"
                        << "[2.5,2.25"
                        << "runs[0].series[0].points[1]: step is not an integer";
  QTest::newRow("tokens") << "4096]"
                          << "\"4096\"]"
                          << "points[0]: tokens is not an integer";
  QTest::newRow("wall") << "0.25,"
                        << "true,"
                        << "points[0]: wall_time is not a number";
  QTest::newRow("point short") << ",null,null]]"
                               << ",null]]"
                               << "points[1]: expected ','";
  QTest::newRow("points") << "\"points\":[["
                          << "\"points\":{\"a\":[["
                          << "points is not an array";
  QTest::newRow("step range") << "[2,2.25"
                              << "[99999999999999999999,2.25"
                              << "step is out of range";
  QTest::newRow("no name") << "\"name\":"
                           << "\"nom\":"
                           << "runs[0]: metrics: a run has no 'name'";
  QTest::newRow("no runs") << "{\"runs\":"
                           << "{\"rune\":"
                           << "runs is missing";
  QTest::newRow("trailing") << "\"summary_file\":\"\"}]}"
                            << "\"summary_file\":\"\"}]}x"
                            << "something follows the result";
}

void TestRemoteMetricsText::wrongFieldIsNamed() {
  QFETCH(QString, from);
  QFETCH(QString, to);
  QFETCH(QString, message);
  std::string text = answerOf({handRun()});
  const size_t at = text.find(from.toStdString());
  QVERIFY2(at != std::string::npos, text.c_str());
  text.replace(at, size_t(from.size()), to.toStdString());
  try {
    (void)ckpt::remote::metricsResultFromText(text);
    QFAIL("read a wrong answer");
  } catch (const std::runtime_error& e) {
    QVERIFY2(QString(e.what()).contains(message), e.what());
    QVERIFY2(QString(e.what()).startsWith("metrics: "), e.what());
  }
}

void TestRemoteMetricsText::truncatedOrHostileNeverCrashes() {
  const std::string text = answerOf({handRun(), handRun()});
  QCOMPARE(ckpt::remote::metricsResultFromText(text).size(), size_t(2));
  for (size_t n = 0; n < text.size(); ++n) {
    try {
      (void)ckpt::remote::metricsResultFromText(std::string_view(text).substr(0, n));
      QFAIL(qPrintable(QString("read a truncated answer of %1 bytes").arg(n)));
    } catch (const std::runtime_error& e) {
      QVERIFY(std::strlen(e.what()) > 0);
    }
  }
  // A field nested a million deep (skipped or parsed, never recursed into).
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  QCOMPARE(ckpt::remote::metricsResultFromText("{\"x\":" + deep + ",\"runs\":[]}").size(),
           size_t(0));
  std::string nested = text;
  nested.replace(nested.find("\"summary\":{}"), 12, "\"summary\":" + deep);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, ckpt::remote::metricsResultFromText(nested));
  // The same for the columns form.
  std::string columns;
  ckpt::remote::appendMetricsResultText(columns, {handRun(), handRun()}, /*columns=*/true);
  for (size_t n = 0; n < columns.size(); ++n)
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ckpt::remote::metricsResultFromText(
                                                     std::string_view(columns).substr(0, n)));
  // A huge answer: 2 million points read in full.
  RunMetrics big = handRun();
  big.series[0].points.clear();
  for (int64_t s = 0; s < 2'000'000; ++s) big.series[0].points.push(s, 1.0 / double(s + 1));
  const auto read = ckpt::remote::metricsResultFromText(answerOf({big}));
  compareRuns(read, {big});
  columns.clear();
  ckpt::remote::appendMetricsResultText(columns, {big}, /*columns=*/true);
  compareRuns(ckpt::remote::metricsResultFromText(columns), {big});
  // A hostile count: refused before anything is made of it.
  QVERIFY_THROWS_EXCEPTION(
      std::runtime_error,
      ckpt::remote::metricsResultFromText(
          R"({"runs": [{"name": "h", "path": "/p", "series": [{"metric": "loss", "source": "metrics.jsonl",
          "files": [], "restarts": [], "columns": {"count": 4611686018427387904, "step": {"first": 1,
          "stride": 1}, "value": {"first": 1.0, "stride": 0.0}}}]}]})"));
}

QTEST_GUILESS_MAIN(TestRemoteMetricsText)
#include "tst_remote_metrics_text.moc"
