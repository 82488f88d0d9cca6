// The app on a folder of another machine: a real OpenSSH server on loopback
// (tests/core/ssh_server.h, as tst_remote starts it) and the real agent
// (ckptscope-cli serve --stdio) behind it. File > Open Remote... is driven
// with keys; the browser's rows and the Curves tab's series must be those
// of the same folder opened here, a refresh (F5) brings what was appended,
// and a connection that drops says so, keeps the rows and comes back.
#include <signal.h>
#include <unistd.h>

#include <bit>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <QtTest>

#include "../core/copy_tree.h"
#include "../core/ssh_server.h"
#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "process_tree.h"
#include "remote/openremotedialog.h"
#include "remote/sshquestions.h"
#include "window_driver.h"

using ckpt::CheckpointListModel;
using ckpt::MainWindow;

namespace {

const QString kHost = QStringLiteral("127.0.0.1:");

// Every row of the browser as a person reads it: its depth, then the
// texts of its columns, "|"-separated; a remote run's name without "host:".
QStringList rows(const QAbstractItemModel* m, const QModelIndex& parent = {}, int depth = 0) {
  QStringList out;
  for (int r = 0; r < m->rowCount(parent); ++r) {
    QStringList cells{QString::number(depth)};
    for (int c = 0; c < m->columnCount(parent); ++c) {
      QString text = m->index(r, c, parent).data().toString();
      if (c == 0 && text.startsWith(kHost)) text = text.mid(kHost.size());
      cells << text;
    }
    out << cells.join('|');
    out << rows(m, m->index(r, 0, parent), depth + 1);
  }
  return out;
}

// Each run's series: "run metric: step=value ..." (a remote run's name without "host:").
QStringList series(const ckpt::CurvesView* view) {
  QStringList out;
  for (const ckpt::CurveRun& run : view->runs()) {
    QString name = run.name;
    if (name.startsWith(kHost)) name = name.mid(kHost.size());
    for (const auto& [metric, s] : run.series) {
      QStringList points;
      for (size_t i = 0; i < s.points.size(); ++i) {
        const ckpt::MetricPoint p = s.points[i];
        points << QString("%1=%2").arg(p.step).arg(p.value, 0, 'g', 17);
      }
      out << name + " " + QString::fromStdString(metric) + ": " + points.join(' ');
    }
  }
  out.sort();
  return out;
}

// Every point of every run's series, each coordinate as its bits: "run
// metric step value-bits wall-bits|- tokens|-" (a remote run's name without
// "host:"). Equal lists are curves equal bit for bit, -0.0 and NaN included.
QStringList pointBits(const ckpt::CurvesView* view) {
  QStringList out;
  const auto bits = [](double d) { return QString::number(std::bit_cast<quint64>(d), 16); };
  for (const ckpt::CurveRun& run : view->runs()) {
    QString name = run.name;
    if (name.startsWith(kHost)) name = name.mid(kHost.size());
    for (const auto& [metric, s] : run.series)
      for (size_t i = 0; i < s.points.size(); ++i) {
        const ckpt::MetricPoint p = s.points[i];
        out << QString("%1 %2 %3 %4 %5 %6")
                   .arg(name, QString::fromStdString(metric))
                   .arg(p.step)
                   .arg(bits(p.value), p.wallTime ? bits(*p.wallTime) : QString("-"),
                        p.tokens ? QString::number(*p.tokens) : QString("-"));
      }
  }
  out.sort();
  return out;
}

// The JSON lines of the files `pattern` names in `dir` (the logs of what
// went to or came from the agents there; a line still being written is left out).
QList<QJsonObject> jsonLines(const QString& dir, const QString& pattern) {
  QList<QJsonObject> out;
  for (const QString& name : QDir(dir).entryList({pattern}, QDir::Files)) {
    QFile f(dir + "/" + name);
    if (!f.open(QIODevice::ReadOnly)) continue;
    for (const QByteArray& line : f.readAll().split('\n'))
      if (const QJsonDocument d = QJsonDocument::fromJson(line); d.isObject()) out << d.object();
  }
  return out;
}

void append(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::Append));
  f.write(bytes);
}

}  // namespace

class TestRemoteApp : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_dir;  // the folder, "on the host" and here

  [[nodiscard]] QString location() const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_dir);
  }

  // File > Open Remote... (Ctrl+Alt+O), the location typed into its box
  // and Return, as a person does; true once the window has loaded it.
  bool openWithDialog(MainWindow& w, const QString& where, int timeoutMs = 60000) {
    bool typed = false;
    QTimer::singleShot(0, this, [&] {
      auto* dialog = qobject_cast<ckpt::OpenRemoteDialog*>(QApplication::activeModalWidget());
      if (!dialog) return;
      QLineEdit* edit = dialog->locationBox()->lineEdit();
      edit->setFocus();
      QTest::keyClicks(edit, where);
      typed = dialog->commandLabel()->text().contains("serve --stdio");
      QTest::keyClick(edit, Qt::Key_Return);
    });
    QSignalSpy loaded(&w, &MainWindow::loaded);
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
    return typed && (loaded.count() > 0 || loaded.wait(timeoutMs));
  }

  // Opens `dir` here and waits for its rows and its curves (curvesReady,
  // which may come before the Curves tab is looked at).
  static bool openLocal(MainWindow& w, const QString& dir) {
    w.resize(1200, 800);
    w.show();
    QSignalSpy ready(w.curvesView(), &ckpt::CurvesView::curvesReady);
    if (!ckpt::test::openAndWait(w, {dir}, 60000)) return false;
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
    return ready.count() > 0 || ready.wait(60000);
  }

  bool pressF5(MainWindow& w, int timeoutMs = 60000) {
    w.activateWindow();  // its shortcuts work in the active window
    if (!QTest::qWaitForWindowActive(&w)) return false;
    QSignalSpy loaded(&w, &MainWindow::loaded);
    QTest::keyClick(&w, Qt::Key_F5);
    return loaded.count() > 0 || loaded.wait(timeoutMs);
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    // A copy of the experiment that a run of it writes into (a metrics.jsonl).
    m_dir = m_tmp.path() + "/exp";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment", m_dir));
    QFile jsonl(m_dir + "/checkpoints/tiny-dpo/metrics.jsonl");
    QVERIFY(jsonl.open(QIODevice::WriteOnly));
    jsonl.write("{\"step\": 5, \"dpo_loss\": 0.75}\n{\"step\": 10, \"dpo_loss\": 0.625}\n");
    jsonl.close();
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  // Each case logs in anew: a login the app's connections share
  // (ControlPersist) would otherwise outlive a case, and a host key is
  // asked by a login only.
  void init() { ckpt::test::SshServer::endSharedLogins(); }

  // A host not in known_hosts, and ssh_config's StrictHostKeyChecking ask:
  // the app's ssh hands the question to its askpass program (a script of
  // the test's here, ckptscope-askpass next to the app), which is answered
  // yes: the folder opens; no (exit 1): a message that says so.
  void hostKeyQuestionAskedThroughAskpass_data() {
    QTest::addColumn<bool>("yes");
    QTest::newRow("yes") << true;
    QTest::newRow("cancelled") << false;
  }
  void hostKeyQuestionAskedThroughAskpass() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(bool, yes);
    const QString tag = yes ? "yes" : "no";
    const QString home = m_server.home(), log = m_tmp.path() + "/asked-" + tag + ".log";
    const QString config = m_tmp.path() + "/ask-" + tag + ".ssh_config";
    QFile cfg(config);
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(QString("Host *\n  Port %1\n  IdentityFile %2/user_key\n  IdentitiesOnly yes\n"
                      "  UserKnownHostsFile %3/known-%4\n  GlobalKnownHostsFile /dev/null\n"
                      "  StrictHostKeyChecking ask\n  LogLevel ERROR\n")
                  .arg(m_server.port())
                  .arg(home, m_tmp.path(), tag)
                  .toUtf8());
    cfg.close();
    const QString script = m_tmp.path() + "/askpass-" + tag + ".sh";
    QFile sh(script);
    QVERIFY(sh.open(QIODevice::WriteOnly));
    sh.write(QString("#!/bin/sh\nprintf '%s\\n--\\n' \"$1\" >> '%1'\n%2\n")
                 .arg(log, yes ? "echo yes" : "exit 1")
                 .toUtf8());
    sh.close();
    sh.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    const QByteArray before = qgetenv("CKPTSCOPE_SSH");
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + config).toUtf8());
    qunsetenv("SSH_ASKPASS");
    ckpt::setSshAskpassProgram(script);
    const auto restore = qScopeGuard([before] {
      qputenv("CKPTSCOPE_SSH", before);
      ckpt::setSshAskpassProgram({});
    });

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const bool opened = openWithDialog(w, location());
    QFile asked(log);
    QVERIFY2(asked.open(QIODevice::ReadOnly), "the askpass program was not asked");
    const QByteArray question = asked.readAll();
    QVERIFY2(question.contains("authenticity of host"), question.constData());
    QVERIFY2(question.contains("(yes/no"), question.constData());
    QCOMPARE(question.count("\n--\n"), 1);
    auto* box = w.findChild<QMessageBox*>("remoteError");
    if (yes) {
      QVERIFY(opened);
      QVERIFY(!box);
      QVERIFY(w.isRemote());
      QVERIFY(rows(w.checkpointView()->model()).join('\n').contains("tiny-dpo"));
    } else {
      QVERIFY2(box && box->isVisible(), "no message says the host key was not accepted");
      QVERIFY2(box->text().contains("the host's key was not accepted"), qPrintable(box->text()));
      QTest::mouseClick(box->button(QMessageBox::Ok), Qt::LeftButton);
    }
  }

  // The watch (the second connection, that follows the folder) asks too
  // when it logs in on its own (here: ssh's own multiplexing turned off
  // with `-o ControlPath=none`, so the app shares no login; with a shared
  // login it asks nothing, tst_remote_login); cancelled, it stops instead
  // of asking again every few seconds, says so, and F5 starts it again
  // (asking once more).
  void watchStopsWhenItsLoginFails() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString home = m_server.home(), key = m_tmp.path() + "/watch_key";
    QVERIFY(QProcess::execute("ssh-keygen", {"-q", "-t", "ed25519", "-N", "sesame", "-f", key}) ==
            0);
    QFile keys(home + "/authorized_keys"), pub(key + ".pub");
    QVERIFY(keys.open(QIODevice::Append) && pub.open(QIODevice::ReadOnly));
    keys.write(pub.readAll());
    keys.close();
    const QString config = m_tmp.path() + "/watch.ssh_config";
    QFile cfg(config);
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write(QString("Host *\n  Port %1\n  IdentityFile %2\n  IdentitiesOnly yes\n"
                      "  UserKnownHostsFile %3/known_hosts\n  StrictHostKeyChecking accept-new\n"
                      "  NumberOfPasswordPrompts 1\n  LogLevel ERROR\n")
                  .arg(m_server.port())
                  .arg(key, home)
                  .toUtf8());
    cfg.close();
    // Answers the 1st and 3rd question with the passphrase, cancels the others.
    const QString count = m_tmp.path() + "/watch.count", script = m_tmp.path() + "/watch.sh";
    QFile sh(script);
    QVERIFY(sh.open(QIODevice::WriteOnly));
    sh.write(QString("#!/bin/sh\nn=$(cat '%1' 2>/dev/null || echo 0); n=$((n+1)); "
                     "echo $n > '%1'\ncase $n in 1|3) echo sesame ;; *) exit 1 ;; esac\n")
                 .arg(count)
                 .toUtf8());
    sh.close();
    sh.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    const auto asked = [count] {
      QFile f(count);
      return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed().toInt() : 0;
    };
    const QByteArray before = qgetenv("CKPTSCOPE_SSH"), agentSock = qgetenv("SSH_AUTH_SOCK");
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + config + " -o ControlPath=none").toUtf8());
    qunsetenv("SSH_ASKPASS");
    qunsetenv("SSH_AUTH_SOCK");  // no agent of the person's holds the key
    ckpt::setSshAskpassProgram(script);
    const auto restore = qScopeGuard([before, agentSock] {
      qputenv("CKPTSCOPE_SSH", before);
      if (!agentSock.isEmpty()) qputenv("SSH_AUTH_SOCK", agentSock);
      ckpt::setSshAskpassProgram({});
    });

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openWithDialog(w, location()));
    QVERIFY(!w.findChild<QMessageBox*>("remoteError"));
    QCOMPARE(asked(), 1);
    // The watch's connection asks, is cancelled, and says what F5 does.
    QTRY_VERIFY_WITH_TIMEOUT(w.statusBar()->currentMessage().contains("F5 lists it again"), 20000);
    QVERIFY2(w.statusBar()->currentMessage().contains("ssh could not log in"),
             qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(asked(), 2);
    // Not asked again (a retry would come after 1 s, then 2 s).
    QTest::qWait(3500);
    QCOMPARE(asked(), 2);
    // F5: the folder again (its connection is up: nothing asked), and the watch anew.
    QVERIFY(pressF5(w));
    QTRY_COMPARE_WITH_TIMEOUT(asked(), 3, 20000);
    QTRY_COMPARE_WITH_TIMEOUT(
        ckpt::test::agentConnections(QCoreApplication::applicationPid()).size(), qsizetype(2),
        20000);
  }

  void remoteEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow local;
    QVERIFY(openLocal(local, m_dir));
    ckpt::CurvesView* localCurves = local.curvesView();
    const QStringList localRows = rows(local.checkpointView()->model());
    const QStringList localSeries = series(localCurves);
    QVERIFY(localRows.size() > 5);
    QVERIFY2(
        !localSeries.isEmpty(),
        qPrintable(
            QString("%1 runs; %2").arg(localCurves->runs().size()).arg(localCurves->statusText())));
    QVERIFY2(localSeries.join('\n').contains("tiny-dpo dpo_loss: 5=0.75 10=0.625"),
             qPrintable(localSeries.join('\n').left(3000)));

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy curvesReady(w.curvesView(), &ckpt::CurvesView::curvesReady);
    QVERIFY2(openWithDialog(w, location()), "File > Open Remote... did not load the folder");
    QVERIFY(w.isRemote());
    QVERIFY(!w.findChild<QMessageBox*>("remoteError"));
    QCOMPARE(rows(w.checkpointView()->model()), localRows);
    // The host on the run rows: their names, a tooltip with the location.
    const QAbstractItemModel* m = w.checkpointView()->model();
    int remoteRuns = 0;
    std::function<void(const QModelIndex&)> visit = [&](const QModelIndex& parent) {
      for (int r = 0; r < m->rowCount(parent); ++r) {
        const QModelIndex i = m->index(r, 0, parent);
        const QString remote = i.data(int(CheckpointListModel::Role::Remote)).toString();
        if (!remote.isEmpty()) {
          ++remoteRuns;
          QVERIFY2(i.data().toString().startsWith(kHost), qPrintable(i.data().toString()));
          QVERIFY(remote.startsWith(location() + "/"));
          QCOMPARE(i.data(Qt::ToolTipRole).toString().section('\n', 0, 0), remote);
        }
        visit(i);
      }
    };
    visit({});
    QCOMPARE(remoteRuns, 3);
    // The curves, read by the host, equal those read here.
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
    ckpt::CurvesView* curves = w.curvesView();
    QVERIFY(curvesReady.count() > 0 || curvesReady.wait(30000));
    QCOMPARE(series(curves), localSeries);
    // Open Recent remembers the location.
    QVERIFY(MainWindow::recentPaths().contains(QStringList{location()}));

    // ---- F5: what the run appended meanwhile, and only that.
    append(m_dir + "/checkpoints/tiny-dpo/metrics.jsonl",
           "{\"step\": 15, \"dpo_loss\": 0.5}\n{\"step\": 20, \"dpo_loss\": 0.375}\n");
    QVERIFY2(pressF5(w), qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(!w.findChild<QMessageBox*>("remoteError"));
    MainWindow again;
    QVERIFY(openLocal(again, m_dir));
    ckpt::CurvesView* againCurves = again.curvesView();
    QVERIFY(series(againCurves)
                .join('\n')
                .contains("tiny-dpo dpo_loss: 5=0.75 10=0.625 15=0.5 20=0.375"));
    QCOMPARE(series(curves), series(againCurves));

    // ---- The connection drops and the host is gone: a message, the rows kept.
    const QStringList shown = rows(w.checkpointView()->model());
    m_server.stop();
    const QList<qint64> ssh = ckpt::test::childrenNamed(QCoreApplication::applicationPid(), "ssh");
    QVERIFY2(!ssh.isEmpty(), "no ssh of the app's agent is running");
    for (qint64 pid : ssh) ::kill(pid_t(pid), SIGTERM);
    // They shared one login (docs/REMOTE.md, "One login per host"): its
    // master, in the background, holds the connection; it drops too.
    ckpt::test::SshServer::endSharedLogins();
    QVERIFY(pressF5(w));
    auto* box = w.findChild<QMessageBox*>("remoteError");
    QVERIFY2(box && box->isVisible(), "no message says the host cannot be reached");
    QVERIFY2(box->text().contains("host 127.0.0.1"), qPrintable(box->text()));
    QVERIFY2(box->text().contains("F5"), qPrintable(box->text()));
    QVERIFY(w.statusBar()->currentMessage().contains("127.0.0.1"));
    QCOMPARE(rows(w.checkpointView()->model()), shown);
    QCOMPARE(series(curves), series(againCurves));
    QTest::mouseClick(box->button(QMessageBox::Ok), Qt::LeftButton);
    QTRY_VERIFY(!w.findChild<QMessageBox*>("remoteError"));

    // ---- The host is back: F5 connects again.
    QVERIFY(m_server.start());
    if (location() != w.openedPaths().value(0)) QSKIP("sshd came back on another port");
    QVERIFY(pressF5(w));
    QVERIFY(!w.findChild<QMessageBox*>("remoteError"));
    QCOMPARE(rows(w.checkpointView()->model()), shown);
  }

  // The app asks for the curves as ckptscope-cli does (`columns`: an exact
  // progression travels as first and stride) and draws exactly the points
  // read here, bit for bit; an agent older than `columns` (the field taken
  // out of the request on its way, so it answers `points`) gives the same.
  // What the app sent and what the agent answered are logged by a wrapper
  // around the agent on the host.
  void curvesBitForBit_data() {
    QTest::addColumn<bool>("olderAgent");
    QTest::newRow("columns") << false;
    QTest::newRow("older agent") << true;
  }
  void curvesBitForBit() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(bool, olderAgent);
    // Two runs: one logged every 10 steps (steps, tokens, wall times and a
    // constant lr are progressions), one of values no progression holds
    // (NaN, infinities, -0.0, a subnormal, a missing wall time).
    const QString dir = m_tmp.path() + (olderAgent ? "/bits-old" : "/bits");
    QVERIFY(QDir().mkpath(dir + "/steady") && QDir().mkpath(dir + "/odd"));
    QByteArray steady;
    for (int step = 10; step <= 3000; step += 10)
      steady += QString(
                    "{\"step\": %1, \"loss\": %2, \"lr\": 3e-4, \"tokens\": %3, "
                    "\"wall_time\": %4}\n")
                    .arg(step)
                    .arg(2.0 + 1.0 / step, 0, 'g', 17)
                    .arg(qint64(step) * 4096)
                    .arg(1.7e9 + step * 0.25, 0, 'f', 2)
                    .toUtf8();
    append(dir + "/steady/metrics.jsonl", steady);
    append(dir + "/odd/metrics.jsonl",
           "{\"step\": 1, \"loss\": NaN, \"wall_time\": 1700000000.125}\n"
           "{\"step\": 3, \"loss\": -0.0, \"tokens\": 12}\n"
           "{\"step\": 4, \"loss\": Infinity, \"wall_time\": 1700000001.5}\n"
           "{\"step\": 9, \"loss\": 5e-324, \"wall_time\": 1700000002.0}\n"
           "{\"step\": 10, \"loss\": -Infinity, \"tokens\": 40}\n"
           "{\"step\": 11, \"loss\": 0.1, \"wall_time\": 1700000003.1}\n");
    // The agent on the host, as the app reaches it: through a wrapper that
    // logs the requests (after an older agent's filter) and the answers, a
    // pair of files for each agent started (the window's, its watch's).
    const QString wrapper = dir + "/agent.sh";
    const QString filter =
        olderAgent ? "sed -u 's/,\"columns\":true//; s/,\"stream\":true//' | " : "";
    QVERIFY(ckpt::test::writeScript(wrapper,
                                    QString("#!/bin/sh\n%1tee '%2/sent-'$$.jsonl | '%3' \"$@\" | "
                                            "tee '%2/answered-'$$.jsonl\n")
                                        .arg(filter, dir, CKPT_CLI)
                                        .toUtf8()));
    const QByteArray cli = qgetenv("CKPTSCOPE_REMOTE_CLI");
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([&] { qputenv("CKPTSCOPE_REMOTE_CLI", cli); });

    MainWindow local;
    QVERIFY(openLocal(local, dir));
    const QStringList localPoints = pointBits(local.curvesView());
    // steady: loss and lr, 300 points each; odd: loss, 6 points.
    QCOMPARE(localPoints.size(), 2 * 300 + 6);
    // The reading here is the truth: what the lines say, to the bit.
    QVERIFY(localPoints.contains("odd loss 3 8000000000000000 - 12"));   // -0.0
    QVERIFY(localPoints.contains("odd loss 9 1 41d954fc40800000 -"));    // 5e-324
    QVERIFY(localPoints.contains("odd loss 10 fff0000000000000 - 40"));  // -inf

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy curvesReady(w.curvesView(), &ckpt::CurvesView::curvesReady);
    const QString where = QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(dir);
    QVERIFY2(openWithDialog(w, where), "File > Open Remote... did not load the folder");
    QVERIFY(!w.findChild<QMessageBox*>("remoteError"));
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
    QVERIFY(curvesReady.count() > 0 || curvesReady.wait(30000));
    QCOMPARE(pointBits(w.curvesView()), localPoints);

    // What the app asked, and how the agent answered (tee may write its
    // file after the app has read the answer: waited for).
    // A run comes in an event of its own (`stream`), or in the answer.
    QJsonObject asked, steadyAnswer;
    QString steadyCameIn;
    const auto logged = [&] {
      for (const QJsonObject& m : jsonLines(dir, "sent-*.jsonl"))
        if (m["method"].toString() == "metrics") asked = m["params"].toObject();
      for (const QJsonObject& m : jsonLines(dir, "answered-*.jsonl"))
        for (const QString part : {"result", "event"})
          for (const QJsonValue& run : m[part].toObject()["runs"].toArray())
            if (run.toObject()["name"].toString() == "steady") {
              steadyAnswer = run.toObject();
              steadyCameIn = part;
            }
      return !asked.isEmpty() && !steadyAnswer.isEmpty();
    };
    QTRY_VERIFY_WITH_TIMEOUT(logged(), 10000);
    QCOMPARE(asked["paths"].toArray(), QJsonArray{dir});
    QCOMPARE(asked.contains("columns"), !olderAgent);  // the older agent's filter took it out
    QCOMPARE(asked.contains("stream"), !olderAgent);
    if (!olderAgent) QCOMPARE(asked["columns"], QJsonValue(true));
    if (!olderAgent) QCOMPARE(asked["stream"], QJsonValue(true));
    QCOMPARE(steadyCameIn, QString(olderAgent ? "result" : "event"));
    const QJsonArray answered = steadyAnswer["series"].toArray();
    QCOMPARE(answered.size(), 2);
    for (const QJsonValue& series : answered) {
      const QJsonObject o = series.toObject();
      if (olderAgent) {
        QCOMPARE(o["points"].toArray().size(), 300);
        QVERIFY(!o.contains("columns"));
      } else {
        // Steps every 10 and the constant lr as first and stride.
        const QJsonObject columns = o["columns"].toObject();
        QCOMPARE(columns["count"].toInt(), 300);
        QCOMPARE(columns["step"].toObject()["stride"].toInt(), 10);
        QVERIFY(!o.contains("points"));
      }
    }
  }
};

QTEST_MAIN(TestRemoteApp)
#include "tst_remote_app.moc"
