// Tensor statistics, histograms and heat maps against torch's own numbers
// (tests/python/stats_reference.py, run at test time).

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"
#include "run_process.h"

using namespace ckpt;

namespace {

// NaN is written as null.
double num(const QJsonValue& v) {
  return v.isNull() ? std::nan("") : v.toDouble();
}

bool near(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= tol;
}

}  // namespace

class TestTensorStats : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void matchesTorch_data();
  void matchesTorch();
  void threadsAgree();
  void heatMapMeanAbs();
  void heatMapWideMatrixManyCells();
  void cancelled();
  void matrixShapes();

 private:
  [[nodiscard]] TensorData tensor(const QString& name) const;
  QTemporaryDir m_dir;
  QJsonObject m_expect;
  std::unique_ptr<CheckpointFile> m_file;
};

void TestTensorStats::initTestCase() {
  QVERIFY(m_dir.isValid());
  const auto r = test::runProcess(
      CKPT_TORCH_PYTHON,
      {CKPT_SOURCE_DIR "/tests/python/stats_reference.py", "tensors", m_dir.path()});
  QVERIFY2(r.exitCode == 0, r.err.constData());
  QFile f(m_dir.filePath("stats.json"));
  QVERIFY(f.open(QIODevice::ReadOnly));
  m_expect = QJsonDocument::fromJson(f.readAll()).object();
  QVERIFY(m_expect.size() > 10);
  m_file = CheckpointFile::open(m_dir.filePath("stats.pt").toStdString());
}

TensorData TestTensorStats::tensor(const QString& name) const {
  const auto& ts = m_file->tensors();
  for (size_t i = 0; i < ts.size(); ++i)
    if (joinPath(ts[i].path) == name.toStdString()) return m_file->tensorData(i);
  throw std::runtime_error("no tensor " + name.toStdString());
}

void TestTensorStats::matchesTorch_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<int>("threads");
  for (const QString& name : m_expect.keys()) {
    QTest::newRow(qPrintable(name)) << name << 0;
    if (name == "large" || name == "fp32_specials")
      QTest::newRow(qPrintable(name + "/3 threads")) << name << 3;
  }
}

void TestTensorStats::matchesTorch() {
  QFETCH(QString, name);
  QFETCH(int, threads);
  const QJsonObject e = m_expect[name].toObject();
  const TensorData data = tensor(name);
  AnalysisOptions opt;
  opt.bins = 64;
  opt.threads = threads;
  const auto a = analyzeTensor(data, opt);
  QVERIFY(a);
  const TensorStats& s = a->stats;
  QCOMPARE(s.count, uint64_t(e["count"].toInteger()));
  QCOMPARE(s.finite, uint64_t(e["finite"].toInteger()));
  QCOMPARE(s.zeros, uint64_t(e["zeros"].toInteger()));
  QCOMPARE(s.nans, uint64_t(e["nans"].toInteger()));
  QCOMPARE(s.posInf, uint64_t(e["posinf"].toInteger()));
  QCOMPARE(s.negInf, uint64_t(e["neginf"].toInteger()));
  // Conversions to double are exact: extrema are equal.
  QVERIFY(near(s.min, num(e["min"]), 0.0));
  QVERIFY(near(s.max, num(e["max"]), 0.0));
  // Summation order differs from torch's: a few ulps of the largest magnitude.
  const double scale = std::max(std::fabs(s.min), std::fabs(s.max));
  QVERIFY2(
      near(s.mean, num(e["mean"]), 1e-13 * scale),
      qPrintable(QString("mean %1 vs %2").arg(s.mean, 0, 'g', 17).arg(num(e["mean"]), 0, 'g', 17)));
  QVERIFY2(
      near(s.std, num(e["std"]), 1e-11 * std::max(num(e["std"]), 1e-300) + 1e-13 * scale),
      qPrintable(QString("std %1 vs %2").arg(s.std, 0, 'g', 17).arg(num(e["std"]), 0, 'g', 17)));
  // "norm" is exact (math.fsum); torch.norm itself strays by ~2e-12 on "large".
  QVERIFY2(near(s.l2norm, num(e["norm"]), 1e-13 * num(e["norm"])),
           qPrintable(
               QString("norm %1 vs %2").arg(s.l2norm, 0, 'g', 17).arg(num(e["norm"]), 0, 'g', 17)));

  const QJsonValue h = e["hist"];
  if (h.isNull()) {
    QVERIFY(a->histogram.counts.empty());
    return;
  }
  const QJsonObject ho = h.toObject();
  QCOMPARE(a->histogram.lo, ho["lo"].toDouble());
  QCOMPARE(a->histogram.hi, ho["hi"].toDouble());
  const QJsonArray counts = ho["counts"].toArray();
  QCOMPARE(a->histogram.bins(), counts.size());
  for (int i = 0; i < counts.size(); ++i)
    QVERIFY2(a->histogram.counts[size_t(i)] == uint64_t(counts[i].toInteger()),
             qPrintable(QString("bin %1: %2 vs torch.histc %3")
                            .arg(i)
                            .arg(a->histogram.counts[size_t(i)])
                            .arg(counts[i].toInteger())));
  QCOMPARE(a->histogram.edge(0), a->histogram.lo);
  QCOMPARE(a->histogram.edge(a->histogram.bins()), a->histogram.hi);

  // The one-pass functions agree with the two-pass one.
  const auto s1 = computeStats(data);
  QVERIFY(s1);
  QCOMPARE(s1->finite, s.finite);
  QVERIFY(near(s1->mean, s.mean, 1e-13 * scale));
  const auto h1 = computeHistogram(data, 64, s.min, s.max);
  QVERIFY(h1);
  QVERIFY(h1->counts == a->histogram.counts);
}

void TestTensorStats::threadsAgree() {
  const TensorData data = tensor("large");
  const auto one = computeStats(data, {}, 1);
  const auto four = computeStats(data, {}, 4);
  QVERIFY(one && four);
  QCOMPARE(one->count, four->count);
  QCOMPARE(one->min, four->min);
  QCOMPARE(one->max, four->max);
  QVERIFY(near(one->mean, four->mean, 1e-13 * 1000));
  QVERIFY(near(one->std, four->std, 1e-11 * one->std));
}

void TestTensorStats::heatMapMeanAbs() {
  // 300 x 200 with NaN/Inf: 7 x 9 cells, checked against a plain loop over at().
  const TensorData data = tensor("fp32_specials");
  AnalysisOptions opt;
  opt.bins = 0;
  opt.heatRows = 7;
  opt.heatCols = 9;
  const auto a = analyzeTensor(data, opt);
  QVERIFY(a);
  const HeatMap& h = a->heatMap;
  QCOMPARE(h.rows, 7);
  QCOMPARE(h.cols, 9);
  QCOMPARE(h.sourceRows, int64_t(300));
  QCOMPARE(h.sourceCols, int64_t(200));
  QVERIFY(a->histogram.counts.empty());
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) {
      double s = 0;
      int k = 0;
      for (int64_t r = i * 300 / 7; r < (i + 1) * 300 / 7; ++r)
        for (int64_t c = j * 200 / 9; c < (j + 1) * 200 / 9; ++c) {
          const double v = data.at(uint64_t(r * 200 + c));
          if (std::isfinite(v)) {
            s += std::fabs(v);
            ++k;
          }
        }
      QVERIFY2(near(h.at(i, j), s / k, 1e-12), qPrintable(QString("cell %1,%2").arg(i).arg(j)));
    }
}

void TestTensorStats::heatMapWideMatrixManyCells() {
  // More cells asked for than the matrix has: one cell per element (3-D
  // tensors are viewed as [d0, d1*d2]), across thread slices.
  const TensorData small = tensor("permuted3d");  // [6, 4, 5] non-contiguous
  AnalysisOptions opt;
  opt.heatRows = 100;
  opt.heatCols = 100;
  const auto a = analyzeTensor(small, opt);
  QVERIFY(a);
  QCOMPARE(a->heatMap.rows, 6);
  QCOMPARE(a->heatMap.cols, 20);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 20; ++j)
      QCOMPARE(a->heatMap.at(i, j), std::fabs(small.at(uint64_t(i * 20 + j))));

  const TensorData large = tensor("large");  // [1536, 1024]
  opt.heatRows = 50;
  opt.heatCols = 1024;
  opt.threads = 3;
  const auto b = analyzeTensor(large, opt);
  QVERIFY(b);
  QCOMPARE(b->heatMap.rows, 50);
  QCOMPARE(b->heatMap.cols, 1024);
  for (int j : {0, 1, 511, 1023}) {
    double s = 0;
    const int64_t r0 = 49 * 1536 / 50;
    for (int64_t r = r0; r < 1536; ++r) s += std::fabs(large.at(uint64_t(r * 1024 + j)));
    QVERIFY(near(b->heatMap.at(49, j), s / double(1536 - r0), 1e-9));
  }
}

void TestTensorStats::cancelled() {
  const TensorData data = tensor("large");
  int calls = 0;
  // Stop at the first report: no result, not an exception.
  const auto a = analyzeTensor(data, AnalysisOptions{}, [&](uint64_t done, uint64_t total) {
    ++calls;
    return done < total && false;
  });
  QVERIFY(!a);
  QVERIFY(calls >= 1);
  // Progress goes up to the total of both passes.
  uint64_t last = 0, total = 0;
  const auto b = analyzeTensor(data, AnalysisOptions{}, [&](uint64_t done, uint64_t t) {
    last = done;
    total = t;
    return true;
  });
  QVERIFY(b);
  QCOMPARE(total, 2 * data.numel());
  QCOMPARE(last, total);
}

void TestTensorStats::matrixShapes() {
  QCOMPARE(matrixShape({}), std::make_pair(int64_t(1), int64_t(1)));
  QCOMPARE(matrixShape({7}), std::make_pair(int64_t(1), int64_t(7)));
  QCOMPARE(matrixShape({3, 4}), std::make_pair(int64_t(3), int64_t(4)));
  QCOMPARE(matrixShape({2, 3, 4}), std::make_pair(int64_t(2), int64_t(12)));
}

QTEST_GUILESS_MAIN(TestTensorStats)
#include "tst_tensor_stats.moc"
