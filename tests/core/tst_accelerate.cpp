// Runs as Hugging Face Accelerate's save_state leaves them
// (tests/python/make_accelerate.py writes them as
// accelerate/checkpointing.py does): each save_state folder is ONE
// checkpoint of its run, its other files (optimizer.bin, scheduler.bin,
// scaler.pt, random_states_0.pkl) its parts; the step is the folder name's
// (step_100/), or under automatic naming (checkpoints/checkpoint_<i>/, i
// counting saves) AdamW's own step count as torch.load reads it; diff of
// a run's two checkpoints gives torch's rel_l2. Before: every file of a
// folder was a checkpoint of its own, each folder a run, checkpoint_1 at
// "step 1".
#include <QtTest>

#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "ckpt/index/accelerate.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "run_process.h"

using ckpt::test::json;
using ckpt::test::runJson;

namespace {

const std::string kRoot = CKPT_FIXTURE_DIR "/accelerate";

json cli(const QStringList& args) {
  return runJson(QStringLiteral(CKPT_CLI), args);
}

const json& expected() {
  static const json doc = [] {
    std::ifstream in(kRoot + "/expected.json");
    return json::parse(in);
  }();
  return doc;
}

}  // namespace

class TestAccelerate : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(std::ifstream(kRoot + "/expected.json").good(),
             "no fixtures: run ctest (make_accelerate)");
  }

  void partRoles_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("role");
    QTest::newRow("weights") << "model.safetensors"
                             << "weights";
    QTest::newRow("second model") << "model_1.safetensors"
                                  << "model";
    QTest::newRow("optimizer") << "optimizer.bin"
                               << "optimizer";
    QTest::newRow("second optimizer") << "optimizer_1.bin"
                                      << "optimizer";
    QTest::newRow("scheduler") << "scheduler.bin"
                               << "scheduler";
    QTest::newRow("rng of process 3") << "random_states_3.pkl"
                                      << "rng";
    QTest::newRow("scaler") << "scaler.pt"
                            << "scaler";
    QTest::newRow("custom") << "custom_checkpoint_0.pkl"
                            << "custom";
    QTest::newRow("not accelerate's") << "optimizer_x.bin"
                                      << "";
    QTest::newRow("notes") << "notes.txt"
                           << "";
  }
  void partRoles() {
    QFETCH(QString, name);
    QFETCH(QString, role);
    QCOMPARE(QString::fromStdString(std::string(ckpt::acceleratePartRole(name.toStdString()))),
             role);
  }

  // ls --json: one run per output folder (auto: the project folder above
  // checkpoints/), a checkpoint per save_state folder at its step, the
  // files save_state wrote beside the weights as its parts.
  void runsAndCheckpoints() {
    const json ls = cli({"ls", QString::fromStdString(kRoot + "/acc"), "--json"});
    std::map<std::string, const json*> runs;
    for (const json& r : ls["runs"]) runs[r["name"].get<std::string>()] = &r;
    QCOMPARE(runs.size(), size_t(2));
    for (const char* name : {"manual", "auto"}) {
      QVERIFY2(runs.count(name), name);
      const json& run = *runs[name];
      QCOMPARE(run["trainer"].get<std::string>(), std::string("accelerate"));
      const json& want = expected()[name]["checkpoints"];
      QCOMPARE(run["checkpoints"].size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const json& c = run["checkpoints"][i];
        QCOMPARE(c["file"].get<std::string>(),
                 name + std::string("/") + want[i]["folder"].get<std::string>());
        QCOMPARE(c["step"].get<int64_t>(), want[i]["step"].get<int64_t>());
        QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
        QVERIFY2(c["error"].is_null(), c.dump().c_str());
        QCOMPARE(c["verdict"].get<std::string>(), std::string("safe"));
        std::map<std::string, std::string> roles;
        for (const json& p : c["parts"])
          roles[p["file"].get<std::string>()] = p["role"].get<std::string>();
        QCOMPARE(roles, (std::map<std::string, std::string>{{"optimizer.bin", "optimizer"},
                                                            {"random_states_0.pkl", "rng"},
                                                            {"scaler.pt", "scaler"},
                                                            {"scheduler.bin", "scheduler"}}));
      }
    }
    // The watcher's rescan of a run folder finds the same; of a save
    // folder, or of auto's checkpoints/ folder, no run.
    const std::string root = kRoot + "/acc";
    QCOMPARE(ckpt::scanRunDirectory(root, root + "/auto").checkpoints.size(), size_t(2));
    QCOMPARE(ckpt::scanRunDirectory(root, root + "/manual").checkpoints.size(), size_t(2));
    QVERIFY(ckpt::scanRunDirectory(root, root + "/auto/checkpoints").checkpoints.empty());
    QVERIFY(ckpt::scanRunDirectory(root, root + "/manual/step_50").checkpoints.empty());
  }

  // The same runs from a relative path, as a person types it in a shell:
  // "acc" from the fixture folder, "." from inside a run (the runs were
  // folded into one, named after the root, when a run's path was absolute
  // and the walk's relative).
  void relativePaths_data() {
    QTest::addColumn<QString>("cwd");
    QTest::addColumn<QString>("arg");
    QTest::addColumn<QStringList>("runs");
    QTest::addColumn<int>("checkpoints");
    const QString root = QString::fromStdString(kRoot);
    QTest::newRow("acc") << root << "acc" << QStringList{"auto", "manual"} << 4;
    QTest::newRow("acc/") << root << "acc/" << QStringList{"auto", "manual"} << 4;
    QTest::newRow("inside manual") << root + "/acc/manual"
                                   << "." << QStringList{"manual"} << 2;
    QTest::newRow("inside auto") << root + "/acc/auto"
                                 << "." << QStringList{"auto"} << 2;
  }
  void relativePaths() {
    QFETCH(QString, cwd);
    QFETCH(QString, arg);
    QFETCH(QStringList, runs);
    QFETCH(int, checkpoints);
    const auto r = ckpt::test::runProcess(QStringLiteral(CKPT_CLI), {"ls", arg, "--json"}, cwd);
    QCOMPARE(r.exitCode, 0);
    const json ls = json::parse(r.out.toStdString());
    QStringList names;
    int count = 0;
    for (const json& run : ls["runs"]) {
      names << QString::fromStdString(run["name"].get<std::string>());
      count += int(run["checkpoints"].size());
      QCOMPARE(run["trainer"].get<std::string>(), std::string("accelerate"));
    }
    names.sort();
    QCOMPARE(names, runs);
    QCOMPARE(count, checkpoints);
  }

  // diff of a run's two save folders compares their weights as torch does.
  void diffOfTwoFolders() {
    for (const char* name : {"manual", "auto"}) {
      const json& want = expected()[name];
      const std::string run = kRoot + "/acc/" + name + "/";
      const json d =
          cli({"diff",
               QString::fromStdString(run + want["checkpoints"][0]["folder"].get<std::string>()),
               QString::fromStdString(run + want["checkpoints"][1]["folder"].get<std::string>()),
               "--json"});
      QCOMPARE(d["tensors"].size(), want["rel_l2"].size());
      for (const json& t : d["tensors"]) {
        const std::string n = t["name"].get<std::string>();
        QVERIFY2(want["rel_l2"].contains(n), n.c_str());
        QVERIFY2(std::abs(t["rel_l2"].get<double>() - want["rel_l2"][n].get<double>()) <=
                     1e-9 * std::max(1.0, want["rel_l2"][n].get<double>()),
                 n.c_str());
      }
    }
  }
};

QTEST_MAIN(TestAccelerate)
#include "tst_accelerate.moc"
