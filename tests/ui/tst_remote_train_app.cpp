// The Train tab on a checkpoint on another machine (docs/REMOTE.md,
// "Training on the host"), driven as a person does: a real OpenSSH server
// on loopback (tests/core/ssh_server.h) serves a folder with a tiny run; a
// click on its older checkpoint, Ctrl+R, a max_steps typed, a click on
// "Start on 127.0.0.1". The resume must start on "the host" (a process of
// its own), its new run appear in the browser and its metrics.jsonl lines
// on the chart; closing the window must leave it training.
#include <signal.h>

#include <QDir>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>
#include <fstream>

#include "../core/run_process.h"
#include "../core/ssh_server.h"
#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "training/trainpanel.h"
#include "window_driver.h"

using ckpt::MainWindow;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool running(qint64 pid) {
  const QByteArray stat = readAll(QString("/proc/%1/stat").arg(pid));
  const int close = stat.lastIndexOf(')');
  return close > 0 && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

// The largest step the Curves tab holds for `metric` of the run at `runPath` (-1: none).
int64_t lastStep(ckpt::CurvesView* view, const QString& runPath, const std::string& metric) {
  for (const ckpt::CurveRun& r : view->runs()) {
    if (r.path != runPath) continue;
    const ckpt::MetricSeries* s = r.find(metric);
    if (!s || s->points.size() == 0) return -1;
    return s->points[s->points.size() - 1].step;
  }
  return -1;
}

// The largest step metrics.jsonl holds (what the trainer wrote on the host).
int64_t lastLoggedStep(const QString& file) {
  int64_t last = -1;
  for (const QByteArray& line : readAll(file).split('\n')) {
    const auto m = QRegularExpression("\"step\":\\s*(\\d+)").match(QString::fromUtf8(line));
    if (m.hasMatch()) last = std::max<int64_t>(last, m.captured(1).toLongLong());
  }
  return last;
}

}  // namespace

class TestRemoteTrainApp : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_exp;

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
    m_exp = m_tmp.path() + "/exp 'one'; two";
    QVERIFY(QDir().mkpath(m_exp));
    std::ofstream corpus((m_exp + "/corpus.txt").toStdString());
    for (int i = 0; i < 60; ++i)
      corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
    corpus.close();
    std::ofstream((m_exp + "/run.json").toStdString()) << R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
      "training": {"run_name": "tiny", "batch_size": 2, "micro_batch_size": 2, "seq_len": 32, "learning_rate": 0.003,
                   "max_steps": 4, "eval_every": 2, "save_every": 2, "log_every": 1, "mixed_precision": "fp32"},
      "data": {"path": "corpus.txt"}})";
    const ckpt::test::ProcessResult r = ckpt::test::runProcess(
        CKPT_CLI, {"train", "--config", "run.json", "--out", "runs/tiny", "--device", "cpu"},
        m_exp);
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  void resumeStartsOnTheHostAndIsFollowed() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString older = m_exp + "/runs/tiny/tiny_step2.pt";
    const QString branch = m_exp + "/runs/tiny@2";
    qint64 pid = 0;
    {
      MainWindow w;
      w.resize(1280, 800);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      const QString location = QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_exp);
      QVERIFY(ckpt::test::openAndWait(w, {location}, 60000));
      QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(older).isValid(), 20000);

      // The older checkpoint clicked where it is drawn, then Ctrl+R.
      QTreeView* view = w.checkpointView();
      const QModelIndex row =
          w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfPath(older));
      view->scrollTo(row);
      QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());
      QTest::keyClick(&w, Qt::Key_R, Qt::ControlModifier);
      ckpt::TrainPanel* panel = w.trainPanel();
      QTRY_VERIFY(panel->isVisible());
      QCOMPARE(panel->resumeCheckpointEdit()->text(),
               QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(older));
      QVERIFY2(panel->resumePlanText().startsWith("On 127.0.0.1: Start starts the resume there"),
               qPrintable(panel->resumePlanText()));
      // max_steps typed: enough steps that it still trains when the window closes.
      QSpinBox* steps = panel->resumeMaxStepsBox();
      steps->setFocus();
      steps->selectAll();
      QTest::keyClicks(steps, "5000");
      QCOMPARE(steps->value(), 5000);
      QPushButton* start = panel->startButton();
      QTRY_VERIFY(start->isEnabled());
      QCOMPARE(start->text(), QString("Start on 127.0.0.1"));
      QTest::mouseClick(start, Qt::LeftButton);

      QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains("Started on 127.0.0.1 (pid"), 60000);
      const auto m = QRegularExpression("\\(pid (\\d+)\\)").match(panel->statusText());
      QVERIFY(m.hasMatch());
      pid = m.captured(1).toLongLong();
      QVERIFY2(panel->statusText().contains("run tiny@2 in " + branch),
               qPrintable(panel->statusText()));

      // The new run in the browser, its lines on the chart as they are written.
      QTRY_VERIFY_WITH_TIMEOUT(
          w.checkpointModel()->indexOfPath(branch + "/tiny@2_step4.pt").isValid() ||
              lastStep(w.curvesView(), branch, "loss") > 2,
          30000);
      QTRY_VERIFY_WITH_TIMEOUT(lastStep(w.curvesView(), branch, "loss") >= 20, 30000);
      const int64_t shown = lastStep(w.curvesView(), branch, "loss");
      QVERIFY(shown <= lastLoggedStep(branch + "/metrics.jsonl"));
      // More keeps arriving while it trains.
      QTRY_VERIFY_WITH_TIMEOUT(lastStep(w.curvesView(), branch, "loss") > shown, 30000);
      QVERIFY(running(pid));
    }
    // The window (and its ssh connections) closed: the run goes on there.
    QTest::qWait(1500);
    QVERIFY2(running(pid), "closing the app stopped the run on the host");
    const int64_t before = lastLoggedStep(branch + "/metrics.jsonl");
    QTRY_VERIFY_WITH_TIMEOUT(lastLoggedStep(branch + "/metrics.jsonl") > before, 20000);
    // Stopped there as a person would (kill PID: it saves a checkpoint and ends).
    ::kill(pid_t(pid), SIGTERM);
    QTRY_VERIFY_WITH_TIMEOUT(!running(pid), 60000);
  }
};

QTEST_MAIN(TestRemoteTrainApp)
#include "tst_remote_train_app.moc"
