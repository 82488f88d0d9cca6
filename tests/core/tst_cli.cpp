// ckptscope-cli as a user runs it: output against what Python wrote, exit
// codes, and one-line errors that name the file.
#include <QtTest>

#include <fstream>

#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000);
}

const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void infoJson_data() {
    QTest::addColumn<QString>("file");
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    for (const json& f : m["fixtures"])
      QTest::newRow(f["file"].get<std::string>().c_str())
          << QString::fromStdString(f["file"].get<std::string>());
  }
  void infoJson() {
    QFETCH(QString, file);
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    json want;
    for (const json& f : m["fixtures"])
      if (f["file"] == file.toStdString()) want = f;
    const QString path = kFixtures + "/" + file;
    const Run r = cli({"info", path, "--json"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.err.isEmpty());
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["file"].get<std::string>(), path.toStdString());
    QCOMPARE(got["format"].get<std::string>(), want["format"].get<std::string>());
    const std::string treeDiff = ckpt::test::compareJson(want["tree"], got["tree"]);
    QVERIFY2(treeDiff.empty(), treeDiff.c_str());
    QCOMPARE(got["tensors"].size(), want["tensors"].size());
    for (size_t i = 0; i < want["tensors"].size(); ++i) {
      const json& w = want["tensors"][i];
      const json& g = got["tensors"][i];
      for (const char* key :
           {"path", "dtype", "shape", "stride", "storage_offset", "storage", "requires_grad"}) {
        const std::string d = ckpt::test::compareJson(
            w[key], g[key], std::string("tensors[") + std::to_string(i) + "]." + key);
        QVERIFY2(d.empty(), d.c_str());
      }
    }
  }

  void infoText() {
    const Run r = cli({"info", kFixtures + "/runs/tiny/tiny_step100.pt"});
    QCOMPARE(r.exitCode, 0);
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    const json& run = m["runs"]["runs/tiny/tiny_step100.pt"];
    QVERIFY(r.out.contains(QByteArray("step        ") +
                           QByteArray::number(run["step"].get<qlonglong>())));
    QVERIFY(r.out.contains("tied        lm_head.weight = token_embed.weight"));
    QVERIFY(r.out.contains("model_state.blocks.0.attn.q_proj.weight"));
    QVERIFY(r.out.contains("optimizer.state.0.exp_avg"));
  }

  // "N of M mapped to parameters", as the Summary says it, against what
  // Python counted on the same files (make_fixtures.py: state index i is
  // the model's i-th parameter and its exp_avg has that parameter's shape).
  void infoOptimizerMapped() {
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    size_t checked = 0;
    for (const json& f : m["fixtures"]) {
      const json c = f.value("checkpoint", json::object());
      if (!c.contains("optimizer_mapped")) continue;
      const QString path = kFixtures + "/" + QString::fromStdString(f["file"].get<std::string>());
      const size_t mapped = c["optimizer_mapped"].get<size_t>();
      const size_t params = c["optimizer_with_state"].get<size_t>();
      const Run j = cli({"info", path, "--json"});
      QCOMPARE(j.exitCode, 0);
      const json got = json::parse(j.out.toStdString());
      QVERIFY2(got.contains("optimizer"), qPrintable(path));
      QCOMPARE(got["optimizer"]["mapped"].get<size_t>(), mapped);
      QCOMPARE(got["optimizer"]["params"].get<size_t>(), params);
      QCOMPARE(got["optimizer"]["with_state"].get<size_t>(), params);
      const Run t = cli({"info", path});
      QCOMPARE(t.exitCode, 0);
      const QByteArray want = QByteArray("; ") + QByteArray::number(qulonglong(mapped)) + " of " +
                              QByteArray::number(qulonglong(params)) + " mapped to parameters\n";
      QVERIFY2(t.out.contains("\noptimizer   " + QByteArray::number(qulonglong(params)) +
                              " parameters with state") &&
                   t.out.contains(want),
               t.out.constData());
      ++checked;
    }
    QVERIFY2(checked >= 3, qPrintable(QString::number(checked)));
  }

  void lsJson() {
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    const Run r = cli({"ls", kFixtures + "/runs", "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    size_t listed = 0;
    for (const json& run : got["runs"])
      for (const json& c : run["checkpoints"]) {
        const std::string file = "runs/" + c["file"].get<std::string>();
        QVERIFY2(m["runs"].contains(file), file.c_str());
        const json& w = m["runs"][file];
        QCOMPARE(run["name"].get<std::string>(), w["run"].get<std::string>());
        QVERIFY2(ckpt::test::compareJson(w["step"], c["step"]).empty(), file.c_str());
        QVERIFY2(ckpt::test::compareJson(w["kind"], c["kind"]).empty(), file.c_str());
        QVERIFY2(ckpt::test::compareJson(w["loss"], c["loss"]).empty(), file.c_str());
        QCOMPARE(c["error"].is_string(), w["error"].get<bool>());
        ++listed;
      }
    QCOMPARE(listed, m["runs"].size());
  }

  void verifyIntactAndBroken() {
    const QString good = kFixtures + "/runs/tiny/tiny_step100.pt";
    Run r = cli({"verify", good});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("OK"));

    // Flip one byte inside the last tensor record: torch would still load it.
    QTemporaryDir dir;
    const QString bad = dir.filePath("flipped.pt");
    QFile::copy(good, bad);
    r = cli({"info", bad, "--json"});
    const json info = json::parse(r.out.toStdString());
    QFile f(bad);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QByteArray bytes = f.readAll();
    // The first tensor record's data starts at a 64-byte boundary after "data/0".
    const int at = bytes.indexOf("data/0");
    QVERIFY(at > 0);
    const int dataStart = ((at + 6 + 4 + 63) / 64) * 64 + 64;  // well inside the aligned payload
    bytes[dataStart] = char(bytes[dataStart] ^ 0x01);
    f.seek(0);
    f.write(bytes);
    f.close();
    r = cli({"verify", bad});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.startsWith(("ckptscope-cli: " + bad + ": record ").toUtf8()), r.err.constData());
    QVERIFY(r.err.contains("CRC mismatch"));
    QCOMPARE(r.err.count('\n'), 1);
  }

  // A tensor whose bytes are not there: info prints all it can read (the
  // table with the ERROR row), then fails like diff and verify.
  void infoFailsOnMissingBytes_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("reason");
    QTest::newRow("storage record missing") << "storage_missing.pt"
                                            << "data/7";
    QTest::newRow("extent past the storage") << "tensor_extent_too_big.pt"
                                             << "";
    QTest::newRow("record too short") << "storage_record_short.pt"
                                      << "";
  }
  void infoFailsOnMissingBytes() {
    QFETCH(QString, file);
    QFETCH(QString, reason);
    const QString path = kFixtures + "/hostile/" + file;
    for (const bool asJson : {false, true}) {
      const Run r = asJson ? cli({"info", path, "--json"}) : cli({"info", path});
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.startsWith(("ckptscope-cli: " + path + ": ").toUtf8()), r.err.constData());
      QVERIFY2(r.err.contains(reason.toUtf8()), r.err.constData());
      QCOMPARE(r.err.count('\n'), 1);
      if (asJson) {
        QVERIFY(json::parse(r.out.toStdString()).contains("tensors"));  // still printed whole
      } else {
        QVERIFY2(r.out.contains("ERROR: "), r.out.constData());
        QVERIFY(r.out.contains("\ntotal "));
      }
    }
    const Run ok = cli({"info", kFixtures + "/hostile/control_ok.pt"});
    QCOMPARE(ok.exitCode, 0);
  }

  void metricsJson() {
    // The reference-library experiment: each stage exactly its own points,
    // as the Python regex over the job log found them, through the CLI.
    const QString exp = kFixtures + "/experiment";
    const json want =
        ckpt::test::readJsonFile(kFixtures.toStdString() + "/experiment_expected.json");
    const Run r = cli({"metrics", exp, "--json"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), r.err.constData());
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["runs"].size(), want["runs"].size());
    for (const json& run : got["runs"]) {
      const std::string name = run["name"].get<std::string>();
      QVERIFY2(want["runs"].contains(name), name.c_str());
      QCOMPARE(run["path"].get<std::string>(), exp.toStdString() + "/" + name);
      const json& w = want["runs"][name];
      QCOMPARE(run["series"].size(), w.size());
      for (const json& s : run["series"]) {
        const std::string metric = s["metric"].get<std::string>();
        QVERIFY2(w.contains(metric), (name + " " + metric).c_str());
        QCOMPARE(s["source"].get<std::string>(), std::string("log"));
        const std::string d = ckpt::test::compareJson(w[metric], s["points"], name + "." + metric);
        QVERIFY2(d.empty(), d.c_str());
        const bool restarted =
            want["restarts"].contains(name) && want["restarts"][name].contains(metric);
        QCOMPARE(s["restarts"], restarted ? want["restarts"][name][metric] : json::array());
      }
      // Markers: the loss logged at the checkpoint's step, or null.
      const json& markers = want["markers"][name];
      QCOMPARE(run["markers"].size(), markers.size());
      for (size_t i = 0; i < markers.size(); ++i) {
        QCOMPARE(run["markers"][i]["step"], markers[i][0]);
        const std::string d = ckpt::test::compareJson(markers[i][1], run["markers"][i]["loss"]);
        QVERIFY2(d.empty(), d.c_str());
      }
    }
    // --metric keeps one metric; a log given by hand adds the runs only it knows.
    const Run one = cli({"metrics", exp, "--json", "--metric", "val_loss", "--log",
                         exp + "/logs/pipeline_48213.err"});
    QCOMPARE(one.exitCode, 0);
    const json j = json::parse(one.out.toStdString());
    QCOMPARE(j["runs"].size(), want["runs"].size() + want["log_only"].size());
    for (const json& run : j["runs"])
      for (const json& s : run["series"])
        QCOMPARE(s["metric"].get<std::string>(), std::string("val_loss"));
    QCOMPARE(j["runs"].back()["name"].get<std::string>(), std::string("tiny-ghost"));
  }

  void metricsCsvAndText() {
    const QString exp = kFixtures + "/experiment";
    const json want =
        ckpt::test::readJsonFile(kFixtures.toStdString() + "/experiment_expected.json");
    Run r = cli({"metrics", exp, "--csv", "--metric", "loss"});
    QCOMPARE(r.exitCode, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.front(), QByteArray("run,metric,step,value,wall_time,tokens,source"));
    size_t points = 0;
    for (const auto& [name, series] : want["runs"].items()) points += series["loss"].size();
    QCOMPARE(size_t(lines.size() - 1), points);
    // One row, checked field by field against the regex's first pretrain point.
    const json& first = want["runs"]["checkpoints/tiny-dpo"]["loss"][0];
    const QList<QByteArray> row = lines[1].split(',');
    QCOMPARE(row.size(), 7);
    QCOMPARE(row[0], QByteArray("checkpoints/tiny-dpo"));
    QCOMPARE(row[1], QByteArray("loss"));
    QCOMPARE(row[2].toLongLong(), first[0].get<qlonglong>());
    QCOMPARE(row[3].toDouble(), first[1].get<double>());
    QCOMPARE(row[4].toDouble(), first[2].get<double>());
    QCOMPARE(row[5], QByteArray());
    QCOMPARE(row[6], (exp + "/logs/pipeline_48213.err").toUtf8());

    r = cli({"metrics", exp});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("checkpoints/tiny-pretrain"));
    QVERIFY(r.out.contains("(restarted at step 50)"));
    QVERIFY(r.out.contains(
        "2 checkpoints, 1 with a recorded or logged loss"));  // tiny-sft: 33 has none
  }

  void metricsErrors() {
    Run r = cli({"metrics", kFixtures + "/no/such/dir"});
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(QString::fromUtf8(r.err),
             "ckptscope-cli: " + kFixtures + "/no/such/dir: no such file or directory\n");
    r = cli({"metrics", kFixtures + "/manifest.json"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.contains("neither a checkpoint, a metrics.jsonl nor a directory"));
    QCOMPARE(cli({"metrics"}).exitCode, 2);
    QCOMPARE(cli({"metrics", kFixtures, "--metric"}).exitCode, 2);
    QCOMPARE(cli({"metrics", kFixtures, "--json", "--csv"}).exitCode, 2);
    QCOMPARE(cli({"metrics", kFixtures, "--bogus"}).exitCode, 2);
    // A log that does not exist, given by hand: said so in its run's problems.
    r = cli({"metrics", "--log", kFixtures + "/no/such.log", "--json"});
    QCOMPARE(r.exitCode, 0);
    const json j = json::parse(r.out.toStdString());
    QCOMPARE(j["runs"].size(), size_t(1));
    QCOMPARE(j["runs"][0]["problems"][0].get<std::string>(),
             kFixtures.toStdString() + "/no/such.log: no such file");
  }

  void errors() {
    Run r = cli({"info", kFixtures + "/no/such.pt"});
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(QString::fromUtf8(r.err), "ckptscope-cli: " + kFixtures +
                                           "/no/such.pt: cannot open: No such file or directory\n");
    r = cli({"info", kFixtures + "/runs/tiny/broken_step400.pt"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(
        r.err.startsWith(
            ("ckptscope-cli: " + kFixtures + "/runs/tiny/broken_step400.pt: truncated").toUtf8()),
        r.err.constData());
    QCOMPARE(r.err.count('\n'), 1);
    r = cli({"info", kFixtures + "/hostile/pwn_os_system.pt"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("posix.system"));
    r = cli({});
    QCOMPARE(r.exitCode, 2);
    r = cli({"frobnicate"});
    QCOMPARE(r.exitCode, 2);
    r = cli({"info", "--bogus", "x.pt"});
    QCOMPARE(r.exitCode, 2);
    r = cli({"ls", kFixtures + "/manifest.json"});
    QCOMPARE(r.exitCode, 1);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
