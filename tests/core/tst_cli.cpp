// ckptscope-cli as a user runs it: output against what Python wrote, exit
// codes, and one-line errors that name the file.
#include <QtTest>

#include <fstream>

#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

Run cli(const QStringList& args) { return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000); }

const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void infoJson_data() {
    QTest::addColumn<QString>("file");
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    for (const json& f : m["fixtures"]) QTest::newRow(f["file"].get<std::string>().c_str()) << QString::fromStdString(f["file"].get<std::string>());
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
      for (const char* key : {"path", "dtype", "shape", "stride", "storage_offset", "storage", "requires_grad"}) {
        const std::string d = ckpt::test::compareJson(w[key], g[key], std::string("tensors[") + std::to_string(i) + "]." + key);
        QVERIFY2(d.empty(), d.c_str());
      }
    }
  }

  void infoText() {
    const Run r = cli({"info", kFixtures + "/runs/tiny/tiny_step100.pt"});
    QCOMPARE(r.exitCode, 0);
    const json m = ckpt::test::readJsonFile(kFixtures.toStdString() + "/manifest.json");
    const json& run = m["runs"]["runs/tiny/tiny_step100.pt"];
    QVERIFY(r.out.contains(QByteArray("step        ") + QByteArray::number(run["step"].get<qlonglong>())));
    QVERIFY(r.out.contains("tied        lm_head.weight = token_embed.weight"));
    QVERIFY(r.out.contains("model_state.blocks.0.attn.q_proj.weight"));
    QVERIFY(r.out.contains("optimizer.state.0.exp_avg"));
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
    const int at = bytes.indexOf("data/0") ;
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
    QTest::newRow("storage record missing") << "storage_missing.pt" << "data/7";
    QTest::newRow("extent past the storage") << "tensor_extent_too_big.pt" << "";
    QTest::newRow("record too short") << "storage_record_short.pt" << "";
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

  void errors() {
    Run r = cli({"info", kFixtures + "/no/such.pt"});
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(QString::fromUtf8(r.err), "ckptscope-cli: " + kFixtures + "/no/such.pt: cannot open: No such file or directory\n");
    r = cli({"info", kFixtures + "/runs/tiny/broken_step400.pt"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.startsWith(("ckptscope-cli: " + kFixtures + "/runs/tiny/broken_step400.pt: truncated").toUtf8()), r.err.constData());
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
