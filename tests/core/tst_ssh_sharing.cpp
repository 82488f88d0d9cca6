// One login per host for the app (ckpt/remote/ssh_sharing.h, docs/REMOTE.md
// "One login per host"): the folder of its control sockets is private
// (0700, this user's, no symlink) or not used; the options go before the
// destination; a person's own multiplexing (in the ssh_config `ssh -G`
// reads, or in CKPTSCOPE_SSH) is left alone; an `ssh -G` that fails adds
// ours. The real ssh's `-G` is run (no network, no server). The app's
// connections through a real sshd: tests/ui/tst_remote_login.
#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "ckpt/remote/ssh_sharing.h"

using ckpt::remote::AgentCommand;
using ckpt::remote::RemotePath;
using ckpt::remote::SshQuestions;

namespace {

const QString kOurTmpDir = "/tmp/ckptscope-ssh-" + QString::number(::getuid());

QString modeOf(const QString& path) {
  struct stat st {};
  if (::lstat(QFile::encodeName(path).constData(), &st) != 0) return "missing";
  return QString::number(st.st_mode & 07777, 8);
}

// The app's command for 127.0.0.1:2222 (as sshquestions.cpp makes it).
AgentCommand appCommand() {
  RemotePath where;
  where.user = "me";
  where.host = "127.0.0.1";
  where.port = 2222;
  where.path = "/runs";
  SshQuestions q;
  q.mode = SshQuestions::Mode::Askpass;
  q.askpass = "/bin/false";
  return ckpt::remote::sshAgentCommand(where, {}, q);
}

// Restores an environment variable when the test ends.
auto keepEnv(const char* name) {
  const bool had = qEnvironmentVariableIsSet(name);
  const QByteArray value = qgetenv(name);
  return qScopeGuard([=] {
    if (had)
      qputenv(name, value);
    else
      qunsetenv(name);
  });
}

}  // namespace

class TestSshSharing : public QObject {
  Q_OBJECT

  // Short: the control sockets' folder must leave room for a socket's name.
  QTemporaryDir m_tmp{QDir::tempPath() + "/cks-XXXXXX"};

  QString writeConfig(const QString& name, const QString& text) {
    const QString path = m_tmp.path() + "/" + name;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text.toUtf8());
    return path;
  }

 private slots:
  void initTestCase() { QVERIFY(m_tmp.isValid()); }

  // $XDG_RUNTIME_DIR/ckptscope-ssh, made 0700 (and used again as it is).
  void controlDirMadePrivate() {
    const auto restore = keepEnv("XDG_RUNTIME_DIR");
    const QString run = m_tmp.path() + "/run";
    QVERIFY(QDir().mkpath(run));
    qputenv("XDG_RUNTIME_DIR", (run + "/").toUtf8());
    std::string why;
    const std::string dir = ckpt::remote::sshControlDir(&why);
    QCOMPARE(QString::fromStdString(dir), run + "/ckptscope-ssh");
    QVERIFY2(why.empty(), why.c_str());
    QCOMPARE(modeOf(run + "/ckptscope-ssh"), QString("700"));
    QCOMPARE(QString::fromStdString(ckpt::remote::sshControlDir()), run + "/ckptscope-ssh");
  }

  // A folder that is not private, not a folder, or whose path could not
  // hold a socket or would be read as tokens by ssh is not used: the one
  // in /tmp is, and `why` says what was wrong.
  void controlDirRefused_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("why");
    QTest::newRow("open to others") << "0755"
                                    << "open to others (mode 0755, not 0700)";
    QTest::newRow("a symlink") << "symlink"
                               << "not a folder";
    QTest::newRow("too long") << "long"
                              << "too long for a socket path";
    QTest::newRow("a % in it") << "percent"
                               << "a character ssh would read";
    QTest::newRow("a space in it") << "space"
                                   << "a character ssh would read";
  }
  void controlDirRefused() {
    QFETCH(QString, kind);
    QFETCH(QString, why);
    const auto restore = keepEnv("XDG_RUNTIME_DIR");
    QString run = m_tmp.path() + "/r" + kind.left(2);
    if (kind == "long") run += "/" + QString(40, 'x');
    if (kind == "percent") run += "/%h";
    if (kind == "space") run += "/a b";
    QVERIFY(QDir().mkpath(run));
    const QString dir = run + "/ckptscope-ssh";
    if (kind == "0755") {
      QVERIFY(QDir().mkpath(dir));
      QVERIFY(::chmod(QFile::encodeName(dir).constData(), 0755) == 0);
    }
    if (kind == "symlink") {
      QVERIFY(QDir().mkpath(run + "/elsewhere"));
      QVERIFY(::chmod(QFile::encodeName(run + "/elsewhere").constData(), 0700) == 0);
      QVERIFY(QFile::link(run + "/elsewhere", dir));
    }
    qputenv("XDG_RUNTIME_DIR", run.toUtf8());
    std::string said;
    const QString used = QString::fromStdString(ckpt::remote::sshControlDir(&said));
    QVERIFY2(used != dir, qPrintable(used));
    QVERIFY2(QString::fromStdString(said).contains(why), said.c_str());
    // /tmp/ckptscope-ssh-UID instead (unless that is not usable here either).
    QVERIFY2(
        used == kOurTmpDir || (used.isEmpty() && QString::fromStdString(said).contains(kOurTmpDir)),
        qPrintable(used + ": " + QString::fromStdString(said)));
    if (kind == "0755") QCOMPARE(modeOf(dir), QString("755"));  // left as it was
  }

  // Where the person's ssh multiplexes already, nothing is added: their
  // ssh_config (as `ssh -G` reads it for this destination) or CKPTSCOPE_SSH.
  void ownMultiplexingLeftAlone_data() {
    QTest::addColumn<QString>("config");   // the ssh_config's text
    QTest::addColumn<QString>("options");  // after "ssh -F CONFIG" in CKPTSCOPE_SSH
    QTest::addColumn<bool>("theirs");
    QTest::newRow("nothing set") << ""
                                 << "" << false;
    QTest::newRow("ControlMaster auto + ControlPath")
        << "Host *\n  ControlMaster auto\n  ControlPath /tmp/own-%C\n  ControlPersist 10m\n"
        << "" << true;
    QTest::newRow("ControlPath only") << "Host 127.0.0.1\n  ControlPath ~/.ssh/cm-%r@%h:%p\n"
                                      << "" << true;
    QTest::newRow("ControlMaster yes") << "Host *\n  ControlMaster yes\n"
                                       << "" << true;
    QTest::newRow("ControlMaster no") << "Host *\n  ControlMaster no\n"
                                      << "" << false;
    QTest::newRow("another host's") << "Host elsewhere\n  ControlMaster auto\n"
                                       "  ControlPath /tmp/own-%C\n"
                                    << "" << false;
    QTest::newRow("another port's") << "Match host 127.0.0.1 exec \"test %p = 22\"\n"
                                       "  ControlPath /tmp/own-%C\n"
                                    << "" << false;
    QTest::newRow("-o ControlPath=none") << ""
                                         << "-o ControlPath=none" << true;
    QTest::newRow("-oControlMaster=no") << ""
                                        << "-oControlMaster=no" << true;
    QTest::newRow("-S") << ""
                        << "-S /tmp/own" << true;
  }
  void ownMultiplexingLeftAlone() {
    QFETCH(QString, config);
    QFETCH(QString, options);
    QFETCH(bool, theirs);
    const auto restore = keepEnv("CKPTSCOPE_SSH");
    const auto restoreRun = keepEnv("XDG_RUNTIME_DIR");
    qputenv("XDG_RUNTIME_DIR", m_tmp.path().toUtf8());
    const QString file =
        writeConfig("config-" + QString::number(qHash(QString(QTest::currentDataTag()))), config);
    QVERIFY(!file.isEmpty());
    qputenv("CKPTSCOPE_SSH",
            ("ssh -F " + file + (options.isEmpty() ? "" : " " + options)).toUtf8());
    AgentCommand cmd = appCommand();
    QCOMPARE(ckpt::remote::sshMultiplexesAlready(cmd), theirs);
    const std::vector<std::string> before = cmd.argv;
    QCOMPARE(ckpt::remote::shareLogin(cmd), !theirs);
    if (theirs) {
      QVERIFY(cmd.argv == before);
      QVERIFY(cmd.controlPath.empty());
    }
  }

  // Ours: after the program and CKPTSCOPE_SSH's options, before "--" and
  // the destination, each an argv word of its own (no shell).
  void optionsBeforeTheDestination() {
    const auto restore = keepEnv("CKPTSCOPE_SSH");
    const auto restoreRun = keepEnv("XDG_RUNTIME_DIR");
    qputenv("XDG_RUNTIME_DIR", m_tmp.path().toUtf8());
    const QString file = writeConfig("plain", "Host *\n  LogLevel ERROR\n");
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + file).toUtf8());
    AgentCommand cmd = appCommand();
    const std::vector<std::string> before = cmd.argv;
    QVERIFY(ckpt::remote::shareLogin(cmd));
    const std::string dir = m_tmp.path().toStdString() + "/ckptscope-ssh";
    QCOMPARE(cmd.controlPath, dir + "/%C");
    const std::vector<std::string> ours{
        "-o", "ControlMaster=auto", "-o", "ControlPath=" + dir + "/%C", "-o", "ControlPersist=60s"};
    const auto dash = std::find(cmd.argv.begin(), cmd.argv.end(), std::string("--"));
    QVERIFY(dash != cmd.argv.end());
    QVERIFY(dash - cmd.argv.begin() >= long(ours.size()));
    QVERIFY(std::equal(ours.begin(), ours.end(), dash - long(ours.size())));
    // Nothing else moved: the rest is the command as it was.
    std::vector<std::string> without = cmd.argv;
    without.erase(
        std::search(without.begin(), without.end(), ours.begin(), ours.end()),
        std::search(without.begin(), without.end(), ours.begin(), ours.end()) + long(ours.size()));
    QVERIFY(without == before);
    QCOMPARE(cmd.argv.front(), std::string("ssh"));
    QCOMPARE(cmd.argv[1], std::string("-F"));
    QCOMPARE(cmd.argv.back().substr(0, 15), std::string("'ckptscope-cli'"));
  }

  // An ssh whose -G fails (not OpenSSH, or a config it cannot read): ours
  // are added, as the ssh that runs the agent must take them anyway.
  void probeFailsOursAdded() {
    const auto restore = keepEnv("CKPTSCOPE_SSH");
    const auto restoreRun = keepEnv("XDG_RUNTIME_DIR");
    qputenv("XDG_RUNTIME_DIR", m_tmp.path().toUtf8());
    qputenv("CKPTSCOPE_SSH", "false");
    AgentCommand cmd = appCommand();
    QVERIFY(!ckpt::remote::sshMultiplexesAlready(cmd));
    QVERIFY(ckpt::remote::shareLogin(cmd));
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + m_tmp.path() + "/no-such-config").toUtf8());
    cmd = appCommand();
    QVERIFY(!ckpt::remote::sshMultiplexesAlready(cmd));
  }

  // A program started directly (no ssh, no destination) gets nothing.
  void directProgramGetsNothing() {
    AgentCommand cmd;
    cmd.argv = {"ckptscope-cli", "serve", "--stdio"};
    QVERIFY(!ckpt::remote::shareLogin(cmd));
    QCOMPARE(cmd.argv.size(), size_t(3));
  }
};

QTEST_GUILESS_MAIN(TestSshSharing)
#include "tst_ssh_sharing.moc"
