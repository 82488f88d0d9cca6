// Runs as PyTorch Lightning leaves them (make_trainer_layouts.py writes them
// as its CSVLogger, TensorBoardLogger and ModelCheckpoint do): a
// <name>/version_N folder is one run, its checkpoints/ files its checkpoints,
// its metrics.csv the curves an independent Python reader finds, its event
// files attached to it. An MLflow file store (mlruns/) gives runs named as
// MLflow names them, with the curves of their metrics/ files.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "ckpt/index/lightning.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;
using ckpt::test::runJson;

namespace {

const QString kRoot = QStringLiteral(CKPT_FIXTURE_DIR "/trainer_layouts/lt");
const QString kMlflow = QStringLiteral(CKPT_FIXTURE_DIR "/trainer_layouts/ml");

json cliJson(const QStringList& args) {
  return runJson(QStringLiteral(CKPT_CLI), args);
}

json pythonJson(const QString& script, const QString& root) {
  return runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                 {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/") + script, root});
}

const json* findRun(const json& runs, const std::string& name) {
  for (const json& r : runs)
    if (r["name"] == name) return &r;
  return nullptr;
}

// The reader's runs ({run: {metric: points}}) against metrics --json's:
// each of its series from `source` with the same points, and (allSeries)
// no other series. "" when they agree, else what differs.
std::string compareRuns(const json& want, const json& got, const std::string& source,
                        bool allSeries) {
  for (const auto& [name, series] : want.items()) {
    const json* run = findRun(got, name);
    if (!run) return "no run " + name;
    if (!(*run)["problems"].empty()) return name + ": " + (*run)["problems"].dump();
    if (allSeries && (*run)["series"].size() != series.size())
      return name + ": " + std::to_string((*run)["series"].size()) + " series";
    for (const auto& [metric, points] : series.items()) {
      const json* s = nullptr;
      for (const json& x : (*run)["series"])
        if (x["metric"] == metric) s = &x;
      if (!s) return name + ": no series " + metric;
      if ((*s)["source"] != source)
        return name + "." + metric + ": source " + (*s)["source"].dump();
      if (std::string d = ckpt::test::compareJson(points, (*s)["points"], name + "." + metric);
          !d.empty())
        return d;
    }
  }
  return {};
}

}  // namespace

class TstTrainerLayouts : public QObject {
  Q_OBJECT

 private slots:
  // The walk lists folders on several threads (a folder each): every
  // layout here (Lightning's checkpoints/ and version_N/, MLflow's run
  // folders and artifacts, event files of runs/) gives the same listing
  // on one thread as on many.
  void walkThreadsAgree() {
    auto describe = [](const ckpt::ScanResult& r) {
      std::string s;
      for (const ckpt::RunEntry& run : r.runs) {
        s += run.name + " " + run.path + " " + run.trainer + "\n";
        for (const std::string& f : run.metricFiles) s += "  metrics " + f + "\n";
        for (const ckpt::CheckpointEntry& c : run.checkpoints)
          s += "  " + c.file + " " + c.path + " " + std::to_string(c.step.value_or(-1)) + " " +
               c.trainer + " " + c.layout + " " + (c.best ? "best " : "") +
               (c.latest ? "latest " : "") + c.error + "\n";
      }
      return s;
    };
    const std::string root = CKPT_FIXTURE_DIR "/trainer_layouts";
    ckpt::ScanOptions one;
    one.threads = 1;
    const std::string alone = describe(ckpt::scanDirectory(root, one));
    QVERIFY(alone.find("mlruns") != std::string::npos);
    QVERIFY(alone.find("lightning_logs") != std::string::npos);
    for (unsigned threads : {2u, 3u, 8u}) {
      ckpt::ScanOptions many;
      many.threads = threads;
      for (int again = 0; again < 3; ++again)
        QCOMPARE(describe(ckpt::scanDirectory(root, many)), alone);
    }
  }

  void versionFolderNames_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("version");
    QTest::newRow("version_0") << "version_0" << true;
    QTest::newRow("version_12") << "version_12" << true;
    QTest::newRow("bare") << "version_" << false;
    QTest::newRow("letters") << "version_a" << false;
    QTest::newRow("other") << "checkpoints" << false;
  }
  void versionFolderNames() {
    QFETCH(QString, name);
    QFETCH(bool, version);
    QCOMPARE(ckpt::isLightningVersionName(name.toStdString()), version);
  }

  // ls --json: one run per version folder, named <name>/version_N, in
  // natural order; the checkpoints/ files its checkpoints with the step
  // their names and global_step say, last.ckpt the latest.
  void runsAndCheckpoints() {
    const json ls = cliJson({"ls", kRoot, "--json"});
    std::vector<std::string> names;
    for (const json& r : ls["runs"]) names.push_back(r["name"].get<std::string>());
    QCOMPARE(names,
             (std::vector<std::string>{"lightning_logs/version_0", "lightning_logs/version_1",
                                       "my_exp/version_2", "my_exp/version_10"}));
    struct Want {
      std::string file;
      int64_t step;
      std::string kind;
    };
    const std::vector<Want> want{
        {"lightning_logs/version_0/checkpoints/epoch=0-step=50.ckpt", 50, "step"},
        {"lightning_logs/version_0/checkpoints/epoch=1-step=100-val_loss=0.81.ckpt", 100, "step"},
        {"lightning_logs/version_0/checkpoints/epoch=2-step=150-val_loss=0.90.ckpt", 150, "step"},
        {"lightning_logs/version_0/checkpoints/last.ckpt", 150, "latest"}};
    const json& v0 = *findRun(ls["runs"], "lightning_logs/version_0");
    QCOMPARE(v0["trainer"].get<std::string>(), std::string("lightning"));
    QCOMPARE(v0["checkpoints"].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const json& c = v0["checkpoints"][i];
      QCOMPARE(c["file"].get<std::string>(), want[i].file);
      QCOMPARE(c["step"].get<int64_t>(), want[i].step);
      QCOMPARE(c["kind"].get<std::string>(), want[i].kind);
      QVERIFY2(c["error"].is_null(), c.dump().c_str());
      QCOMPARE(c["trainer"].get<std::string>(), std::string("lightning"));
    }
    // Before its first checkpoint: listed, with its metrics file.
    const json& v1 = *findRun(ls["runs"], "lightning_logs/version_1");
    QCOMPARE(v1["checkpoints"].size(), size_t(0));
    QCOMPARE(v1["metrics"].size(), size_t(1));
    QCOMPARE(v1["trainer"].get<std::string>(), std::string("lightning"));
    const json& v10 = *findRun(ls["runs"], "my_exp/version_10");
    QCOMPARE(v10["checkpoints"][0]["step"].get<int64_t>(), int64_t(40));
  }

  // An MLflow run's meta.yaml (status as RunStatus's number, times in ms)
  // and tags/ as make_trainer_layouts.py wrote them.
  void mlflowRunInfo() {
    const std::string run = kMlflow.toStdString() + "/mlruns/1/0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    const ckpt::MlflowRunInfo info = ckpt::readMlflowRunInfo(run);
    QCOMPARE(info.status, std::string("FINISHED"));
    QCOMPARE(info.startMs, std::optional<int64_t>(1700000100000));
    QCOMPARE(info.endMs, std::optional<int64_t>(1700000100000 + 90000));
    QCOMPARE(info.tags, (std::map<std::string, std::string>{{"mlflow.runName", "lr3e-4-seed2"},
                                                            {"mlflow.user", "trainer"}}));
  }

  // What a ModelCheckpoint name says beside its step (its filename template
  // with auto_insert_metric_name, parts joined by '-'), by hand.
  void nameMetrics_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("expected");  // JSON {metric: value}
    QTest::newRow("default") << "epoch=0-step=50.ckpt"
                             << R"({"epoch": 0})";
    QTest::newRow("metric") << "epoch=1-step=100-val_loss=0.81.ckpt"
                            << R"({"epoch": 1, "val_loss": 0.81})";
    QTest::newRow("docs example") << "sample-mnist-epoch=02-val_loss=0.32.ckpt"
                                  << R"({"epoch": 2, "val_loss": 0.32})";
    QTest::newRow("negative") << "epoch=3-reward=-0.50.ckpt"
                              << R"({"epoch": 3, "reward": -0.5})";
    QTest::newRow("version suffix") << "epoch=1-step=100-v1.ckpt"
                                    << R"({"epoch": 1})";
    QTest::newRow("last") << "last.ckpt"
                          << "{}";
    QTest::newRow("diverged") << "epoch=0-step=50-val_loss=nan.ckpt"
                              << R"({"epoch": 0})";
    QTest::newRow("last, version") << "last-v2.ckpt"
                                   << "{}";
    QTest::newRow("no format spec") << "epoch=1-val_loss=tensor(0.8100).ckpt"
                                    << R"({"epoch": 1})";
    QTest::newRow("text, empty") << "run=abc-loss=.5-x=.ckpt"
                                 << R"({"loss": 0.5})";
    QTest::newRow("not lightning") << "tiny_step200.pt"
                                   << "{}";
  }
  void nameMetrics() {
    QFETCH(QString, name);
    QFETCH(QString, expected);
    std::map<std::string, double> want;
    const json parsed = json::parse(expected.toStdString());
    for (const auto& [k, v] : parsed.items()) want[k] = v.get<double>();
    QCOMPARE(ckpt::lightningNameMetrics(name.toStdString()), want);
  }

  // ModelCheckpoint's own record of its best (best_model_path in the
  // callbacks of the newest file, last.ckpt) marks that file, whatever its
  // step: the epoch-1 file, not the newest.
  void modelCheckpointBest() {
    const json ls = cliJson({"ls", kRoot, "--json"});
    const json& v0 = *findRun(ls["runs"], "lightning_logs/version_0");
    std::vector<std::string> best;
    for (const json& c : v0["checkpoints"])
      if (c["best"].get<bool>()) {
        best.push_back(c["file"].get<std::string>());
        QCOMPARE(c["best_source"].get<std::string>(),
                 std::string("ModelCheckpoint: lowest val_loss 0.81"));
      }
    QCOMPARE(best, std::vector<std::string>{
                       "lightning_logs/version_0/checkpoints/epoch=1-step=100-val_loss=0.81.ckpt"});
    // The text listing says so under the file.
    const QString text =
        QString::fromUtf8(ckpt::test::runProcess(QStringLiteral(CKPT_CLI),
                                                 {"ls", kRoot + "/lightning_logs/version_0"})
                              .out);
    QVERIFY2(text.contains("best (ModelCheckpoint: lowest val_loss 0.81)"), qPrintable(text));
  }

  // Pruning keeps ModelCheckpoint's best (what ckpt_path="best" loads)
  // though no rule asked for it, and --keep-best reads the metric from the
  // file names (the files hold no val_loss of their own).
  void pruneKeepsModelCheckpointBest() {
    const QString run = kRoot + "/lightning_logs/version_0";
    const json keepLast = cliJson({"prune", run, "--keep-last", "1", "--json"});
    QCOMPARE(keepLast["applied"].get<bool>(), false);
    QCOMPARE(keepLast["trash"].size(), size_t(1));
    QVERIFY(keepLast["trash"][0]["file"].get<std::string>().ends_with("/epoch=0-step=50.ckpt"));
    bool kept = false;
    for (const json& f : keepLast["keep"])
      if (f["file"].get<std::string>().ends_with("/epoch=1-step=100-val_loss=0.81.ckpt")) {
        QCOMPARE(f["reasons"], json::array({"best by ModelCheckpoint: lowest val_loss 0.81"}));
        kept = true;
      }
    QVERIFY(kept);

    const json keepBest = cliJson({"prune", run, "--keep-best", "val_loss", "--json"});
    std::map<std::string, json> reasons;
    for (const json& f : keepBest["keep"])
      reasons[std::filesystem::path(f["file"].get<std::string>()).filename().string()] =
          f["reasons"];
    QVERIFY2(reasons.count("epoch=1-step=100-val_loss=0.81.ckpt"), keepBest.dump().c_str());
    QCOMPARE(reasons["epoch=1-step=100-val_loss=0.81.ckpt"][0].get<std::string>(),
             std::string("best val_loss 0.8100"));
  }

  // Lightning's optimizer_states (a list, one state_dict per optimizer):
  // the Adam state of the file's two parameters, mapped to their names.
  void optimizerStates() {
    const json info = cliJson(
        {"info", kRoot + "/lightning_logs/version_0/checkpoints/epoch=0-step=50.ckpt", "--json"});
    QVERIFY2(info.contains("optimizer"), info.dump().substr(0, 2000).c_str());
    QCOMPARE(info["optimizer"]["params"].get<int>(), 2);
    QCOMPARE(info["optimizer"]["mapped"].get<int>(), 2);
    QCOMPARE(info["optimizer"]["hyperparameters"]["lr"].get<std::string>(), std::string("0.001"));
  }

  // The browser's watcher rescans one run folder: a version folder gives
  // its checkpoints/ files, the checkpoints/ folder itself no run.
  void watcherRescan() {
    const std::string root = kRoot.toStdString();
    const ckpt::RunEntry v0 = ckpt::scanRunDirectory(root, root + "/lightning_logs/version_0");
    QCOMPARE(v0.name, std::string("lightning_logs/version_0"));
    QCOMPARE(v0.trainer, std::string("lightning"));
    QCOMPARE(v0.checkpoints.size(), size_t(4));
    QCOMPARE(v0.checkpoints[3].kind, ckpt::CheckpointKind::Latest);
    // The rescan marks ModelCheckpoint's best as the whole scan does.
    QVERIFY(v0.checkpoints[1].best && !v0.checkpoints[2].best);
    QVERIFY(ckpt::scanRunDirectory(root, root + "/lightning_logs/version_0/checkpoints")
                .checkpoints.empty());
  }

  // metrics --json: every metrics.csv column exactly as the Python reader
  // reads it, the event file's tags attached to the same run.
  void metricsCsvCurves() {
    const json want = pythonJson("trainer_layouts_reader.py", kRoot)["runs"];
    const json got = cliJson({"metrics", kRoot, "--json"})["runs"];
    QCOMPARE(got.size(), want.size());
    const std::string d = compareRuns(want, got, "metrics.csv", /*allSeries=*/false);
    QVERIFY2(d.empty(), d.c_str());
    // version_0's event file: hp_metric only there, train_loss from metrics.csv (preferred).
    const json tb = pythonJson("tfevents_reader.py", kRoot)["runs"];
    const json& v0 = *findRun(got, "lightning_logs/version_0");
    bool hp = false;
    for (const json& s : v0["series"])
      if (s["metric"] == "hp_metric") {
        hp = true;
        QCOMPARE(s["source"].get<std::string>(), std::string("tensorboard"));
        const std::string d = ckpt::test::compareJson(
            tb["lightning_logs/version_0"]["hp_metric"]["points"], s["points"], "hp_metric");
        QVERIFY2(d.empty(), d.c_str());
      }
    QVERIFY(hp);
    // A marker per checkpoint step: 50, 100, 150 (last.ckpt is at 150 too).
    QCOMPARE(v0["markers"].size(), size_t(3));
  }

  // mlruns/: one run per run folder, named by run_name, else the
  // mlflow.runName tag, else the run id; no checkpoints; .trash and the
  // empty Default experiment give nothing.
  void mlflowRuns() {
    const json ls = cliJson({"ls", kMlflow, "--json"});
    std::vector<std::string> names;
    for (const json& r : ls["runs"]) {
      names.push_back(r["name"].get<std::string>());
      QCOMPARE(r["trainer"].get<std::string>(), std::string("mlflow"));
      QCOMPARE(r["checkpoints"].size(), size_t(0));
    }
    std::sort(names.begin(), names.end());
    QCOMPARE(names, (std::vector<std::string>{"2a1b2c3d4e5f60718293a4b5c6d7e8f9", "lr3e-4-seed2",
                                              "tagged-run"}));
    const std::string run = kMlflow.toStdString() + "/mlruns/1/0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    const auto params = ckpt::readMlflowParams(run);
    QCOMPARE(params.size(), size_t(2));
    QCOMPARE(params.at("lr"), std::string("0.0003"));
    QCOMPARE(params.at("optimizer/name"), std::string("adamw"));
  }

  // Checkpoints an MLflow run logged as artifacts are that run's (they
  // were runs of their own, named "3/<id>/artifacts/checkpoints"), in the
  // whole scan and in the watcher's rescan of the run folder alike.
  void mlflowArtifactsAreTheRunsCheckpoints() {
    const QString store = QStringLiteral(CKPT_FIXTURE_DIR "/trainer_layouts/ml_art/mlruns");
    const json ls = cliJson({"ls", store, "--json"});
    QCOMPARE(ls["runs"].size(), size_t(1));
    const json& run = ls["runs"][0];
    QCOMPARE(run["name"].get<std::string>(), std::string("with-artifacts"));
    QCOMPARE(run["trainer"].get<std::string>(), std::string("mlflow"));
    std::vector<std::pair<std::string, int64_t>> got;
    for (const json& c : run["checkpoints"])
      got.emplace_back(c["file"].get<std::string>(), c["step"].get<int64_t>());
    const std::string art = "3/3a1b2c3d4e5f60718293a4b5c6d7e8f9/artifacts/checkpoints/";
    QCOMPARE(got, (std::vector<std::pair<std::string, int64_t>>{{art + "epoch_1.pt", 100},
                                                                {art + "epoch_2.pt", 200}}));
    const std::string root = store.toStdString();
    const std::string dir = root + "/3/3a1b2c3d4e5f60718293a4b5c6d7e8f9";
    QCOMPARE(ckpt::scanRunDirectory(root, dir).checkpoints.size(), size_t(2));
    QVERIFY(ckpt::scanRunDirectory(root, dir + "/artifacts/checkpoints").checkpoints.empty());
    // Listed from inside the run folder ("." in a shell there): the same
    // run, not a run named artifacts/checkpoints.
    const auto inside = ckpt::test::runProcess(QStringLiteral(CKPT_CLI), {"ls", ".", "--json"},
                                               QString::fromStdString(dir));
    QCOMPARE(inside.exitCode, 0);
    const json here = json::parse(inside.out.toStdString());
    QCOMPARE(here["runs"].size(), size_t(1));
    QCOMPARE(here["runs"][0]["checkpoints"].size(), size_t(2));
    QCOMPARE(here["runs"][0]["trainer"].get<std::string>(), std::string("mlflow"));
    // Still running: meta.yaml's status 1, no end time.
    const ckpt::MlflowRunInfo info = ckpt::readMlflowRunInfo(dir);
    QCOMPARE(info.status, std::string("RUNNING"));
    QVERIFY(!info.endMs);
  }

  // metrics --json of mlruns/: every metrics/ file as the Python reader reads it.
  void mlflowCurves() {
    const json want = pythonJson("trainer_layouts_reader.py", kMlflow)["runs"];
    const json got = cliJson({"metrics", kMlflow, "--json"})["runs"];
    QCOMPARE(want.size(), size_t(3));
    QCOMPARE(got.size(), want.size());
    const std::string d = compareRuns(want, got, "mlflow", /*allSeries=*/true);
    QVERIFY2(d.empty(), d.c_str());
  }

  // The same store named by a relative path, as a person types it from a
  // shell: the same series (each metric was named "" and merged into one,
  // with made-up restarts, when the run's folder was relative).
  void mlflowCurvesFromARelativePath_data() {
    QTest::addColumn<QString>("cwd");
    QTest::addColumn<QString>("path");
    const QString layouts = QStringLiteral(CKPT_FIXTURE_DIR "/trainer_layouts");
    QTest::newRow("ml") << layouts << "ml";
    QTest::newRow("./ml/") << layouts << "./ml/";
    QTest::newRow(".") << kMlflow << ".";
    QTest::newRow("../ml") << kMlflow + "/mlruns"
                           << "..";
  }
  void mlflowCurvesFromARelativePath() {
    QFETCH(QString, cwd);
    QFETCH(QString, path);
    const json want = pythonJson("trainer_layouts_reader.py", kMlflow)["runs"];
    const ckpt::test::ProcessResult r =
        ckpt::test::runProcess(QStringLiteral(CKPT_CLI), {"metrics", path, "--json"}, cwd);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const json got = json::parse(r.out.toStdString())["runs"];
    QCOMPARE(got.size(), want.size());
    const std::string d = compareRuns(want, got, "mlflow", /*allSeries=*/true);
    QVERIFY2(d.empty(), d.c_str());
  }

  // A metric file with a bad line: named by file and line, the rest read.
  void mlflowBadLine() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("loss");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("1700000000000 1.5 0\ngarbage\n1700000001000 nan 10\n1700000002000 2.0");
    f.close();
    std::vector<std::string> problems;
    uint64_t end = 0;
    const ckpt::FileSeries s = ckpt::readMlflowMetric(path.toStdString(), "loss", &end, &problems);
    QCOMPARE(s.points.size(), size_t(2));
    QVERIFY(std::isnan(s.points[1].value));
    QCOMPARE(s.points[1].step, int64_t(10));
    QCOMPARE(*s.points[0].wallTime, 1700000000.0);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems[0].find("loss: line 2:") != std::string::npos, problems[0].c_str());
    QCOMPARE(end, uint64_t(f.size() - std::string("1700000002000 2.0").size()));
  }

  // Hyperparameters: hparams.yaml's flat lines and MLflow's params/ files,
  // as the runs table shows them (numbers as numbers).
  void hyperparameters() {
    const json ml = cliJson({"runs", kMlflow, "--json"});
    QCOMPARE(ml["columns"], json({"lr"}));
    std::map<std::string, double> lr;
    for (const json& r : ml["rows"]) lr[r["name"].get<std::string>()] = r["hparams"]["lr"];
    QCOMPARE(lr, (std::map<std::string, double>{{"2a1b2c3d4e5f60718293a4b5c6d7e8f9", 1e-4},
                                                {"lr3e-4-seed2", 3e-4},
                                                {"tagged-run", 1e-3}}));
    const json lt = cliJson({"runs", kRoot, "--json"});
    const json* v0 = findRun(lt["rows"], "lightning_logs/version_0");
    QVERIFY(v0);
    QCOMPARE((*v0)["hparams"]["lr"].get<double>(), 1e-3);
    QCOMPARE((*v0)["hparams"]["optimizer"].get<std::string>(), std::string("adam"));
    const json* v1 = findRun(lt["rows"], "lightning_logs/version_1");
    QCOMPARE((*v1)["hparams"]["lr"].get<double>(), 3e-4);
  }

  // A damaged metrics.csv: the bad row named by file and line, the rest read.
  void badRows() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("metrics.csv");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("loss,step\r\n1.5,10\r\n2.0,oops\r\n1.0,20\r\n");
    f.close();
    std::vector<std::string> problems;
    const auto series = ckpt::readLightningMetricsCsv(path.toStdString(), &problems);
    QCOMPARE(series.size(), size_t(1));
    QCOMPARE(series[0].points.size(), size_t(2));
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems[0].find("metrics.csv: line 3:") != std::string::npos, problems[0].c_str());
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("loss,epoch\r\n1.5,0\r\n");
    f.close();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             (void)ckpt::readLightningMetricsCsv(path.toStdString()));
  }
};

QTEST_GUILESS_MAIN(TstTrainerLayouts)
#include "tst_trainer_layouts.moc"
