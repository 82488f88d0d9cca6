// Directory scanning: runs, steps, kinds and losses against what the Python
// script that wrote the files says they are.
#include <QtTest>

#include <map>

#include "ckpt/index/scanner.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;

class TestIndex : public QObject {
  Q_OBJECT

 private slots:
  void names_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qlonglong>("step");  // -1: none
    QTest::addColumn<QString>("kind");
    QTest::newRow("run step") << "tiny_step200.pt" << 200LL << "step";
    QTest::newRow("stage step") << "shakespeare-sft_step50.pt" << 50LL << "step";
    QTest::newRow("hand loop") << "checkpoint_50.pt" << 50LL << "step";
    QTest::newRow("final") << "tiny-pretrain_final.pt" << -1LL << "final";
    QTest::newRow("best") << "best_checkpoint.pt" << -1LL << "best";
    QTest::newRow("latest") << "latest_checkpoint.pt" << -1LL << "latest";
    QTest::newRow("plain") << "model.pt" << -1LL << "";
    QTest::newRow("step_ with separator") << "run_step_0300.pt" << 300LL << "step";
    QTest::newRow("no false step") << "missteps.pt" << -1LL << "";
    // fairseq's checkpoint_best.pt / checkpoint_last.pt, PyTorch's ImageNet
    // example's checkpoint.pth.tar and model_best.pth.tar.
    QTest::newRow("fairseq best") << "checkpoint_best.pt" << -1LL << "best";
    QTest::newRow("fairseq last") << "checkpoint_last.pt" << -1LL << "latest";
    QTest::newRow("imagenet best") << "model_best.pth.tar" << -1LL << "best";
    QTest::newRow("imagenet latest") << "checkpoint.pth.tar" << -1LL << "";
    QTest::newRow("pth.tar step") << "checkpoint_30.pth.tar" << 30LL << "step";
    QTest::newRow("no false last") << "model_blast.pt" << -1LL << "";
  }
  void names() {
    QFETCH(QString, name);
    QFETCH(qlonglong, step);
    QFETCH(QString, kind);
    const NameInfo info = parseCheckpointName(name.toStdString());
    QCOMPARE(info.step ? qlonglong(*info.step) : -1LL, step);
    QCOMPARE(QString::fromLatin1(checkpointKindName(info.kind).data(),
                                 int(checkpointKindName(info.kind).size())),
             kind);
  }

  void scanFixtures() {
    const json manifest =
        ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/manifest.json");
    const json& want = manifest["runs"];
    const std::string root = std::string(CKPT_FIXTURE_DIR) + "/runs";
    const ScanResult result = scanDirectory(root);
    std::map<std::string, std::pair<std::string, const CheckpointEntry*>>
        got;  // file -> (run, entry)
    for (const RunEntry& run : result.runs) {
      int64_t previous = INT64_MIN;
      for (const CheckpointEntry& c : run.checkpoints) {
        got["runs/" + c.file] = {run.name, &c};
        // Sorted by step within a run.
        if (c.step) {
          QVERIFY(*c.step >= previous);
          previous = *c.step;
        }
      }
    }
    QCOMPARE(got.size(), want.size());  // notes.txt and random.bin are not listed
    for (const auto& [file, w] : want.items()) {
      QVERIFY2(got.count(file), ("not listed: " + file).c_str());
      const auto& [run, c] = got[file];
      QCOMPARE(run, w["run"].get<std::string>());
      QVERIFY2(c->step == (w["step"].is_null() ? std::optional<int64_t>()
                                               : std::optional<int64_t>(w["step"].get<int64_t>())),
               file.c_str());
      const std::string kind = w["kind"].is_null() ? "" : w["kind"].get<std::string>();
      QVERIFY2(std::string(checkpointKindName(c->kind)) == kind,
               (file + ": kind " + std::string(checkpointKindName(c->kind))).c_str());
      if (w["loss"].is_null())
        QVERIFY2(!c->loss, file.c_str());
      else
        QVERIFY2(c->loss && *c->loss == w["loss"].get<double>(), file.c_str());
      QVERIFY2(c->error.empty() != w["error"].get<bool>(), (file + ": " + c->error).c_str());
      QVERIFY(c->size > 0);
      QVERIFY(c->mtime > 0);
    }
  }

  void notADirectory() {
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             scanDirectory(std::string(CKPT_FIXTURE_DIR) + "/manifest.json"));
  }
};

QTEST_GUILESS_MAIN(TestIndex)
#include "tst_index.moc"
