// One login per host (docs/REMOTE.md, "One login per host"): a person whose
// key has a passphrase and who runs no ssh-agent types it once for a
// folder on a host, not once per connection (the window's requests, the
// watch that follows the folder). A real OpenSSH server on loopback
// (tests/core/ssh_server.h), the real agent behind it, and the person's
// own SSH_ASKPASS (which the app keeps): a script that counts what it is
// asked and gives the passphrase. Also: a person's own ControlMaster is
// left alone, a socket left by a killed master does not stop the next
// open, two windows opening the host at once ask once, and a host that
// stopped answering does not hold a window's close. No ssh master is left
// running afterwards.
#include <signal.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QMessageBox>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "../core/copy_tree.h"
#include "../core/ssh_server.h"
#include "ckpt/remote/ssh_sharing.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "process_tree.h"
#include "remote/sshquestions.h"
#include "window_driver.h"

using ckpt::MainWindow;
using ckpt::test::SshServer;

namespace {

const char* kPassphrase = "sesame";

bool append(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::Append)) return false;
  return f.write(text) == text.size();
}

// Whether the Curves tab holds `value` at `step` for the loss of the run at `runPath`.
bool showsLoss(const ckpt::CurvesView* view, const QString& runPath, int64_t step, double value) {
  for (const ckpt::CurveRun& r : view->runs()) {
    if (r.path != runPath) continue;
    const ckpt::MetricSeries* s = r.find("loss");
    if (!s) return false;
    for (size_t i = 0; i < s->points.size(); ++i)
      if (s->points[i].step == step) return s->points[i].value == value;
  }
  return false;
}

qsizetype sshChildren() {
  return ckpt::test::childrenNamed(QCoreApplication::applicationPid(), "ssh").size();
}

// The app's connections to the host (ckpt::test::agentConnections: not the
// `ssh -G` before each, which a count of ssh children would take for one).
qsizetype connections() {
  return ckpt::test::agentConnections(QCoreApplication::applicationPid()).size();
}

bool running(qint64 pid) {
  qint64 parent = 0;
  QByteArray comm;
  return pid > 0 && ckpt::test::procStat(pid, &parent, &comm);
}

}  // namespace

class TestRemoteLogin : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  SshServer m_server;
  QString m_skip, m_dir, m_count, m_config;

  [[nodiscard]] QString location() const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_dir);
  }
  [[nodiscard]] QString run() const { return m_dir + "/live"; }

  // How many questions the person's askpass was asked so far.
  [[nodiscard]] int asked() const {
    QFile f(m_count);
    return f.open(QIODevice::ReadOnly) ? int(f.readAll().count("\n--\n")) : 0;
  }
  [[nodiscard]] QByteArray questions() const {
    QFile f(m_count);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }

  // A client config for the test's sshd with the passphrase key, then `extra` lines.
  QString writeConfig(const QString& name, const QString& extra) {
    const QString path = m_tmp.path() + "/" + name;
    QFile cfg(path);
    if (!cfg.open(QIODevice::WriteOnly)) return {};
    cfg.write(QString("Host *\n  Port %1\n  IdentityFile %2/login_key\n  IdentitiesOnly yes\n"
                      "  UserKnownHostsFile %3/known_hosts\n  StrictHostKeyChecking accept-new\n"
                      "  NumberOfPasswordPrompts 1\n  LogLevel ERROR\n%4")
                  .arg(m_server.port())
                  .arg(m_tmp.path(), m_server.home(), extra)
                  .toUtf8());
    return path;
  }

  // The window shown, the location opened as the command line opens it,
  // the Curves tab shown with Ctrl+2; then the watch's connection up (the
  // window's ssh and the watch's) and given its first look.
  bool openAndFollow(MainWindow& w, QString* why) {
    ckpt::CurvesView* view = ckpt::test::openOnCurvesTab(w, {location()}, {1200, 800}, 60000, why);
    if (!view) return false;
    if (auto* box = w.findChild<QMessageBox*>("remoteError")) {
      *why = "an error: " + box->text();
      return false;
    }
    if (!showsLoss(view, run(), 20, 4.25)) {
      *why = "the run's curve is not shown";
      return false;
    }
    QElapsedTimer t;
    t.start();
    while (connections() < 2 && t.elapsed() < 20000) QTest::qWait(50);
    if (connections() < 2) {
      *why = QString("%1 connections of the window's, not 2 (its requests and its watch):\n%2")
                 .arg(connections())
                 .arg(ckpt::test::describe(
                     ckpt::test::childrenNamed(QCoreApplication::applicationPid(), "ssh")));
      return false;
    }
    QTest::qWait(1500);  // the watch's first look at the folder
    return true;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_dir = m_tmp.path() + "/exp";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment", m_dir));
    QVERIFY(QDir().mkpath(run()));
    QVERIFY(append(run() + "/metrics.jsonl",
                   "{\"step\": 10, \"loss\": 4.5}\n{\"step\": 20, \"loss\": 4.25}\n"));
    m_skip = SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    // The person's key, with a passphrase; no ssh-agent holds it.
    QCOMPARE(QProcess::execute("ssh-keygen", {"-q", "-t", "ed25519", "-N", kPassphrase, "-f",
                                              m_tmp.path() + "/login_key"}),
             0);
    QFile keys(m_server.home() + "/authorized_keys"), pub(m_tmp.path() + "/login_key.pub");
    QVERIFY(keys.open(QIODevice::Append) && pub.open(QIODevice::ReadOnly));
    keys.write(pub.readAll());
    keys.close();
    qunsetenv("SSH_AUTH_SOCK");
    // The person's own SSH_ASKPASS: records each question, answers the passphrase.
    m_count = m_tmp.path() + "/asked.log";
    const QString script = m_tmp.path() + "/askpass.sh";
    QFile sh(script);
    QVERIFY(sh.open(QIODevice::WriteOnly));
    sh.write(QString("#!/bin/sh\nprintf '%s\\n--\\n' \"$1\" >> '%1'\necho '%2'\n")
                 .arg(m_count, kPassphrase)
                 .toUtf8());
    sh.close();
    sh.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("SSH_ASKPASS", script.toUtf8());
    qunsetenv("SSH_ASKPASS_REQUIRE");  // the app's own: force
    ckpt::setSshAskpassProgram({});    // none of the app's: the person's is used
    m_config = writeConfig("ssh_config", {});
    QVERIFY(!m_config.isEmpty());
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + m_config).toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  // Each test starts with no shared login: the first connection logs in.
  void init() { SshServer::endSharedLogins(); }

  void cleanupTestCase() {
    SshServer::endSharedLogins();
    QVERIFY(SshServer::controlSockets().isEmpty());
    // No master of the app's left running, nor any ssh of the test's sessions.
    QTRY_VERIFY_WITH_TIMEOUT(
        ckpt::test::processesMentioning(SshServer::controlDir().toUtf8()).isEmpty(), 10000);
  }

  // The folder listed, its curves read, the watch following it, and a line
  // written on the host arriving through the watch: one question.
  void askedOnceForAFolder() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const int before = asked();
    {
      MainWindow w;
      QString why;
      QVERIFY2(openAndFollow(w, &why), qPrintable(why));
      QElapsedTimer t;
      t.start();
      QVERIFY(append(run() + "/metrics.jsonl", "{\"step\": 30, \"loss\": 3.875}\n"));
      QTRY_VERIFY_WITH_TIMEOUT(showsLoss(w.curvesView(), run(), 30, 3.875), 10000);
      qInfo("a line written on the host on the chart %lld ms later", t.elapsed());
      QVERIFY2(questions().contains("passphrase"), questions().constData());
      QCOMPARE(asked() - before, 1);
      // The login both ride on: one master, in the background (no child of the app's).
      const QStringList sockets = SshServer::controlSockets();
      QCOMPARE(sockets.size(), qsizetype(1));
      const qint64 master = SshServer::masterPid(sockets[0]);
      QVERIFY(master > 0);
      QVERIFY(
          !ckpt::test::childrenNamed(QCoreApplication::applicationPid(), "ssh").contains(master));
    }
    // The window closed: its connections end, the master waits for the next.
    QTRY_COMPARE_WITH_TIMEOUT(sshChildren(), qsizetype(0), 10000);
    QCOMPARE(SshServer::controlSockets().size(), qsizetype(1));
  }

  // A socket left by a master that was killed (SIGKILL: it could not remove
  // it): the next open logs in anew, as a master of its own.
  void staleSocketAfterAKilledMaster() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const int before = asked();
    QString socket;
    qint64 killed = 0;
    {
      MainWindow w;
      QString why;
      QVERIFY2(openAndFollow(w, &why), qPrintable(why));
      QCOMPARE(asked() - before, 1);
      QCOMPARE(SshServer::controlSockets().size(), qsizetype(1));
      socket = SshServer::controlSockets()[0];
      killed = SshServer::masterPid(socket);
      QVERIFY(killed > 0);
    }
    QTRY_COMPARE_WITH_TIMEOUT(sshChildren(), qsizetype(0), 10000);
    QCOMPARE(::kill(pid_t(killed), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!running(killed), 10000);
    QVERIFY2(QFile::exists(socket), "the killed master's socket is not left behind");
    QCOMPARE(SshServer::masterPid(socket), qint64(0));

    MainWindow w;
    QString why;
    QVERIFY2(openAndFollow(w, &why), qPrintable(why));
    QCOMPARE(asked() - before, 2);  // a new login: the old one died with its master
    const qint64 master = SshServer::masterPid(socket);
    QVERIFY(master > 0 && master != killed);
    QVERIFY(append(run() + "/metrics.jsonl", "{\"step\": 40, \"loss\": 3.5}\n"));
    QTRY_VERIFY_WITH_TIMEOUT(showsLoss(w.curvesView(), run(), 40, 3.5), 10000);
  }

  // The person's ssh_config multiplexes already (ControlMaster, ControlPath):
  // the app adds nothing, and their master is the one shared.
  void ownControlMasterLeftAlone() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString theirs = m_tmp.path() + "/own-%C";
    const QString config = writeConfig("own.ssh_config", "  ControlMaster auto\n  ControlPath " +
                                                             theirs + "\n  ControlPersist 30\n");
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + config).toUtf8());
    const auto restore = qScopeGuard([this] {
      for (const QString& name : QDir(m_tmp.path()).entryList({"own-*"}, QDir::System))
        QProcess::execute(
            "ssh", {"-F", "/dev/null", "-S", m_tmp.path() + "/" + name, "-O", "exit", "master"});
      qputenv("CKPTSCOPE_SSH", ("ssh -F " + m_config).toUtf8());
    });
    const auto where = ckpt::remote::parseRemotePath(location().toStdString());
    QVERIFY(where);
    ckpt::remote::AgentCommand cmd = ckpt::appAgentCommand(*where);
    const std::vector<std::string> argv = cmd.argv;
    QVERIFY(!ckpt::remote::shareLogin(cmd));
    QVERIFY(cmd.argv == argv);
    for (const std::string& word : cmd.argv)
      QVERIFY2(word.find("Control") == std::string::npos, word.c_str());

    const int before = asked();
    MainWindow w;
    QString why;
    QVERIFY2(openAndFollow(w, &why), qPrintable(why));
    QCOMPARE(asked() - before, 1);
    QVERIFY(SshServer::controlSockets().isEmpty());  // none of ours
    QCOMPARE(QDir(m_tmp.path()).entryList({"own-*"}, QDir::System).size(), qsizetype(1));
  }

  // Two windows open the host at the same moment: one logs in, the other
  // waits for it and rides on its login (remote/sshquestions.h's turn).
  void twoWindowsAtOnceAskOnce() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const int before = asked();
    MainWindow a, b;
    for (MainWindow* w : {&a, &b}) {
      w->resize(900, 600);
      w->show();
      QVERIFY(QTest::qWaitForWindowExposed(w));
    }
    QSignalSpy loadedA(&a, &MainWindow::loaded), loadedB(&b, &MainWindow::loaded);
    a.openPaths({location()});
    b.openPaths({location()});
    QVERIFY(loadedA.count() > 0 || loadedA.wait(60000));
    QVERIFY(loadedB.count() > 0 || loadedB.wait(60000));
    QVERIFY(!a.findChild<QMessageBox*>("remoteError"));
    QVERIFY(!b.findChild<QMessageBox*>("remoteError"));
    // Both windows' requests and watches: four connections, one question.
    // (The watches connect after `loaded`, one after the other.)
    QTRY_COMPARE_WITH_TIMEOUT(connections(), qsizetype(4), 20000);
    QCOMPARE(asked() - before, 1);
    QCOMPARE(SshServer::controlSockets().size(), qsizetype(1));
  }

  // The host stops answering (its sshd stopped, the link silent): closing
  // the window does not wait for ssh to give up on the link (45 s), though
  // the master holds a copy of each session's stderr until then.
  void silentHostDoesNotHoldTheClose() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    auto w = std::make_unique<MainWindow>();
    QString why;
    QVERIFY2(openAndFollow(*w, &why), qPrintable(why));
    const QList<qint64> sessions = ckpt::test::descendants(m_server.pid());
    QVERIFY2(!sessions.isEmpty(), "no ssh session on the host");
    const auto resume = qScopeGuard([&sessions] {
      for (qint64 p : sessions) ::kill(pid_t(p), SIGKILL);
      for (qint64 p : sessions) ::kill(pid_t(p), SIGCONT);
    });
    for (qint64 p : sessions) ::kill(pid_t(p), SIGSTOP);
    QElapsedTimer t;
    t.start();
    w.reset();
    qInfo("the window closed in %lld ms with the host silent", t.elapsed());
    QVERIFY2(t.elapsed() < 15000, qPrintable(QString("%1 ms").arg(t.elapsed())));
  }
};

QTEST_MAIN(TestRemoteLogin)
#include "tst_remote_login.moc"
