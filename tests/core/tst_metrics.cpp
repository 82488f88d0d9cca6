// Curve sources: metrics.jsonl, the reference library's console logs and
// checkpoint metadata, merged into one series per metric and run.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "ckpt/index/metrics.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

class TestMetrics : public QObject {
  Q_OBJECT
  QTemporaryDir m_tmp;

 private slots:
  void jsonlIncremental() {
    const std::string path = m_tmp.filePath("metrics.jsonl").toStdString();
    {
      std::ofstream out(path);
      out << R"({"step": 1, "loss": 5.5, "lr": 0.001, "tokens": 512, "wall_time": 0.5})" "\n"
          << "not json\n"
          << R"({"step": 2, "loss": 5.25, "lr": 0.001, "tokens": 1024, "wall_time": 1.0, "val_loss": 5.0})" "\n"
          << R"({"step": 3, "loss": 5.0)";  // a line still being written
    }
    uint64_t end = 0;
    std::vector<std::string> problems;
    auto points = readMetricsJsonl(path, 0, &end, &problems);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY(problems[0].find("metrics.jsonl: byte ") != std::string::npos);
    std::map<std::string, std::vector<MetricPoint>> got;
    for (const auto& [m, p] : points) got[m].push_back(p);
    QCOMPARE(got["loss"].size(), size_t(2));
    QCOMPARE(got["loss"][1].step, int64_t(2));
    QCOMPARE(got["loss"][1].value, 5.25);
    QCOMPARE(got["loss"][1].tokens, std::optional<int64_t>(1024));
    QCOMPARE(got["loss"][1].wallTime, std::optional<double>(1.0));
    QCOMPARE(got["val_loss"].size(), size_t(1));
    QVERIFY(!got.count("tokens") && !got.count("wall_time") && !got.count("step"));
    // The half-written line is read once it is complete, and nothing twice.
    { std::ofstream(path, std::ios::app) << ", \"lr\": 0.001}\n"; }
    points = readMetricsJsonl(path, end, &end);
    QCOMPARE(points.size(), size_t(2));
    QCOMPARE(points[0].second.step, int64_t(3));
    QCOMPARE(end, uint64_t(fs::file_size(path)));
  }

  void consoleLog() {
    const std::string path = m_tmp.filePath("train.log").toStdString();
    std::ofstream(path) << "Loading data...\n"
                           "step=100 loss=1.9034 lr=6.060e-05\n"
                           "step=200 loss=1.7500 accuracy=55.5% lr=1.000e-04\n"
                           "eval step=200 val_loss=1.8\n"
                           "step=abc loss=1\n";
    const auto points = readConsoleLog(path);
    std::map<std::string, std::vector<MetricPoint>> got;
    for (const auto& [m, p] : points) got[m].push_back(p);
    QCOMPARE(got["loss"].size(), size_t(2));
    QCOMPARE(got["loss"][0].step, int64_t(100));
    QCOMPARE(got["loss"][0].value, 1.9034);
    QCOMPARE(got["lr"][1].value, 1e-4);
    QCOMPARE(got["accuracy"][0].value, 55.5);
    QCOMPARE(got["val_loss"][0].step, int64_t(200));
    QCOMPARE(got["val_loss"][0].value, 1.8);
  }

  void runFromFixtures() {
    // A run directory with the fixture checkpoints (steps and losses written
    // by python3-torch), a console log, and a metrics.jsonl for lr only.
    const json manifest = ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/manifest.json");
    const fs::path run = fs::path(m_tmp.path().toStdString()) / "tiny";
    fs::create_directories(run);
    for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
      fs::copy_file(fs::path(CKPT_FIXTURE_DIR) / "runs/tiny" / f, run / f);
    std::ofstream(run / "metrics.jsonl") << R"({"step": 50, "lr": 0.002})" "\n";
    std::ofstream(run.parent_path() / "tiny.out") << "step=150 val_loss=3.25\n";
    const ScanResult scan = scanDirectory(m_tmp.path().toStdString());
    const RunEntry* entry = nullptr;
    for (const RunEntry& r : scan.runs)
      if (r.name == "tiny") entry = &r;
    QVERIFY(entry);
    const RunMetrics m = collectRunMetrics(*entry);
    QCOMPARE(m.run, std::string("tiny"));
    // loss comes from the checkpoints only: their steps and losses.
    const MetricSeries* loss = m.find("loss");
    QVERIFY(loss);
    QCOMPARE(int(loss->source), int(MetricSource::Checkpoint));
    std::vector<std::pair<int64_t, double>> want;
    for (const char* f : {"runs/tiny/tiny_step100.pt", "runs/tiny/tiny_step200.pt", "runs/tiny/tiny_final.pt"})
      want.emplace_back(manifest["runs"][f]["step"].get<int64_t>(), manifest["runs"][f]["loss"].get<double>());
    std::sort(want.begin(), want.end());
    QCOMPARE(loss->points.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(loss->points[i].step, want[i].first);
      QCOMPARE(loss->points[i].value, want[i].second);
    }
    std::vector<int64_t> steps;
    for (const auto& w : want) steps.push_back(w.first);
    QCOMPARE(m.checkpointSteps, steps);
    // lr from metrics.jsonl wins over the checkpoints' learning_rate.
    const MetricSeries* lr = m.find("lr");
    QVERIFY(lr);
    QCOMPARE(int(lr->source), int(MetricSource::MetricsJsonl));
    QCOMPARE(lr->points.size(), size_t(1));
    // val_loss from the log next to the run wins over the checkpoints'.
    const MetricSeries* val = m.find("val_loss");
    QVERIFY(val);
    QCOMPARE(int(val->source), int(MetricSource::ConsoleLog));
    QCOMPARE(val->points.front().value, 3.25);
  }

  void ema() {
    // TensorBoard's debiased EMA, worked by hand for w = 0.5 on 1, 2, 3:
    // 0.5/0.5 = 1; 1.25/0.75 = 1.6667; 2.125/0.875 = 2.4286.
    const auto s = smoothEma({1, 2, 3}, 0.5);
    QCOMPARE(s.size(), size_t(3));
    QCOMPARE(s[0], 1.0);
    QVERIFY(std::fabs(s[1] - 1.25 / 0.75) < 1e-12);
    QVERIFY(std::fabs(s[2] - 2.125 / 0.875) < 1e-12);
    QCOMPARE(smoothEma({4, 5}, 0.0), (std::vector<double>{4, 5}));
  }

  void emaLongSeriesAndStreaming() {
    // A long series: the result is the textbook formula with pow at every
    // point (no shortcut may change a bit), and the streaming smoother gives
    // the same values one at a time, NaN passing through.
    std::vector<double> values;
    for (int i = 0; i < 20000; ++i) values.push_back(i == 777 ? std::nan("") : 3.0 + std::sin(i * 0.1));
    for (double w : {0.6, 0.99, 0.999}) {
      const std::vector<double> got = smoothEma(values, w);
      EmaSmoother streaming(w);
      double last = 0;
      int64_t n = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        const double x = values[i];
        QCOMPARE(streaming.next(x), got[i]);
        if (std::isnan(x)) {
          QVERIFY(std::isnan(got[i]));
          continue;
        }
        last = last * w + (1 - w) * x;
        ++n;
        QCOMPARE(got[i], last / (1.0 - std::pow(w, double(n))));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "tst_metrics.moc"
