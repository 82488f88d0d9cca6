// A sweep on another machine groups as it does here: the agent reads each
// run's hyperparameters on the host (`hparams`), so the Curves tab of
// ssh://127.0.0.1:PORT/sweep shows the same groups (every hyperparameter
// but the seed) and every run the same hyperparameters as the folder
// opened here (tests/python/sweep_fixtures.py: 3 learning rates x 5 seeds,
// through a real OpenSSH server on loopback, tests/core/ssh_server.h). An
// agent older than `hparams` (the method renamed on its way) still shows the
// curves, grouped by nothing it does not know, and each run says why. An
// open and a refresh cost one round trip each (oneRoundTrip).
#include <QDir>
#include <QFile>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "../core/ssh_server.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "window_driver.h"

using ckpt::CurvesView;
using ckpt::MainWindow;

namespace {

// Each run's hyperparameters: "run key=text(number|text) ..." (a remote
// run's name without "host:").
QStringList hparams(const CurvesView* view) {
  QStringList out;
  for (const ckpt::CurveRun& run : view->runs()) {
    QString line = run.name.section(':', run.name.startsWith("127.0.0.1:") ? 1 : 0);
    for (const auto& [key, v] : run.hparams)
      line += QString(" %1=%2(%3)")
                  .arg(QString::fromStdString(key), QString::fromStdString(v.text))
                  .arg(v.isNumber ? QString::number(v.number, 'g', 17) : QString("text"));
    out << line;
  }
  out.sort();
  return out;
}

bool openCurves(MainWindow& w, const QString& where) {
  w.resize(1200, 800);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return false;
  QSignalSpy ready(w.curvesView(), &CurvesView::curvesReady);
  if (!ckpt::test::openAndWait(w, {where}, 60000)) return false;
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  return ready.count() > 0 || ready.wait(60000);
}

}  // namespace

class TestRemoteSweep : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_sweep;

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_sweep = QStringLiteral(CKPT_FIXTURE_DIR) + "/sweep/sweep";
    QVERIFY2(QFileInfo::exists(m_sweep + "/lr1e-3_seed0"), "no fixtures: run ctest");
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  void groupsAsHere() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow local;
    QVERIFY(openCurves(local, m_sweep));
    const QStringList localHparams = hparams(local.curvesView());
    const QStringList localGroups = local.curvesView()->groupLabels();
    QCOMPARE(localHparams.size(), 15);
    QVERIFY2(localGroups.size() >= 3, qPrintable(localGroups.join(" | ")));
    QVERIFY2(localHparams.join('\n').contains("learning_rate=0.0003(0.00029999999999999997)"),
             qPrintable(localHparams.join('\n')));

    MainWindow w;
    QVERIFY(openCurves(w, QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_sweep)));
    QVERIFY(w.isRemote());
    QCOMPARE(w.curvesView()->groupBy(), local.curvesView()->groupBy());
    QCOMPARE(hparams(w.curvesView()), localHparams);
    QCOMPARE(w.curvesView()->groupLabels(), localGroups);
    for (const ckpt::CurveRun& run : w.curvesView()->runs())
      QVERIFY2(run.problems.isEmpty(), qPrintable(run.name + ": " + run.problems.join("; ")));
  }

  // Opening a remote folder asks open, scan, metrics and hparams before
  // any of their answers comes (one round trip), and F5 asks open, scan and
  // what the files gained so. The agent sits behind a relay that logs each
  // request as it passes and holds each answer 200 ms (a slow network), so
  // a client that waited for an answer before asking on would log it first.
  void oneRoundTrip() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString logs = m_tmp.path() + "/relay-logs";
    QVERIFY(QDir().mkpath(logs));
    const QString relay = m_tmp.path() + "/relay.py";
    QVERIFY(ckpt::test::writeScript(
        relay, QString("#!/usr/bin/python3\n"
                       "import os, re, subprocess, sys, threading, time\n"
                       "log = open('%1/relay.%d.log' % os.getpid(), 'a', buffering=1)\n"
                       "agent = subprocess.Popen(['%2'] + sys.argv[1:], stdin=subprocess.PIPE,\n"
                       "                         stdout=subprocess.PIPE)\n"
                       "lock = threading.Lock()\n"
                       "def note(text):\n"
                       "    with lock:\n"
                       "        log.write(text + '\\n')\n"
                       "def up():\n"
                       "    for line in sys.stdin.buffer:\n"
                       "        m = re.match(rb'\\{\"id\":(\\d+),\"method\":\"([^\"]*)\"', line)\n"
                       "        note('> %s %s' % (m.group(1).decode(), m.group(2).decode()) if m "
                       "else '> ?')\n"
                       "        agent.stdin.write(line)\n"
                       "        agent.stdin.flush()\n"
                       "    agent.stdin.close()\n"
                       "threading.Thread(target=up, daemon=True).start()\n"
                       "for line in agent.stdout:\n"
                       "    time.sleep(0.2)\n"
                       "    m = re.match(rb'\\{\"id\":(\\d+)', line)\n"
                       "    note('< %s' % m.group(1).decode() if m else '< ?')\n"
                       "    sys.stdout.buffer.write(line)\n"
                       "    sys.stdout.buffer.flush()\n")
                   .arg(logs, CKPT_CLI)
                   .toUtf8()));
    const QByteArray cli = qgetenv("CKPTSCOPE_REMOTE_CLI");
    qputenv("CKPTSCOPE_REMOTE_CLI", relay.toUtf8());
    auto restore = qScopeGuard([&] { qputenv("CKPTSCOPE_REMOTE_CLI", cli); });

    // The log of the connection that asked `method` (the window's; the
    // watch has a connection of its own).
    const auto logWith = [&logs](const QString& method) {
      for (const QString& name : QDir(logs).entryList({"relay.*.log"})) {
        QFile f(logs + "/" + name);
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
        for (const QString& line : lines)
          if (line.startsWith("> ") && line.section(' ', 2) == method) return lines;
      }
      return QStringList();
    };
    // The requests asked from the `count`-th "open" on, up to the first
    // answer that comes after it.
    const auto askedBeforeAnAnswer = [](const QStringList& lines, int count) {
      QStringList asked;
      int opens = 0;
      for (const QString& line : lines) {
        if (line.startsWith("> ") && line.section(' ', 2) == "open") ++opens;
        if (opens < count) continue;
        if (line.startsWith("< ")) break;
        asked << line.section(' ', 2);
      }
      return asked;
    };

    MainWindow w;
    QVERIFY(openCurves(w, QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_sweep)));
    QCOMPARE(w.curvesView()->runs().size(), size_t(15));
    QStringList lines = logWith("hparams");
    QVERIFY2(!lines.isEmpty(), "no relay log asked hparams");
    QCOMPARE(askedBeforeAnAnswer(lines, 1), (QStringList{"open", "scan", "hparams", "metrics"}));

    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QSignalSpy loaded(&w, &MainWindow::loaded);
    QTest::keyClick(&w, Qt::Key_F5);
    QVERIFY(loaded.count() > 0 || loaded.wait(60000));
    QCOMPARE(w.curvesView()->runs().size(), size_t(15));
    lines = logWith("hparams");
    QCOMPARE(askedBeforeAnAnswer(lines, 2), (QStringList{"open", "scan", "metrics"}));
  }

  void olderAgent() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    // The agent behind a filter that renames the method: it answers
    // unknown_method, as an agent from before `hparams` does.
    const QString wrapper = m_tmp.path() + "/old-agent.sh";
    QVERIFY(ckpt::test::writeScript(wrapper, ckpt::test::renamingAgentScript(CKPT_CLI, "hparams")));
    const QByteArray cli = qgetenv("CKPTSCOPE_REMOTE_CLI");
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([&] { qputenv("CKPTSCOPE_REMOTE_CLI", cli); });

    MainWindow w;
    QVERIFY(openCurves(w, QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_sweep)));
    QCOMPARE(w.curvesView()->runs().size(), size_t(15));
    for (const ckpt::CurveRun& run : w.curvesView()->runs()) {
      QVERIFY(run.hparams.empty());
      QVERIFY2(run.problems.join(' ').contains("older than `hparams`"),
               qPrintable(run.name + ": " + run.problems.join("; ")));
      QVERIFY(!run.series.empty());
    }
  }
};

QTEST_MAIN(TestRemoteSweep)
#include "tst_remote_sweep.moc"
