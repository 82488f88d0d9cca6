// SIGKILL the trainer at random moments (while it starts, steps, evaluates,
// saves, cuts metrics back): after each kill every file at a final path
// verifies and `resume DIR` carries on; at the end the weights and the
// history equal an uninterrupted run's, bit for bit (CPU).
//
// CKPT_KILLS (default 20) and CKPT_KILL_SEED (default 11) change the run.
#include <QtTest>

#include <filesystem>

#include "../core/run_outputs.h"
#include "../core/run_process.h"
#include "ckpt/format/checkpoint_file.h"
#include "run_files.h"

namespace fs = std::filesystem;

class TestTrainKill : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

  std::string path(const QString& rel) const { return (m_dir.path() + "/" + rel).toStdString(); }

  // Every checkpoint at a final path (not the trash) opens and verifies.
  static QString damagedFile(const std::string& dir) {
    if (!fs::exists(dir)) return {};  // killed before it made the directory
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".pt") continue;
      try {
        const auto f = ckpt::CheckpointFile::open(e.path().string());
        const auto problems = f->verify();
        if (!problems.empty())
          return QString::fromStdString(e.path().string() + ": " + problems.front());
      } catch (const std::exception& err) {
        return QString::fromUtf8(err.what());
      }
    }
    return {};
  }

  static bool hasCheckpoint(const std::string& dir) {
    if (!fs::exists(dir)) return false;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".pt") return true;
    return false;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    std::ofstream corpus(path("corpus.txt"));
    for (int i = 0; i < 8; ++i) corpus << "Part " << i << ". " << ckpt::test::kText;
    std::ofstream(path("run.json")) << R"({
      "model": {"vocab_size": 256, "d_model": 16, "n_layers": 1, "n_heads": 2, "ffn_hidden_size": 40, "max_seq_len": 16},
      "training": {"run_name": "k", "batch_size": 2, "micro_batch_size": 1, "seq_len": 16, "learning_rate": 0.003,
                   "warmup_steps": 3, "max_steps": 400, "eval_every": 4, "eval_batches": 1, "save_every": 2,
                   "log_every": 1, "seed": 5, "mixed_precision": "fp32", "device": "cpu"},
      "data": {"path": "corpus.txt", "tokenizer": "bytes", "val_fraction": 0.1}})";
  }

  void killedAtRandomMomentsEndsLikeAStraightRun() {
    const QString cli = QStringLiteral(CKPT_CLI);
    const auto straight = ckpt::test::runProcess(
        cli, {"train", "--config", "run.json", "--out", "straight"}, m_dir.path());
    QVERIFY2(straight.exitCode == 0, straight.err.constData());

    const int kills =
        qEnvironmentVariableIsSet("CKPT_KILLS") ? qEnvironmentVariableIntValue("CKPT_KILLS") : 20;
    const quint32 seed = qEnvironmentVariableIsSet("CKPT_KILL_SEED")
                             ? quint32(qEnvironmentVariableIntValue("CKPT_KILL_SEED"))
                             : 11;
    QRandomGenerator rng(seed);
    const std::string run = path("killed");
    int killed = 0, finishedEarly = 0;
    QStringList moments;
    for (int i = 0; i < kills; ++i) {
      // The first launch trains; later ones resume the directory. A kill
      // before the first checkpoint leaves nothing to resume: train again,
      // moving what the killed run left to .trash/.
      const QStringList args = hasCheckpoint(run) ? QStringList{"resume", "killed"}
                                                  : QStringList{"train", "--config", "run.json",
                                                                "--out", "killed",   "--overwrite"};
      QProcess p;
      p.setWorkingDirectory(m_dir.path());
      p.start(cli, args);
      QVERIFY(p.waitForStarted());
      QByteArray out;
      const int mode = int(rng.bounded(4));
      if (mode == 0) {
        // While it starts: loading, planning, moving, cutting metrics back.
        QThread::msleep(rng.bounded(700));
      } else {
        // After a few steps, a few milliseconds into the next (or its save).
        const int steps = 1 + int(rng.bounded(5));
        QElapsedTimer t;
        t.start();
        while (out.count("step=") < steps && p.state() == QProcess::Running &&
               t.elapsed() < 60000) {
          p.waitForReadyRead(100);
          out += p.readAllStandardOutput();
        }
        QThread::usleep(rng.bounded(30000));
      }
      if (p.state() == QProcess::Running) {
        p.kill();  // SIGKILL
        QVERIFY(p.waitForFinished());
        ++killed;
        moments << QString("%1:%2").arg(mode).arg(out.count("step="));
      } else {
        p.waitForFinished();
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        ++finishedEarly;
        break;  // ran to the end before the kill
      }
      const QString bad = damagedFile(run);
      QVERIFY2(bad.isEmpty(), qPrintable("after kill " + QString::number(i + 1) + ": " + bad));
    }
    qInfo("%d kills (mode:steps seen %s), %d finished before its kill", killed,
          qPrintable(moments.join(' ')), finishedEarly);
    QVERIFY(killed >= kills / 2);

    if (!fs::exists(run + "/k_final.pt")) {
      const auto last = ckpt::test::runProcess(cli, {"resume", "killed"}, m_dir.path());
      QVERIFY2(last.exitCode == 0, last.err.constData());
      QVERIFY2(last.out.contains("finished at step 400"), last.out.constData());
    }
    QVERIFY2(damagedFile(run).isEmpty(), qPrintable(damagedFile(run)));
    QVERIFY(ckpt::test::weightBytes(run + "/k_final.pt") ==
            ckpt::test::weightBytes(path("straight") + "/k_final.pt"));
    // One history, equal to the straight run's.
    const auto a = ckpt::test::metricsLines(path("straight")), b = ckpt::test::metricsLines(run);
    QCOMPARE(b.size(), size_t(400));
    for (size_t i = 0; i < b.size(); ++i) {
      QCOMPARE(b[i]["step"].get<int64_t>(), int64_t(i + 1));
      QCOMPARE(b[i]["loss"].dump(), a[i]["loss"].dump());
      QCOMPARE(b[i].value("val_loss", -1.0), a[i].value("val_loss", -1.0));
    }
    // No killed writer's temporary file is left behind.
    for (const auto& e : fs::directory_iterator(run))
      QVERIFY2(e.path().filename().string().find(".tmp-") == std::string::npos, e.path().c_str());
  }
};

QTEST_GUILESS_MAIN(TestTrainKill)
#include "tst_train_kill.moc"
