// A Megatron-LM save with the distributed optimizer, through the real CLI:
// make_megatron_distrib.py writes iter_0000050/ with two pipeline ranks,
// each model_optim_rng.pt and distrib_optim.pt beside it, clean and with a
// distrib_optim.pt whose pickle calls os.system (posix.system). torch.load
// unpickles distrib_optim.pt as it does the rank file: the scan of the save
// must walk it, and verify must check it and say so (files, records and
// tensors, against what zipfile and torch.load read from the same files).
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ckpt/index/checkpoint_description.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = CKPT_FIXTURE_DIR "/megatron_distrib";

const json& expected() {
  static const json doc = [] {
    std::ifstream in(kRoot + "/expected.json");
    return json::parse(in);
  }();
  return doc;
}

ckpt::test::ProcessResult cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args);
}

QString folder(const char* which) {
  return QString::fromStdString(kRoot + "/" + expected()[which]["folder"].get<std::string>());
}

std::set<std::string> wantFiles(const char* which) {
  std::set<std::string> out;
  for (const json& f : expected()[which]["files"]) out.insert(f.get<std::string>());
  return out;
}

}  // namespace

class TestMegatronCli : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(kRoot + "/expected.json"),
             "no fixtures: run ctest (make_megatron_distrib)");
  }

  // The folder is dangerous because of its distrib_optim.pt: exit 3, the
  // global and the file named, in text and in JSON.
  void dangerousDistribOptimMakesTheSaveDangerous() {
    const json& want = expected()["dangerous"];
    const std::string file = want["file"], global = want["global"];
    const ckpt::test::ProcessResult text = cli({"scan", folder("dangerous")});
    QCOMPARE(text.exitCode, 3);
    const QString out = QString::fromUtf8(text.out);
    const QString checkpointLine = [&] {
      for (const QString& line : out.split('\n'))
        if (line.startsWith("dangerous") && line.contains("[sharded: Megatron-LM]")) return line;
      return QString();
    }();
    QVERIFY2(!checkpointLine.isEmpty(), qPrintable(out));
    QVERIFY2(checkpointLine.contains(QString::fromStdString(file)), qPrintable(checkpointLine));
    QVERIFY2(checkpointLine.contains(QString::fromStdString(global)), qPrintable(checkpointLine));

    const ckpt::test::ProcessResult asJson = cli({"scan", "--json", folder("dangerous")});
    QCOMPARE(asJson.exitCode, 3);
    const json doc = json::parse(asJson.out.toStdString());
    QCOMPARE(doc["checkpoints"].size(), size_t(1));
    const json& c = doc["checkpoints"][0];
    QCOMPARE(c["verdict"].get<std::string>(), std::string("dangerous"));
    QCOMPARE(c["file"].get<std::string>(), file);
    // Every file the save holds was walked, as Python lists them.
    std::set<std::string> scanned;
    for (const json& f : c["files"]) scanned.insert(f.get<std::string>());
    QCOMPARE(scanned, wantFiles("dangerous"));
    // The file's own line names the global and where its opcode is.
    bool named = false;
    for (const json& f : doc["files"])
      if (f["file"].get<std::string>().ends_with(file)) {
        QCOMPARE(f["verdict"].get<std::string>(), std::string("dangerous"));
        for (const json& g : f["globals"])
          named |= g["module"].get<std::string>() + "." + g["name"].get<std::string>() == global &&
                   g["level"] == "dangerous" && g["offset"].get<uint64_t>() > 0;
      }
    QVERIFY2(named, asJson.out.constData());

    // The save folder walked with --recursive: the same.
    const QString save =
        QString::fromStdString(fs::path(folder("dangerous").toStdString()).parent_path().string());
    QCOMPARE(cli({"scan", "--recursive", save}).exitCode, 3);

    // What Inspect shows for the folder (the browser's verdict).
    ckpt::DescribedSafety safety;
    (void)ckpt::describeCheckpointAt(folder("dangerous").toStdString(), &safety);
    QCOMPARE(int(safety.verdict), int(ckpt::Verdict::Dangerous));
    QCOMPARE(safety.worstFile, file);
    QVERIFY(std::find(safety.dangerous.begin(), safety.dangerous.end(), global) !=
            safety.dangerous.end());
  }

  // The clean save: safe, every file walked.
  void cleanSaveIsSafe() {
    const ckpt::test::ProcessResult r = cli({"scan", "--json", folder("clean")});
    QCOMPARE(r.exitCode, 0);
    const json doc = json::parse(r.out.toStdString());
    QCOMPARE(doc["checkpoints"].size(), size_t(1));
    const json& c = doc["checkpoints"][0];
    QCOMPARE(c["verdict"].get<std::string>(), std::string("safe"));
    std::set<std::string> scanned;
    for (const json& f : c["files"]) scanned.insert(f.get<std::string>());
    QCOMPARE(scanned, wantFiles("clean"));
    QCOMPARE(doc["files"].size(), wantFiles("clean").size());
    for (const json& f : doc["files"])
      QCOMPARE(f["verdict"].get<std::string>(), std::string("safe"));
  }

  // verify checks every file and counts them: the records zipfile lists
  // and the tensors torch.load reads, summed over the files.
  void verifyCountsEveryFile() {
    const json& want = expected()["clean"];
    const ckpt::test::ProcessResult r = cli({"verify", folder("clean")});
    QCOMPARE(r.exitCode, 0);
    const QString line = QString::fromUtf8(r.out).trimmed();
    const QString counts = QString("OK (sharded: Megatron-LM, %1 files, %2 records, %3 tensors, ")
                               .arg(want["files"].size())
                               .arg(want["records"].get<int>())
                               .arg(want["tensors"].get<int>());
    QVERIFY2(line.contains(counts), qPrintable(line + "\nwanted: " + counts));
  }
};

QTEST_GUILESS_MAIN(TestMegatronCli)
#include "tst_megatron_cli.moc"
