// ckptscope-cli's training subcommands as a user runs them: ckptscope-cli
// hands them to ckptscope-train; output formats, exit codes, one-line errors.
#include <QtTest>

#include <fstream>

#include "../core/json_compare.h"
#include "../core/run_outputs.h"
#include "../core/run_process.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

Run cli(const QStringList& args, const QString& cwd) { return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, cwd); }

}  // namespace

class TestTrainCli : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    std::ofstream corpus(m_dir.filePath("corpus.txt").toStdString());
    for (int i = 0; i < 60; ++i) corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
    std::ofstream(m_dir.filePath("run.json").toStdString()) << R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
      "training": {"run_name": "cli", "batch_size": 2, "micro_batch_size": 2, "seq_len": 32, "learning_rate": 0.003,
                   "max_steps": 6, "eval_every": 3, "save_every": 3, "log_every": 2, "mixed_precision": "fp32"},
      "data": {"path": "corpus.txt"}})";
  }

  void trainResumeFinetuneScoreGenerate() {
    const QString d = m_dir.path();
    Run r = cli({"train", "--config", "run.json", "--out", "runs/cli", "max_steps=4"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    // Not a terminal: the reference library's log lines.
    QVERIFY(r.out.contains("step=2 loss="));
    QVERIFY(r.out.contains("step=4 loss="));
    QVERIFY(!r.out.contains("step=6 loss="));  // the key=value override won
    QVERIFY(r.out.contains("finished at step 4: runs/cli/cli_final.pt"));
    QVERIFY(QFile::exists(d + "/runs/cli/cli_step3.pt"));

    r = cli({"resume", "runs/cli/cli_final.pt", "--max-steps", "6"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.contains("step=6 loss="));
    QVERIFY(r.err.contains("from step 4 to 6"));

    r = cli({"finetune", "runs/cli/cli_final.pt", "--data", "corpus.txt", "--max-steps", "2", "--stage", "dpo"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(QFile::exists(d + "/runs/cli-dpo/cli-dpo_final.pt"));

    r = cli({"score", "runs/cli/cli_final.pt", "--data", "corpus.txt", "--seq-len", "16", "--json"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const json s = json::parse(r.out.toStdString());
    const qint64 bytes = QFileInfo(d + "/corpus.txt").size();
    QCOMPARE(s["windows"].get<qint64>(), bytes / 16);  // byte tokens, last partial window dropped
    QCOMPARE(s["tokens"].get<qint64>(), (bytes / 16) * 16);
    QVERIFY(s["loss"].get<double>() > 0 && s["loss"].get<double>() < 6.0);

    const QStringList gen{"generate", "runs/cli/cli_final.pt", "--prompt", "Sing", "--max-new-tokens", "12",
                          "--seed", "3", "--top-k", "8"};
    const Run g1 = cli(gen, d), g2 = cli(gen, d);
    QVERIFY2(g1.exitCode == 0, g1.err.constData());
    QVERIFY(g1.out.startsWith("Sing"));
    QCOMPARE(g1.out, g2.out);  // seeded
  }


  void wrappedCheckpoints() {
    // The checkpoint of step 3 re-saved by python3-torch as a DDP-wrapped
    // (and compiled) model would have saved it: score gives the same loss,
    // and resuming it gives bit for bit the weights that resuming the plain
    // file gives.
    const QString d = m_dir.path();
    QDir(d).mkpath("runs/plain");
    QFile::copy(d + "/runs/cli/cli_step3.pt", d + "/runs/plain/cli_step3.pt");
    const QString script = QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wrap_state_dict.py");
    for (const char* prefix : {"module.", "module._orig_mod."}) {
      const QString dir = QString("runs/wrapped-%1").arg(QString(prefix).count('.'));
      QDir(d).mkpath(dir);
      const auto py = ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON),
                                             {script, d + "/runs/cli/cli_step3.pt", d + "/" + dir + "/cli_step3.pt", prefix});
      QVERIFY2(py.exitCode == 0, py.err.constData());

      const QStringList score{"--data", "corpus.txt", "--seq-len", "16", "--json"};
      const Run plain = cli(QStringList{"score", "runs/plain/cli_step3.pt"} + score, d);
      const Run wrapped = cli(QStringList{"score", dir + "/cli_step3.pt"} + score, d);
      QVERIFY2(plain.exitCode == 0, plain.err.constData());
      QVERIFY2(wrapped.exitCode == 0, wrapped.err.constData());
      QCOMPARE(json::parse(wrapped.out.toStdString())["loss"].get<double>(),
               json::parse(plain.out.toStdString())["loss"].get<double>());

      const Run r = cli({"resume", dir + "/cli_step3.pt", "--max-steps", "5"}, d);
      QVERIFY2(r.exitCode == 0, r.err.constData());
    }
    const Run r = cli({"resume", "runs/plain/cli_step3.pt", "--max-steps", "5"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto want = ckpt::test::weightBytes((d + "/runs/plain/cli_final.pt").toStdString());
    QVERIFY(!want.empty());
    for (const char* dir : {"runs/wrapped-1", "runs/wrapped-2"})
      QVERIFY2(ckpt::test::weightBytes((d + "/" + dir + "/cli_final.pt").toStdString()) == want, dir);
  }

  void errors() {
    const QString d = m_dir.path();
    Run r = cli({"train", "--config", "run.json", "ffn_hidden_size=32"}, d);
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(QString::fromUtf8(r.err), "ckptscope-cli: ffn_hidden_size (32) must exceed d_model (32)\n");
    r = cli({"train", "--config", "missing.json"}, d);
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.startsWith("ckptscope-cli: missing.json: cannot open"));
    r = cli({"train"}, d);
    QCOMPARE(r.exitCode, 2);
    r = cli({"score", "x.pt", "--bogus"}, d);
    QCOMPARE(r.exitCode, 2);
    r = cli({"resume", "nothere.pt"}, d);
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.startsWith("ckptscope-cli: nothere.pt: cannot open"));
    QCOMPARE(r.err.count('\n'), 1);
  }
};

QTEST_GUILESS_MAIN(TestTrainCli)
#include "tst_train_cli.moc"
