// A nanoGPT run (make_nanogpt.py writes out/ckpt.pt with train.py's keys and
// out/train.log with its console lines): the checkpoint's step is iter_num
// and its recorded val loss best_val_loss; the log's points are exactly
// what the script's regex reader finds. And DeepSpeed's `latest` file marks
// the tag folder it names (make_sharded.py's ds_run).
#include <QFile>
#include <QtTest>

#include <set>

#include "ckpt/index/hparams.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/nanogpt");
const QString kDeepSpeed = QStringLiteral(CKPT_FIXTURE_DIR "/sharded/ds_run");

json cliJson(const QStringList& args) {
  return ckpt::test::cliJson(QStringLiteral(CKPT_CLI), args);
}

json expected() {
  return ckpt::test::readJsonFile((kDir + "/expected.json").toStdString());
}

}  // namespace

class TstNanoGpt : public QObject {
  Q_OBJECT

 private slots:
  // ls --json: one run, its ckpt.pt at iter_num (the file name says no step).
  void stepIsIterNum() {
    const json want = expected();
    const json ls = cliJson({"ls", kDir, "--json"});
    QCOMPARE(ls["runs"].size(), size_t(1));
    const json& run = ls["runs"][0];
    QCOMPARE(run["name"].get<std::string>(), want["run"].get<std::string>());
    QCOMPARE(run["checkpoints"].size(), size_t(1));
    const json& c = run["checkpoints"][0];
    QCOMPARE(c["file"].get<std::string>(), std::string("out/ckpt.pt"));
    QCOMPARE(c["step"].get<int64_t>(), want["iter_num"].get<int64_t>());
    QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
    QVERIFY(c["error"].is_null());
  }

  // best_val_loss (a 0-dim tensor: losses['val']) is the checkpoint's
  // recorded val_loss, as torch.load reads it.
  void bestValLossIsRecorded() {
    const json want = expected();
    const ckpt::ScanResult scan = ckpt::scanDirectory(kDir.toStdString());
    QCOMPARE(scan.runs.size(), size_t(1));
    QCOMPARE(scan.runs[0].checkpoints.size(), size_t(1));
    const ckpt::CheckpointEntry& c = scan.runs[0].checkpoints[0];
    QVERIFY(c.scalars.count("val_loss"));
    QCOMPARE(c.scalars.at("val_loss"), want["best_val_loss"].get<double>());
  }

  // config and model_args are the run's hyperparameters.
  void hparamsFromConfigAndModelArgs() {
    const json want = expected();
    const ckpt::ScanResult scan = ckpt::scanDirectory(kDir.toStdString());
    QCOMPARE(scan.runs.size(), size_t(1));
    std::vector<std::string> problems;
    const ckpt::Hparams h = ckpt::readHparams(scan.runs[0], &problems);
    QVERIFY(problems.empty());
    for (const auto& [key, value] : want["hparams"].items()) {
      const auto it = h.find(key);
      QVERIFY2(it != h.end(), key.c_str());
      if (value.is_number())
        QCOMPARE(it->second.number, value.get<double>());
      else if (value.is_string())
        QCOMPARE(it->second.text, value.get<std::string>());
      else
        QCOMPARE(it->second.text, std::string(value.get<bool>() ? "true" : "false"));
    }
    QVERIFY(h.count("vocab_size"));  // model_args alone has it
  }

  // The model under `model` shows its names without torch.compile's _orig_mod.
  void namesWithoutPrefix() {
    const json want = expected();
    const json info = cliJson({"info", kDir + "/out/ckpt.pt", "--json"});
    QCOMPARE(info["model_state"]["key"].get<std::string>(), std::string("model"));
    QVERIFY(info["model_state"]["compiled"].get<bool>());
    const std::string diff = ckpt::test::compareJson(want["names"], info["model_state"]["names"]);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // metrics --json: the log's series are exactly the regex reader's points.
  void logPointsAsPython() {
    const json want = expected();
    const json m = cliJson({"metrics", kDir, "--json"});
    QCOMPARE(m["runs"].size(), size_t(1));
    const json& run = m["runs"][0];
    QVERIFY2(run["problems"].empty(), run["problems"].dump().c_str());
    std::set<std::string> seen;
    for (const json& s : run["series"]) {
      const std::string metric = s["metric"];
      QVERIFY2(want["series"].contains(metric), metric.c_str());
      QCOMPARE(s["source"].get<std::string>(), std::string("log"));
      json points = json::array();
      for (const json& p : s["points"]) points.push_back(json::array({p[0], p[1].get<double>()}));
      const std::string diff = ckpt::test::compareJson(want["series"][metric], points, metric);
      QVERIFY2(diff.empty(), diff.c_str());
      seen.insert(metric);
    }
    QCOMPARE(seen.size(), want["series"].size());
    for (const char* metric : {"loss", "mfu", "train_loss", "val_loss"})
      QVERIFY2(seen.count(metric), metric);
  }

  // DeepSpeed: the tag `latest` names is marked latest, the others not; the
  // steps come from global_step<N>.
  void deepSpeedLatest() {
    QFile latest(kDeepSpeed + "/latest");
    QVERIFY(latest.open(QIODevice::ReadOnly));
    const std::string tag = latest.readAll().trimmed().toStdString();
    const json ls = cliJson({"ls", kDeepSpeed, "--json"});
    QCOMPARE(ls["runs"].size(), size_t(1));
    const json& cks = ls["runs"][0]["checkpoints"];
    QVERIFY(cks.size() >= 2);
    int marked = 0;
    for (const json& c : cks) {
      const std::string file = c["file"];
      QVERIFY2(file.rfind("global_step", 0) == 0, file.c_str());
      QCOMPARE(c["step"].get<int64_t>(), std::stoll(file.substr(11)));
      QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
      QCOMPARE(c["latest"].get<bool>(), file == tag);
      marked += c["latest"].get<bool>() ? 1 : 0;
    }
    QCOMPARE(marked, 1);
  }
};

QTEST_GUILESS_MAIN(TstNanoGpt)
#include "tst_nanogpt.moc"
