// Following a folder on another machine without F5: a real OpenSSH server
// on loopback (tests/core/ssh_server.h) and the real agent behind it. A
// metrics line appended on "the host" (the test's folder, served through
// sshd) must reach the Curves tab, a checkpoint saved there the browser,
// each within seconds (the watch polls every second); once the sshd side
// of the connections is killed, the watch connects again and what is
// written next still arrives. A log beside the run folder opened is
// followed with F5, before and after a connection is made again.
#include <signal.h>

#include <QDir>
#include <QElapsedTimer>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "../core/copy_tree.h"
#include "../core/run_process.h"
#include "../core/ssh_server.h"
#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "process_tree.h"
#include "window_driver.h"

using ckpt::MainWindow;

namespace {

bool append(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::Append)) return false;
  return f.write(text) == text.size();
}

// Whether the Curves tab holds `value` at `step` for `metric` of the run at `runPath`.
bool shows(ckpt::CurvesView* view, const QString& runPath, const std::string& metric, int64_t step,
           double value) {
  for (const ckpt::CurveRun& r : view->runs()) {
    if (r.path != runPath) continue;
    const ckpt::MetricSeries* s = r.find(metric);
    if (!s) return false;
    for (size_t i = 0; i < s->points.size(); ++i) {
      const ckpt::MetricPoint p = s->points[i];
      if (p.step == step) return p.value == value;
    }
  }
  return false;
}

}  // namespace

class TestRemoteLive : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_dir;

  [[nodiscard]] QString host() const { return QString("ssh://127.0.0.1:%1").arg(m_server.port()); }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_dir = m_tmp.path() + "/exp";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment", m_dir));
    // A run of its own: a checkpoint and a metrics.jsonl the test writes.
    QVERIFY(QDir().mkpath(m_dir + "/live"));
    QVERIFY(QFile::copy(m_dir + "/checkpoints/tiny-pretrain/tiny-pretrain_step40.pt",
                        m_dir + "/live/live_step40.pt"));
    QVERIFY(append(m_dir + "/live/metrics.jsonl",
                   "{\"step\": 10, \"loss\": 4.5}\n{\"step\": 20, \"loss\": 4.25}\n"));
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  void followsTheHost() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow w;
    QString why;
    ckpt::CurvesView* view =
        ckpt::test::openOnCurvesTab(w, {host() + m_dir}, {1200, 800}, 60000, &why);
    QVERIFY2(view, qPrintable(why));
    const QString run = m_dir + "/live";
    QVERIFY(shows(view, run, "loss", 20, 4.25));
    // A line written as the curves show, before the watch (a connection of
    // its own, started once the folder is listed) has had its first look:
    // what it first sees is no change, yet the line was not read.
    QVERIFY(append(run + "/metrics.jsonl", "{\"step\": 25, \"loss\": 4.0}\n"));
    QTRY_VERIFY_WITH_TIMEOUT(shows(view, run, "loss", 25, 4.0), 10000);
    QTest::qWait(1500);  // the watch's connection is up and has its first look

    // A line written on the host: on the chart without F5.
    QElapsedTimer t;
    t.start();
    QVERIFY(append(run + "/metrics.jsonl", "{\"step\": 30, \"loss\": 3.875}\n"));
    QTRY_VERIFY_WITH_TIMEOUT(shows(view, run, "loss", 30, 3.875), 10000);
    qInfo("a metrics line on the chart %lld ms after it was written", t.elapsed());

    // A checkpoint saved on the host: in the browser.
    t.restart();
    const QString saved = run + "/live_step50.pt";
    QVERIFY(QFile::copy(m_dir + "/checkpoints/tiny-pretrain/tiny-pretrain_step80.pt", saved));
    QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(saved).isValid(), 10000);
    qInfo("a checkpoint in the browser %lld ms after it was written", t.elapsed());

    // The sshd side of the connections killed: the watch says so, connects
    // again (after 1 s), and what is written next still arrives.
    const QList<qint64> sessions = ckpt::test::descendants(m_server.pid());
    QVERIFY2(!sessions.isEmpty(), "no ssh session to kill");
    for (qint64 p : sessions) ::kill(pid_t(p), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(w.statusBar()->currentMessage().contains("Not following the host"),
                             10000);
    QVERIFY(append(run + "/metrics.jsonl", "{\"step\": 40, \"loss\": 3.5}\n"));
    QTRY_VERIFY_WITH_TIMEOUT(shows(view, run, "loss", 40, 3.5), 20000);
    QVERIFY(!ckpt::test::descendants(m_server.pid()).isEmpty());  // a new session
  }

  // A run folder opened whose log lies beside it (sweep/run1.log, a job's
  // log: one of the run's sources, outside the folder opened): F5 brings
  // what it gained (the agent refused to follow it: "outside every folder
  // opened" in the status bar), and still does after the connections were
  // killed and made again. No error in the status bar.
  void logBesideTheRunFollowed() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString run = m_tmp.path() + "/sweep/run1", log = m_tmp.path() + "/sweep/run1.log";
    QVERIFY(QDir().mkpath(run));
    QVERIFY(QFile::copy(m_dir + "/checkpoints/tiny-pretrain/tiny-pretrain_step40.pt",
                        run + "/run1_step40.pt"));
    QVERIFY(append(log, "step=10 loss=5.5\n"));
    MainWindow w;
    QString why;
    ckpt::CurvesView* view =
        ckpt::test::openOnCurvesTab(w, {host() + run}, {1200, 800}, 60000, &why);
    QVERIFY2(view, qPrintable(why));
    QVERIFY(shows(view, run, "loss", 10, 5.5));
    auto pressF5 = [&w] {
      w.activateWindow();
      if (!QTest::qWaitForWindowActive(&w)) return false;
      QSignalSpy loaded(&w, &MainWindow::loaded);
      QTest::keyClick(&w, Qt::Key_F5);
      return loaded.count() > 0 || loaded.wait(60000);
    };
    QVERIFY(append(log, "step=20 loss=5.25\n"));
    QVERIFY(pressF5());
    QTRY_VERIFY_WITH_TIMEOUT(shows(view, run, "loss", 20, 5.25), 20000);
    QVERIFY2(!w.statusBar()->currentMessage().contains("outside"),
             qPrintable(w.statusBar()->currentMessage()));

    const QList<qint64> sessions = ckpt::test::descendants(m_server.pid());
    QVERIFY2(!sessions.isEmpty(), "no ssh session to kill");
    for (qint64 p : sessions) ::kill(pid_t(p), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(ckpt::test::descendants(m_server.pid()).isEmpty() ||
                                 w.statusBar()->currentMessage().contains("Not following"),
                             10000);
    QVERIFY(append(log, "step=30 loss=5.0\n"));
    QVERIFY(pressF5());
    QTRY_VERIFY_WITH_TIMEOUT(shows(view, run, "loss", 30, 5.0), 20000);
    QVERIFY2(!w.statusBar()->currentMessage().contains("outside"),
             qPrintable(w.statusBar()->currentMessage()));
  }

  // A checkpoint saved after the folder was listed but before the watch's
  // first look (the watch request held back until it is written): that
  // look sees no change, yet the browser must show it without F5.
  void savedBeforeTheWatchLooks() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString flag = m_tmp.path() + "/saved", relay = m_tmp.path() + "/hold-watch.py";
    QVERIFY(ckpt::test::writeScript(
        relay, QString("#!/usr/bin/python3\n"
                       "import os, subprocess, sys, time\n"
                       "agent = subprocess.Popen(['%1'] + sys.argv[1:], stdin=subprocess.PIPE)\n"
                       "for line in sys.stdin.buffer:\n"
                       "    if b'\"method\":\"watch\"' in line:\n"
                       "        t = time.time()\n"
                       "        while not os.path.exists('%2') and time.time() - t < 30:\n"
                       "            time.sleep(0.05)\n"
                       "    agent.stdin.write(line)\n"
                       "    agent.stdin.flush()\n"
                       "agent.stdin.close()\n"
                       "sys.exit(agent.wait())\n")
                   .arg(CKPT_CLI, flag)
                   .toUtf8()));
    qputenv("CKPTSCOPE_REMOTE_CLI", relay.toUtf8());
    auto restore = qScopeGuard([] { qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI); });
    const QString dir = m_tmp.path() + "/held";
    QVERIFY(ckpt::test::copyTree(m_dir + "/live", dir + "/live"));
    MainWindow w;
    QString why;
    QVERIFY2(ckpt::test::openOnCurvesTab(w, {host() + dir}, {1200, 800}, 60000, &why),
             qPrintable(why));
    const QString saved = dir + "/live/live_step60.pt";
    QVERIFY(!w.checkpointModel()->indexOfPath(saved).isValid());
    QVERIFY(QFile::copy(m_dir + "/checkpoints/tiny-pretrain/tiny-pretrain_step80.pt", saved));
    QFile(flag).open(QIODevice::WriteOnly);  // the watch request goes on
    QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(saved).isValid(), 15000);
  }
};

QTEST_MAIN(TestRemoteLive)
#include "tst_remote_live.moc"
