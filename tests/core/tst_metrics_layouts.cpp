// metrics.jsonl lines in every layout a writer uses, read as Python's json
// module reads them (tests/python/make_jsonl_layouts.py writes the file and
// what json.loads gives for each line): the reader remembers a line's
// layout and matches the next lines against it, so lines that repeat a
// layout, change it, share its first bytes and differ later, or are bad
// must all still give json.loads's points, bit for bit, whole and streamed.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ckpt/index/metrics.h"

using namespace ckpt;
using json = nlohmann::json;

namespace {

double fromHex(const json& v) {
  return std::strtod(v.get<std::string>().c_str(), nullptr);  // float.hex(), "nan", "inf"
}

bool sameBits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// "" when `points` are exactly `want`'s [step, value, wall, tokens] rows.
template <typename Points>
std::string compare(const std::string& metric, const Points& points, const json& want) {
  if (points.size() != want.size())
    return metric + ": " + std::to_string(points.size()) + " points, Python read " +
           std::to_string(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const MetricPoint p = points[i];
    const json& w = want[i];
    const std::string where = metric + " point " + std::to_string(i) + " (step " +
                              std::to_string(w[0].get<int64_t>()) + ")";
    if (p.step != w[0].get<int64_t>()) return where + ": step " + std::to_string(p.step);
    if (!sameBits(p.value, fromHex(w[1])))
      return where + ": value " + std::to_string(p.value) + ", Python " + w[1].get<std::string>();
    if (w[2].is_null() != !p.wallTime || (p.wallTime && !sameBits(*p.wallTime, fromHex(w[2]))))
      return where + ": wall time";
    if (w[3].is_null() != !p.tokens || (p.tokens && *p.tokens != w[3].get<int64_t>()))
      return where + ": tokens";
  }
  return {};
}

}  // namespace

class TestMetricsLayouts : public QObject {
  Q_OBJECT
  QTemporaryDir m_tmp;
  std::string m_file;
  json m_want;

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_file = m_tmp.filePath("metrics.jsonl").toStdString();
    const QString expected = m_tmp.filePath("expected.json");
    QProcess py;
    py.start(CKPT_TORCH_PYTHON, {QString(CKPT_SOURCE_DIR) + "/tests/python/make_jsonl_layouts.py",
                                 QString::fromStdString(m_file), expected});
    QVERIFY(py.waitForFinished(120000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    std::ifstream in(expected.toStdString());
    m_want = json::parse(in);
    QVERIFY(m_want["series"].size() >= 4);
    QVERIFY(m_want["bad_lines"].size() > 100);
  }

  void wholeFileAsPythonReadsIt() {
    // Several MiB: read on several threads where there are cores, each part
    // learning layouts of its own.
    std::vector<std::string> problems;
    uint64_t end = 0;
    const std::vector<FileSeries> got = readMetricsJsonlSeries(m_file, &end, &problems);
    QCOMPARE(got.size(), m_want["series"].size());
    for (const FileSeries& s : got) {
      QVERIFY2(m_want["series"].contains(s.metric), s.metric.c_str());
      QVERIFY(s.restarts.empty());
      const std::string diff = compare(s.metric, s.points, m_want["series"][s.metric]);
      QVERIFY2(diff.empty(), diff.c_str());
    }
    const json& bad = m_want["bad_lines"];
    QCOMPARE(problems.size(), bad.size());
    for (size_t i = 0; i < bad.size(); ++i) {
      const std::string line = "(line " + std::to_string(bad[i].get<int>()) + ")";
      QVERIFY2(problems[i].find(line) != std::string::npos,
               (problems[i] + " lacks " + line).c_str());
    }
  }

  void singleThreadedAndStreamedTheSame() {
    // One part learning every layout in turn, and the block reader (what a
    // live run's new lines go through).
    std::vector<FileSeries> one;
    {
      const SingleThreadedMetrics single;
      one = readMetricsJsonlSeries(m_file);
    }
    QCOMPARE(one.size(), m_want["series"].size());
    for (const FileSeries& s : one) {
      const std::string diff = compare(s.metric, s.points, m_want["series"][s.metric]);
      QVERIFY2(diff.empty(), diff.c_str());
    }
    std::map<std::string, std::vector<MetricPoint>> streamed;
    for (auto& [metric, p] : readMetricsJsonl(m_file)) streamed[metric].push_back(p);
    QCOMPARE(streamed.size(), m_want["series"].size());
    for (const auto& [metric, points] : streamed) {
      const std::string diff = compare(metric, points, m_want["series"][metric]);
      QVERIFY2(diff.empty(), diff.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestMetricsLayouts)
#include "tst_metrics_layouts.moc"
