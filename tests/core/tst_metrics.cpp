// Curve sources: metrics.jsonl, the reference library's console logs and
// checkpoint metadata, merged into one series per metric and run.
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_each.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

const std::string kExperiment = std::string(CKPT_FIXTURE_DIR) + "/experiment";

const json& experimentExpected() {
  static const json doc =
      ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/experiment_expected.json");
  return doc;
}

// "" when `got` holds exactly the series of `want` ({metric: [[step, value,
// wall|null, tokens|null], ...]}): same metrics, same points, bit for bit.
std::string compareSeries(const json& want, const RunMetrics& got) {
  std::set<std::string> wantMetrics, gotMetrics;
  for (const auto& [metric, points] : want.items()) wantMetrics.insert(metric);
  for (const MetricSeries& s : got.series) gotMetrics.insert(s.metric);
  if (wantMetrics != gotMetrics) {
    std::string w, g;
    for (const auto& m : wantMetrics) w += m + " ";
    for (const auto& m : gotMetrics) g += m + " ";
    return got.run + ": metrics " + g + "instead of " + w;
  }
  for (const auto& [metric, points] : want.items()) {
    const MetricSeries* s = got.find(metric);
    if (s->points.size() != points.size())
      return got.run + " " + metric + ": " + std::to_string(s->points.size()) +
             " points instead of " + std::to_string(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const json& w = points[i];
      const MetricPoint& p = s->points[i];
      const std::string where = got.run + " " + metric + " point " + std::to_string(i) + " (step " +
                                std::to_string(w[0].get<int64_t>()) + ")";
      if (p.step != w[0].get<int64_t>()) return where + ": step " + std::to_string(p.step);
      if (p.value != w[1].get<double>()) return where + ": value " + std::to_string(p.value);
      if (w[2].is_null() != !p.wallTime || (p.wallTime && *p.wallTime != w[2].get<double>()))
        return where + ": wall time " + (p.wallTime ? std::to_string(*p.wallTime) : "none");
      if (w[3].is_null() != !p.tokens || (p.tokens && *p.tokens != w[3].get<int64_t>()))
        return where + ": tokens";
    }
  }
  return {};
}

const RunMetrics* byName(const std::vector<RunMetrics>& runs, const std::string& name) {
  for (const RunMetrics& r : runs)
    if (r.run == name) return &r;
  return nullptr;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

class TestMetrics : public QObject {
  Q_OBJECT
  QTemporaryDir m_tmp;

 private slots:
  void jsonlIncremental() {
    const std::string path = m_tmp.filePath("metrics.jsonl").toStdString();
    {
      std::ofstream out(path);
      out << R"({"step": 1, "loss": 5.5, "lr": 0.001, "tokens": 512, "wall_time": 0.5})"
             "\n"
          << "not json\n"
          << R"({"step": 2, "loss": 5.25, "lr": 0.001, "tokens": 1024, "wall_time": 1.0, "val_loss": 5.0})"
             "\n"
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
    const json manifest =
        ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/manifest.json");
    const fs::path run = fs::path(m_tmp.path().toStdString()) / "tiny";
    fs::create_directories(run);
    for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
      fs::copy_file(fs::path(CKPT_FIXTURE_DIR) / "runs/tiny" / f, run / f);
    std::ofstream(run / "metrics.jsonl") << R"({"step": 50, "lr": 0.002})"
                                            "\n";
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
    for (const char* f :
         {"runs/tiny/tiny_step100.pt", "runs/tiny/tiny_step200.pt", "runs/tiny/tiny_final.pt"})
      want.emplace_back(manifest["runs"][f]["step"].get<int64_t>(),
                        manifest["runs"][f]["loss"].get<double>());
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

  // collectMetrics with `each` (metrics_each.h): the runs in the order the
  // vector form holds them, though the threads finish them out of order
  // (run 1 is 10,000 times longer than the rest); an `each` that throws
  // ends the handing over, and its exception comes out.
  void runsHandedOverInOrder() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    for (int i = 0; i < 16; ++i) {
      const fs::path dir = fs::path(tmp.path().toStdString()) / ("r" + std::to_string(10 + i));
      fs::create_directories(dir);
      std::ofstream f(dir / "metrics.jsonl");
      for (int s = 1; s <= (i == 1 ? 100000 : 10); ++s)
        f << "{\"step\": " << s << ", \"loss\": " << i << "}\n";
    }
    const std::vector<RunEntry> runs = findMetricRuns(tmp.path().toStdString());
    QCOMPARE(runs.size(), size_t(16));
    std::vector<std::string> names, want;
    std::vector<double> losses;
    collectMetrics(runs, {}, [&](RunMetrics&& r) {
      names.push_back(r.run);
      losses.push_back(r.series.front().points.back().value);
    });
    for (const RunMetrics& r : collectMetrics(runs)) want.push_back(r.run);
    QCOMPARE(names, want);
    for (int i = 0; i < 16; ++i) QCOMPARE(names[size_t(i)], "r" + std::to_string(10 + i));
    QCOMPARE(losses, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));

    size_t calls = 0;
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, collectMetrics(runs, {}, [&](RunMetrics&&) {
                               if (++calls == 4) throw std::runtime_error("stop");
                             }));
    QCOMPARE(calls, size_t(4));
  }

  void referenceExperiment() {
    // Three stages whose checkpoints record no loss, one job log in
    // logs/ holding all three stages' lines: each stage gets exactly its own
    // points, as the Python regex found them.
    const std::vector<RunEntry> runs = findMetricRuns(kExperiment);
    QCOMPARE(runs.size(), size_t(3));
    const std::vector<RunMetrics> got = collectMetrics(runs);
    QCOMPARE(got.size(), size_t(3));
    const json& want = experimentExpected();
    for (const auto& [name, series] : want["runs"].items()) {
      const RunMetrics* r = byName(got, name);
      QVERIFY2(r, name.c_str());
      const std::string d = compareSeries(series, *r);
      QVERIFY2(d.empty(), d.c_str());
      for (const MetricSeries& s : r->series) {
        QCOMPARE(int(s.source), int(MetricSource::ConsoleLog));
        QCOMPARE(s.files, std::vector<std::string>{kExperiment + "/logs/pipeline_48213.err"});
        std::vector<int64_t> restarts;
        if (want["restarts"].contains(name) && want["restarts"][name].contains(s.metric))
          restarts = want["restarts"][name][s.metric].get<std::vector<int64_t>>();
        QCOMPARE(s.restarts, restarts);
        QCOMPARE(s.restarted(), !restarts.empty());
      }
      QVERIFY(r->problems.empty());
      // Markers: at every checkpoint step; a value where one was logged at that step.
      const json& markers = want["markers"][name];
      QCOMPARE(r->markers.size(), markers.size());
      for (size_t i = 0; i < markers.size(); ++i) {
        QCOMPARE(r->markers[i].step, markers[i][0].get<int64_t>());
        QVERIFY(r->markers[i].recorded.empty());  // the Trainer saves no loss
        const std::optional<double> v = r->markerValue(r->markers[i], "loss");
        QCOMPARE(v.has_value(), !markers[i][1].is_null());
        if (v) QCOMPARE(*v, markers[i][1].get<double>());
      }
    }
    // The restarted pretrain stage kept its last segment: steps climb.
    const MetricSeries* loss = byName(got, "checkpoints/tiny-pretrain")->find("loss");
    for (size_t i = 1; i < loss->points.size(); ++i)
      QVERIFY(loss->points[i - 1].step < loss->points[i].step);
    // The final checkpoint shares step 80 with the step file: one marker, the step file.
    const RunMetrics* pre = byName(got, "checkpoints/tiny-pretrain");
    QVERIFY(pre->markers.back().path.find("tiny-pretrain_step80.pt") != std::string::npos);
    QCOMPARE(pre->markers.back().kind, CheckpointKind::Step);
    // One run alone reads the same.
    for (const RunEntry& run : runs) {
      const RunMetrics one = collectRunMetrics(run);
      const std::string d = compareSeries(want["runs"][run.name], one);
      QVERIFY2(d.empty(), d.c_str());
    }
  }

  void extraLogsMakeLogOnlyRuns() {
    // The job log added by hand: its lines for the three stages are not read
    // twice, and what belongs to none of them makes runs of its own.
    const std::string log = kExperiment + "/logs/pipeline_48213.err";
    const std::vector<RunMetrics> got = collectMetrics(findMetricRuns(kExperiment), {log});
    QCOMPARE(got.size(), size_t(5));
    const json& want = experimentExpected();
    for (const auto& [name, series] : want["runs"].items()) {
      const std::string d = compareSeries(series, *byName(got, name));
      QVERIFY2(d.empty(), d.c_str());
    }
    for (const auto& [name, series] : want["log_only"].items()) {
      const RunMetrics* r = byName(got, name);
      QVERIFY2(r, name.c_str());
      QCOMPARE(r->path, log);
      const std::string d = compareSeries(series, *r);
      QVERIFY2(d.empty(), d.c_str());
    }
    // A log given as a folder reads the same.
    const std::vector<RunMetrics> folder =
        collectMetrics(findMetricRuns(kExperiment), {kExperiment + "/logs"});
    QCOMPARE(folder.size(), size_t(6));  // other-job_48214.out: trainer.someone-else
    QVERIFY(byName(folder, "someone-else"));
    QVERIFY(byName(folder, "tiny-ghost"));
    // A log kept elsewhere, named again through a hard link and a symbolic
    // link: one file, read once (its device and inode; a canonical path
    // told a hard link apart and read the lines twice).
    const fs::path dir = fs::path(m_tmp.path().toStdString()) / "linked";
    fs::create_directories(dir);
    fs::copy_file(log, dir / "job.err");
    fs::create_hard_link(dir / "job.err", dir / "hard.err");
    fs::create_symlink(dir / "job.err", dir / "soft.err");
    const std::vector<RunEntry> runs = findMetricRuns(kExperiment);
    const std::vector<RunMetrics> once = collectMetrics(runs, {(dir / "job.err").string()});
    const std::vector<RunMetrics> linked = collectMetrics(
        runs,
        {(dir / "job.err").string(), (dir / "hard.err").string(), (dir / "soft.err").string()});
    QCOMPARE(linked.size(), once.size());
    for (size_t i = 0; i < once.size(); ++i) {
      QCOMPARE(linked[i].run, once[i].run);
      QCOMPARE(linked[i].series.size(), once[i].series.size());
      for (size_t k = 0; k < once[i].series.size(); ++k)
        QCOMPARE(linked[i].series[k].points.size(), once[i].series[k].points.size());
    }
  }

  void whereLogsAreFound() {
    // proj/logs/<job>_<id>.out (cluster layout), proj/exp/train.log (the
    // parent's parent: not searched), proj/exp/checkpoints/r1 (the run).
    const fs::path proj = fs::path(m_tmp.path().toStdString()) / "found" / "proj";
    const fs::path run = proj / "exp" / "checkpoints" / "r1";
    fs::create_directories(run);
    write(proj / "logs" / "job_17.out",
          "2025-01-01 00:00:00 - trainer.r1 - INFO - step=1 loss=4.0\n"
          "step=2 loss=3.0\n");                               // names no run: not r1's
    write(proj / "logs" / "r1_18.err", "step=3 loss=2.5\n");  // named after the run: its own
    write(proj / "exp" / "train.log", "step=4 loss=2.0\n");
    write(run / "logs" / "x.log", "step=5 loss=1.5\n");  // the run's own logs/
    write(run.parent_path() / "other.out",
          "2025-01-01 00:00:09 - trainer.r1 - INFO - step=6 loss=1.25\n");
    write(proj / "elsewhere" / "more.log",
          "2025-01-01 00:00:10 - trainer.r1 - INFO - step=7 loss=1.0\n");
    RunEntry entry;
    entry.name = "exp/checkpoints/r1";
    entry.path = run.string();
    entry.root = proj.string();
    auto steps = [](const RunMetrics& m) {
      std::vector<int64_t> out;
      if (const MetricSeries* s = m.find("loss"))
        for (const MetricPoint& p : s->points) out.push_back(p.step);
      return out;
    };
    QCOMPARE(steps(collectRunMetrics(entry)), (std::vector<int64_t>{1, 3, 5, 6}));
    // Opened at exp/: proj/logs is above the root.
    entry.root = (proj / "exp").string();
    QCOMPARE(steps(collectRunMetrics(entry)), (std::vector<int64_t>{5, 6}));
    // Root unknown: up to the grandparent's logs/ (exp/logs: none here).
    entry.root.clear();
    write(proj / "exp" / "logs" / "g.log",
          "2025-01-01 00:00:11 - trainer.r1 - INFO - step=8 loss=0.5\n");
    QCOMPARE(steps(collectRunMetrics(entry)), (std::vector<int64_t>{5, 6, 8}));
    entry.root = (proj / "exp").string();
    QCOMPARE(steps(collectRunMetrics(entry)), (std::vector<int64_t>{5, 6, 8}));
    entry.root = proj.string();
    QCOMPARE(steps(collectRunMetrics(entry)), (std::vector<int64_t>{1, 3, 5, 6, 8}));
    fs::remove(proj / "exp" / "logs" / "g.log");
    entry.root = (proj / "exp").string();
    // Added by hand: a file, or the folder holding it.
    QCOMPARE(steps(collectRunMetrics(entry, {(proj / "elsewhere" / "more.log").string()})),
             (std::vector<int64_t>{5, 6, 7}));
    QCOMPARE(steps(collectRunMetrics(entry, {(proj / "elsewhere").string()})),
             (std::vector<int64_t>{5, 6, 7}));
    // The source list the Curves tab follows, with the filters.
    entry.root = proj.string();
    const std::vector<MetricSourceFile> sources = findMetricSources(entry);
    std::map<std::string, bool> unnamed;
    for (const MetricSourceFile& f : sources) {
      QCOMPARE(f.filter.names, std::vector<std::string>{"r1"});
      unnamed[fs::path(f.path).filename().string()] = f.filter.unnamedLines;
    }
    QCOMPARE(
        unnamed,
        (std::map<std::string, bool>{
            {"job_17.out", false}, {"r1_18.err", true}, {"x.log", true}, {"other.out", false}}));
  }

  void restartKeepsLastSegment() {
    // Steps 1..5 logged, the job restarted from a checkpoint at 2 and logged
    // 3 and 4 again: 5 is from the dead job and goes; 3 and 4 are the new ones.
    const fs::path run = fs::path(m_tmp.path().toStdString()) / "restarted";
    std::string text;
    for (int s = 1; s <= 5; ++s)
      text += "{\"step\": " + std::to_string(s) + ", \"loss\": " + std::to_string(10 - s) + "}\n";
    text += "{\"step\": 3, \"loss\": 0.5}\n{\"step\": 4, \"loss\": 0.25}\n";
    write(run / "metrics.jsonl", text);
    RunEntry entry;
    entry.name = "restarted";
    entry.path = run.string();
    const RunMetrics m = collectRunMetrics(entry);
    const MetricSeries* loss = m.find("loss");
    QVERIFY(loss);
    std::vector<std::pair<int64_t, double>> got;
    for (const MetricPoint& p : loss->points) got.emplace_back(p.step, p.value);
    QCOMPARE(got, (std::vector<std::pair<int64_t, double>>{{1, 9}, {2, 8}, {3, 0.5}, {4, 0.25}}));
    QCOMPARE(loss->restarts, std::vector<int64_t>{3});

    // Across files: the job resubmitted into a new log resumed at step 30;
    // a third file repeats the second's lines exactly (a second handler).
    // Whatever their names and times, steps 10 and 20 come from the first
    // job, 30..70 from the second, and only one restart is reported.
    const fs::path run2 = fs::path(m_tmp.path().toStdString()) / "resubmitted";
    std::string first, second;
    for (int s = 10; s <= 50; s += 10)
      first += "step=" + std::to_string(s) + " loss=" + std::to_string(100 + s) + "\n";
    for (int s = 30; s <= 70; s += 10)
      second += "step=" + std::to_string(s) + " loss=" + std::to_string(s) + "\n";
    write(run2 / "z_job_1.out", first);
    write(run2 / "a_job_2.out", second);
    write(run2 / "b_copy.log", second);
    entry.name = "resubmitted";
    entry.path = run2.string();
    const RunMetrics m2 = collectRunMetrics(entry);
    const MetricSeries* loss2 = m2.find("loss");
    QVERIFY(loss2);
    got.clear();
    for (const MetricPoint& p : loss2->points) got.emplace_back(p.step, p.value);
    QCOMPARE(got, (std::vector<std::pair<int64_t, double>>{
                      {10, 110}, {20, 120}, {30, 30}, {40, 40}, {50, 50}, {60, 60}, {70, 70}}));
    QCOMPARE(loss2->restarts, std::vector<int64_t>{30});
    QCOMPARE(loss2->files.size(), size_t(3));
  }

  void jsonlFastAndSlowPaths() {
    // Flat lines take the fast path, others nlohmann; both give the same
    // points. NaN / Infinity as Python's json writes them.
    const std::string path = m_tmp.filePath("paths.jsonl").toStdString();
    std::ofstream(path)
        << R"({"step": 1, "loss": 2.5, "lr": 1e-3, "tokens": 4096, "wall_time": 1700000000.25})"
           "\n"
        << R"({"step": 2, "loss": NaN, "grad_norm": Infinity, "note": "restart", "tokens": 8192})"
           "\n"
        << R"({"step": 3, "loss": -Infinity, "nested": {"a": 1}, "learning_rate": 5e-4})"
           "\n"
        << R"({"step": 4.5, "loss": 1})"
           "\n"
        << R"({"loss": 1})"
           "\n"
        << R"(  {"step":5,"loss":1.25}  )"
           "\n";
    std::vector<std::string> problems;
    const auto points = readMetricsJsonl(path, 0, nullptr, &problems);
    std::map<std::string, std::vector<MetricPoint>> got;
    for (const auto& [m, p] : points) got[m].push_back(p);
    QCOMPARE(problems.size(), size_t(2));  // step 4.5, no step
    QVERIFY(problems[0].find("(line 4)") != std::string::npos);
    QVERIFY(problems[1].find("(line 5)") != std::string::npos);
    QCOMPARE(got["loss"].size(), size_t(4));
    QCOMPARE(got["loss"][0].value, 2.5);
    QCOMPARE(got["loss"][0].tokens, std::optional<int64_t>(4096));
    QCOMPARE(got["loss"][0].wallTime, std::optional<double>(1700000000.25));
    QVERIFY(std::isnan(got["loss"][1].value));
    QCOMPARE(got["loss"][1].tokens, std::optional<int64_t>(8192));
    QVERIFY(std::isinf(got["grad_norm"][0].value) && got["grad_norm"][0].value > 0);
    QVERIFY(std::isinf(got["loss"][2].value) && got["loss"][2].value < 0);
    QCOMPARE(got["lr"].size(), size_t(2));  // lr and learning_rate are one metric
    QCOMPARE(got["lr"][1].value, 5e-4);
    QCOMPARE(got["loss"][3].step, int64_t(5));
    QVERIFY(!got.count("note") && !got.count("nested"));
  }

  void jsonlNumbersAsStrtod() {
    // Every number reads back with the bits strtod gives the same text, over
    // the forms trainers print (%.4f, %.6g, %.3e, %.17g, repr), magnitudes
    // from 1e-30 to 1e30, signs, and more digits than the fast path takes.
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<double> mantissa(-10, 10);
    std::uniform_int_distribution<int> power(-30, 30), form(0, 5), precision(0, 19);
    std::vector<std::string> texts;
    std::string file;
    for (int i = 0; i < 20000; ++i) {
      const double v = mantissa(rng) * std::pow(10.0, power(rng));
      char b[64];
      const int k = precision(rng);
      switch (form(rng)) {
        case 0:
          std::snprintf(b, sizeof b, "%.*f", std::min(k, 12), std::fmod(v, 1e6));
          break;
        case 1:
          std::snprintf(b, sizeof b, "%.*g", std::max(k, 1), v);
          break;
        case 2:
          std::snprintf(b, sizeof b, "%.*e", k, v);
          break;
        case 3:
          std::snprintf(b, sizeof b, "%.17g", v);
          break;
        case 4:
          std::snprintf(b, sizeof b, "%.*E", k, v);
          break;
        default:
          std::snprintf(b, sizeof b, "%.6f", std::fabs(v) < 1 ? v : 1 / v);
          break;
      }
      texts.push_back(b);
      file += "{\"step\": " + std::to_string(i) + ", \"x\": " + b + "}\n";
    }
    const std::string path = m_tmp.filePath("numbers.jsonl").toStdString();
    std::ofstream(path, std::ios::binary) << file;
    std::vector<std::string> problems;
    const auto points = readMetricsJsonl(path, 0, nullptr, &problems);
    QCOMPARE(problems.size(), size_t(0));
    QCOMPARE(points.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      const double want = std::strtod(texts[i].c_str(), nullptr);
      const double got = points[i].second.value;
      QVERIFY2(std::memcmp(&want, &got, sizeof want) == 0,
               (texts[i] + " read as " + std::to_string(got)).c_str());
    }
  }

  // A file of several blocks (4 MiB each), each parsed on several threads:
  // every point in file order, every bad line named by its own line number
  // and byte offset, wherever the blocks and their parts are cut.
  void jsonlLargeFileInOrder() {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> kind(0, 99);
    std::string file;
    struct Want {
      int64_t step;
      std::string metric;
      double value;
    };
    std::vector<Want> want;
    std::vector<std::pair<uint64_t, uint64_t>> badAt;  // (byte, line)
    uint64_t line = 0;
    for (int64_t step = 0; file.size() < (9u << 20); ++step) {
      ++line;
      const uint64_t at = file.size();
      const int k = kind(rng);
      char b[160];
      const double v = double(step % 1000) / 7.0;
      if (k == 0) {
        file += "{\"loss\": 1}\n";  // no step
        badAt.emplace_back(at, line);
        continue;
      }
      if (k == 1) {
        file += "   \n";  // blank: skipped, counted
        continue;
      }
      if (k == 2) {  // the slow path: a string value, a nested object
        std::snprintf(b, sizeof b,
                      "{\"step\": %lld, \"note\": \"x\", \"n\": {\"a\": 1}, \"acc\": %.17g}\n",
                      (long long)step, v);
        want.push_back({step, "acc", v});  // %.17g reads back exactly
        file += b;
        continue;
      }
      std::snprintf(b, sizeof b, "{\"step\": %lld, \"loss\": %.17g, \"learning_rate\": %.6g}\n",
                    (long long)step, v, 1e-4 * double(step % 13));
      file += b;
      want.push_back({step, "loss", v});
      char lr[32];
      std::snprintf(lr, sizeof lr, "%.6g", 1e-4 * double(step % 13));
      want.push_back({step, "lr", std::strtod(lr, nullptr)});  // learning_rate is lr
    }
    const std::string path = m_tmp.filePath("large.jsonl").toStdString();
    std::ofstream(path, std::ios::binary) << file;
    std::vector<std::string> problems;
    uint64_t end = 0;
    const auto points = readMetricsJsonl(path, 0, &end, &problems);
    QCOMPARE(end, uint64_t(file.size()));
    QCOMPARE(points.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& [metric, p] = points[i];
      if (metric != want[i].metric || p.step != want[i].step || p.value != want[i].value)
        QFAIL(("point " + std::to_string(i) + ": " + metric + " step " + std::to_string(p.step) +
               " = " + std::to_string(p.value) + ", want " + want[i].metric + " step " +
               std::to_string(want[i].step))
                  .c_str());
    }
    QCOMPARE(problems.size(), badAt.size());
    for (size_t i = 0; i < badAt.size(); ++i) {
      const std::string expected = "byte " + std::to_string(badAt[i].first) + " (line " +
                                   std::to_string(badAt[i].second) + ")";
      QVERIFY2(problems[i].find(expected) != std::string::npos,
               (problems[i] + " lacks " + expected).c_str());
    }
    // Read whole (parts joined without replaying them): the same points per metric.
    std::vector<std::string> wholeProblems;
    uint64_t wholeEnd = 0;
    const std::vector<FileSeries> whole = readMetricsJsonlSeries(path, &wholeEnd, &wholeProblems);
    QCOMPARE(wholeEnd, end);
    QCOMPARE(wholeProblems, problems);
    QCOMPARE(whole.size(), size_t(3));
    for (const FileSeries& s : whole) {
      QVERIFY(s.restarts.empty());
      size_t i = 0;
      for (const Want& w : want) {
        if (w.metric != s.metric) continue;
        QVERIFY(i < s.points.size());
        if (s.points[i].step != w.step || s.points[i].value != w.value)
          QFAIL((s.metric + " point " + std::to_string(i) + " differs").c_str());
        ++i;
      }
      QCOMPARE(i, s.points.size());
    }
  }

  void jsonlSeriesReadWhole() {
    // A file of several MiB (read on several threads where there are cores)
    // whose job restarts every few thousand lines, logs a step twice now
    // and then, with bad, blank and slow-path lines between. What
    // readMetricsJsonlSeries gives is the rule applied by hand to the lines
    // in file order, and the streaming reader's problems and end.
    std::mt19937_64 rng(11);
    std::string file;
    struct Want {
      std::vector<MetricPoint> points;
      std::vector<int64_t> restarts;
      void add(const MetricPoint& p) {
        if (!points.empty() && p.step < points.back().step) {
          restarts.push_back(p.step);
          while (!points.empty() && points.back().step >= p.step) points.pop_back();
        } else if (!points.empty() && p.step == points.back().step) {
          points.pop_back();
        }
        points.push_back(p);
      }
    };
    std::map<std::string, Want> want;
    int64_t step = 0;
    for (int64_t line = 0; file.size() < (5u << 20); ++line) {
      const int k = int(rng() % 1000);
      if (k < 2) {
        step -= 1 + int64_t(rng() % 3000);  // restarted from an earlier checkpoint
        if (step < 0) step = 0;
      } else if (k < 4) {
        // the same step again
      } else {
        ++step;
      }
      char b[200];
      const double v = double(rng() % 100000) / 64.0;
      if (k == 5) {
        file += "{\"loss\": 1}\n";  // no step
        continue;
      }
      if (k == 6) {
        file += "\n";
        continue;
      }
      if (k == 7) {  // the slow path
        std::snprintf(b, sizeof b, "{\"step\": %lld, \"note\": \"r\", \"loss\": %.17g}\n",
                      (long long)step, v);
        file += b;
        MetricPoint p;
        p.step = step;
        p.value = v;
        want["loss"].add(p);
        continue;
      }
      std::snprintf(b, sizeof b,
                    "{\"step\": %lld, \"loss\": %.17g, \"lr\": 0.0003, \"tokens\": %lld}\n",
                    (long long)step, v, (long long)step * 512);
      file += b;
      MetricPoint p;
      p.step = step;
      p.tokens = step * 512;
      p.value = v;
      want["loss"].add(p);
      p.value = 0.0003;
      want["lr"].add(p);
    }
    file += "{\"step\": 1, \"loss\": 2";  // being written: not read
    const std::string path = m_tmp.filePath("restarts.jsonl").toStdString();
    std::ofstream(path, std::ios::binary) << file;

    std::vector<std::string> problems, streamed;
    uint64_t end = 0, streamedEnd = 0;
    const std::vector<FileSeries> got = readMetricsJsonlSeries(path, &end, &problems);
    (void)readMetricsJsonl(path, 0, &streamedEnd, &streamed);
    QCOMPARE(end, uint64_t(file.rfind('\n') + 1));
    QCOMPARE(end, streamedEnd);
    QVERIFY(!problems.empty());
    QCOMPARE(problems, streamed);
    QCOMPARE(got.size(), want.size());
    for (const FileSeries& s : got) {
      QVERIFY2(want.count(s.metric), s.metric.c_str());
      const Want& w = want[s.metric];
      QVERIFY2(w.restarts.size() > 5, "the file should restart often");
      QCOMPARE(s.restarts, w.restarts);
      QCOMPARE(s.points.size(), w.points.size());
      for (size_t i = 0; i < w.points.size(); ++i)
        if (s.points[i].step != w.points[i].step || s.points[i].value != w.points[i].value ||
            s.points[i].tokens != w.points[i].tokens)
          QFAIL((s.metric + " point " + std::to_string(i) + ": step " +
                 std::to_string(s.points[i].step) + ", want " + std::to_string(w.points[i].step))
                    .c_str());
    }
  }

  void consoleLogRecords() {
    // Python logging records, tqdm pieces, eval lines and basicConfig's format.
    const std::string path = m_tmp.filePath("records.err").toStdString();
    std::ofstream(path, std::ios::binary)
        << "\rEpoch 1:  10%|#         | 10/100 [00:01<00:09, step=10, loss=9.99]\r"
           "Epoch 1:  11%|#         | 11/100 [00:01<00:09]2025-12-02 10:01:10,250 - trainer.a-sft "
           "- INFO - step=11 loss=2.3456 lr=3.000e-04\n"
        << "2025-12-02 10:01:11 - trainer.a-sft - INFO - eval step=11 loss=2.5 ppl=12.18 "
           "tokens=22528\n"
        << "INFO:trainer.a-dpo:step=3 loss=0.693 eval_accuracy=50.0%\n"
        << "2025-12-02 10:01:12 - modern_llm.data - INFO - tokenized split=train step=7 "
           "examples=100\n";
    const std::vector<LoggedPoint> lines = readConsoleLogLines(path);
    std::vector<std::string> got;
    for (const LoggedPoint& p : lines) {
      char b[160];
      std::snprintf(b, sizeof b, "%s %s %lld %.17g %.17g %lld", p.run.c_str(), p.metric.c_str(),
                    static_cast<long long>(p.point.step), p.point.value,
                    p.point.wallTime.value_or(-1),
                    static_cast<long long>(p.point.tokens.value_or(-1)));
      got.push_back(b);
    }
    // 2025-12-02 10:01:10 UTC is 1764669670 (date -u -d '2025-12-02 10:01:10' +%s).
    const std::vector<std::string> want = {
        "a-sft loss 11 2.3456000000000001 1764669670.25 -1",
        "a-sft lr 11 0.00029999999999999997 1764669670.25 -1",
        "a-sft val_loss 11 2.5 1764669671 22528",
        "a-sft val_ppl 11 12.18 1764669671 22528",
        "a-dpo loss 3 0.69299999999999995 -1 -1",
        "a-dpo val_accuracy 3 50 -1 -1",
        " examples 7 100 1764669672 -1",
    };
    QCOMPARE(got, want);
    LogFilter sft{{"a-sft"}, false};
    QCOMPARE(readConsoleLog(path, sft).size(), size_t(4));
    LogFilter unnamedOnly{{}, true};
    QCOMPARE(readConsoleLog(path, unnamedOnly).size(), size_t(1));
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
    for (int i = 0; i < 20000; ++i)
      values.push_back(i == 777 ? std::nan("") : 3.0 + std::sin(i * 0.1));
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
