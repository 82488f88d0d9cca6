// What ssh asks the person when a host is reached (docs/REMOTE.md, "Questions
// ssh asks"): a real OpenSSH server on loopback (ssh_server.h), the real
// agent behind it, and an SSH_ASKPASS that is a script of the test's: it
// records each prompt ssh hands it and answers as told. In the app's mode
// (Askpass) a host-key question and a key's passphrase reach it and its
// answer decides; a no, a cancel or a wrong passphrase is a clear error,
// soon. The CLI's mode off a terminal (Refuse, BatchMode) never asks and
// says what to do.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>
#include <optional>

#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/protocol.h"
#include "run_process.h"
#include "ssh_server.h"

using ckpt::remote::AgentClient;
using ckpt::remote::RemoteError;
using ckpt::remote::RemotePath;
using ckpt::remote::SshQuestions;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);
const char* kPassphrase = "correct horse";

// A question that is not answered within this long is a hang.
constexpr qint64 kSoonMs = 20000;

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
  f.write(bytes);
}

// What a connection attempt came to.
struct Outcome {
  bool connected = false;
  int protocol = -1;          // hello's
  std::string code, message;  // the RemoteError, when not connected
  qint64 ms = 0;
};

}  // namespace

class TestRemoteAskpass : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip, m_home;

  // An askpass script: appends "$1" (ssh's prompt), SSH_ASKPASS_PROMPT and a
  // separator to NAME.log, then runs `answer` (a shell line).
  QString askpass(const QString& name, const QString& answer) {
    const QString path = m_tmp.path() + "/" + name + ".sh";
    writeFile(path, QString("#!/bin/sh\nprintf '%s\\n[hint:%s host:%s]\\n--\\n' \"$1\" "
                            "\"$SSH_ASKPASS_PROMPT\" \"$CKPTSCOPE_ASKPASS_HOST\" >> '%1'\n%2\n")
                        .arg(log(name), answer)
                        .toUtf8());
    QFile(path).setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path;
  }
  QString log(const QString& name) const { return m_tmp.path() + "/" + name + ".log"; }

  // A client config for the test's sshd: `identity` (a file in the sshd
  // folder), known hosts in `knownHosts`, then `extra` lines.
  QString config(const QString& name, const QString& identity, const QString& knownHosts,
                 const QString& extra) {
    const QString path = m_tmp.path() + "/" + name + ".ssh_config";
    writeFile(path, QString("Host *\n  Port %1\n  IdentityFile %2/%3\n  IdentitiesOnly yes\n"
                            "  UserKnownHostsFile %4\n  GlobalKnownHostsFile /dev/null\n"
                            "  LogLevel ERROR\n%5")
                        .arg(m_server.port())
                        .arg(m_home, identity, knownHosts, extra)
                        .toUtf8());
    return path;
  }

  // Reaches the agent through `config` the way the app does (Askpass with
  // `askpassProgram`) or, with Refuse, the way a script's CLI does.
  Outcome connect(const QString& config, SshQuestions::Mode mode, const QString& askpassProgram) {
    qputenv("CKPTSCOPE_SSH", ("ssh -F " + config).toUtf8());
    RemotePath where;
    where.host = "127.0.0.1";
    where.port = m_server.port();
    where.path = m_tmp.path().toStdString();
    SshQuestions q;
    q.mode = mode;
    q.askpass = askpassProgram.toStdString();
    Outcome o;
    QElapsedTimer t;
    t.start();
    try {
      AgentClient agent(ckpt::remote::sshAgentCommand(where, kCli.toStdString(), q),
                        "host 127.0.0.1", "tst_remote_askpass");
      o.protocol = agent.hello().value("protocol", -1);
      // A request beyond hello: the connection serves.
      agent.call("open", AgentClient::Json{{"path", where.path}});
      o.connected = true;
    } catch (const RemoteError& e) {
      o.code = e.code();
      o.message = e.what();
    }
    o.ms = t.elapsed();
    return o;
  }

  // The command the messages give to accept the host's key by hand: ssh
  // as CKPTSCOPE_SSH names it (connect() sets it to `ssh -F CONFIG`).
  std::string sshHint() const {
    return "`" + qgetenv("CKPTSCOPE_SSH").toStdString() + " -p " + std::to_string(m_server.port()) +
           " 127.0.0.1`";
  }

  // A known_hosts line for the test's host is in `file`, with the host
  // key's own base64 (from host_key.pub, as ssh-keygen wrote it).
  bool knowsHost(const QString& file) const {
    const QList<QByteArray> pub = readFile(m_home + "/host_key.pub").split(' ');
    return pub.size() >= 2 && readFile(file).contains(pub[1].trimmed());
  }

 private slots:
  void initTestCase();
  void cleanupTestCase();

  void hostKeyQuestionAnsweredYes();
  void hostKeyQuestionAnsweredNo_data();
  void hostKeyQuestionAnsweredNo();
  void hostKeyRefusedNamesWhatToDo();
  void changedHostKeyNamesTheEntry();
  void passphraseAnswered();
  void passphraseWrongOrCancelled_data();
  void passphraseWrongOrCancelled();
  void usersOwnAskpassIsKept();
  void cliOffTerminalNeverAsks();
  void cliOnTerminalAsksThere_data();
  void cliOnTerminalAsksThere();
};

void TestRemoteAskpass::initTestCase() {
  QVERIFY(m_tmp.isValid());
  m_skip = ckpt::test::SshServer::unavailable();
  if (!m_skip.isEmpty()) return;
  // Nothing of the person's may answer for the script: no agent holding
  // keys, no askpass of theirs.
  for (const char* name :
       {"SSH_AUTH_SOCK", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "CKPTSCOPE_REMOTE_CLI"})
    qunsetenv(name);
  QString why;
  QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
  m_home = m_server.home();
  // A second user key, behind a passphrase, that the server also takes.
  const ckpt::test::ProcessResult r = ckpt::test::runProcess(
      "ssh-keygen", {"-q", "-t", "ed25519", "-N", kPassphrase, "-f", m_home + "/pass_key"});
  QVERIFY2(r.exitCode == 0, r.err.constData());
  QFile keys(m_home + "/authorized_keys");
  QVERIFY(keys.open(QIODevice::Append));
  keys.write(readFile(m_home + "/pass_key.pub"));
}

void TestRemoteAskpass::cleanupTestCase() {
  m_server.stop();
}

void TestRemoteAskpass::hostKeyQuestionAnsweredYes() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString known = m_tmp.path() + "/known_yes";
  const QString cfg = config("ask_yes", "user_key", known, "  StrictHostKeyChecking ask\n");
  const Outcome o = connect(cfg, SshQuestions::Mode::Askpass, askpass("yes", "echo yes"));
  QVERIFY2(o.connected, o.message.c_str());
  QCOMPARE(o.protocol, ckpt::remote::kProtocolVersion);
  // The question ssh asked, as it asks it in a terminal.
  const QByteArray asked = readFile(log("yes"));
  QVERIFY2(asked.contains("authenticity of host"), asked.constData());
  QVERIFY2(asked.contains("(yes/no"), asked.constData());
  QCOMPARE(asked.count("\n--\n"), 1);
  // The host, for the dialog's heading.
  QVERIFY2(asked.contains(QString("host:127.0.0.1:%1]").arg(m_server.port()).toUtf8()),
           asked.constData());
  // Accepted: the host's key is now in known_hosts, so the next connection asks nothing.
  QVERIFY(knowsHost(known));
  const Outcome again = connect(cfg, SshQuestions::Mode::Askpass, askpass("yes2", "echo yes"));
  QVERIFY2(again.connected, again.message.c_str());
  QVERIFY(!QFile::exists(log("yes2")));
}

void TestRemoteAskpass::hostKeyQuestionAnsweredNo_data() {
  QTest::addColumn<QString>("answer");
  QTest::newRow("cancelled (exit 1)") << "exit 1";
  QTest::newRow("no") << "echo no";
}

void TestRemoteAskpass::hostKeyQuestionAnsweredNo() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  QFETCH(QString, answer);
  const QString name = answer.startsWith("exit") ? "no_exit" : "no_answer";
  const QString known = m_tmp.path() + "/known_" + name;
  const Outcome o = connect(config(name, "user_key", known, "  StrictHostKeyChecking ask\n"),
                            SshQuestions::Mode::Askpass, askpass(name, answer));
  QVERIFY(!o.connected);
  QVERIFY2(o.ms < kSoonMs, qPrintable(QString::number(o.ms)));
  QCOMPARE(readFile(log(name)).count("\n--\n"), 1);  // asked once
  QCOMPARE(o.code, std::string("login"));
  QVERIFY2(o.message.find("the host's key was not accepted") != std::string::npos,
           o.message.c_str());
  // What to run names this host and port.
  QVERIFY2(o.message.find(sshHint()) != std::string::npos, o.message.c_str());
  QVERIFY(!knowsHost(known));
}

void TestRemoteAskpass::hostKeyRefusedNamesWhatToDo() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // Refuse (BatchMode): the question is never put, whatever SSH_ASKPASS says.
  const QString known = m_tmp.path() + "/known_refuse";
  const Outcome o = connect(config("refuse", "user_key", known, "  StrictHostKeyChecking ask\n"),
                            SshQuestions::Mode::Refuse, askpass("refuse", "echo yes"));
  QVERIFY(!o.connected);
  QVERIFY(!QFile::exists(log("refuse")));
  QCOMPARE(o.code, std::string("login"));
  QVERIFY2(o.message.find(sshHint() + " in a terminal") != std::string::npos, o.message.c_str());
  QVERIFY2(o.message.find("StrictHostKeyChecking accept-new") != std::string::npos,
           o.message.c_str());
}

void TestRemoteAskpass::changedHostKeyNamesTheEntry() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // known_hosts holds another key for this host and port (the user key's,
  // as if the host had been reinstalled): ssh refuses without asking.
  const QString known = m_tmp.path() + "/known_changed";
  const QList<QByteArray> other = readFile(m_home + "/user_key.pub").split(' ');
  QVERIFY(other.size() >= 2);
  writeFile(known, QString("[127.0.0.1]:%1 ").arg(m_server.port()).toUtf8() + other[0] + " " +
                       other[1].trimmed() + "\n");
  const QString cfg = config("changed", "user_key", known, "  StrictHostKeyChecking ask\n");
  const Outcome o = connect(cfg, SshQuestions::Mode::Askpass, askpass("changed", "echo yes"));
  QVERIFY(!o.connected);
  QVERIFY(!QFile::exists(log("changed")));
  QCOMPARE(o.code, std::string("login"));
  QVERIFY2(o.message.find("not the one ~/.ssh/known_hosts holds") != std::string::npos,
           o.message.c_str());
  // The command it names removes exactly that entry: run it (on the
  // test's file) and the host is asked about, accepted and reached.
  const std::string head = "`ssh-keygen -R ";
  const size_t at = o.message.find(head);
  QVERIFY2(at != std::string::npos, o.message.c_str());
  const size_t end = o.message.find('`', at + head.size());
  QString entry =
      QString::fromStdString(o.message.substr(at + head.size(), end - at - head.size()));
  QVERIFY2(entry.startsWith('\'') && entry.endsWith('\''), qPrintable(entry));  // a shell word
  entry = entry.mid(1, entry.size() - 2);
  const ckpt::test::ProcessResult removed =
      ckpt::test::runProcess("ssh-keygen", {"-f", known, "-R", entry});
  QVERIFY2(removed.exitCode == 0, removed.err.constData());
  QVERIFY(!readFile(known).contains(other[1].trimmed()));
  const Outcome again = connect(cfg, SshQuestions::Mode::Askpass, askpass("changed2", "echo yes"));
  QVERIFY2(again.connected, again.message.c_str());
  QVERIFY(readFile(log("changed2")).contains("authenticity of host"));
  QVERIFY(knowsHost(known));
}

void TestRemoteAskpass::passphraseAnswered() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString known = m_tmp.path() + "/known_pass";
  const Outcome o =
      connect(config("pass", "pass_key", known,
                     "  StrictHostKeyChecking accept-new\n  NumberOfPasswordPrompts 1\n"),
              SshQuestions::Mode::Askpass, askpass("pass", QString("echo '%1'").arg(kPassphrase)));
  QVERIFY2(o.connected, o.message.c_str());
  const QByteArray asked = readFile(log("pass"));
  QVERIFY2(asked.contains("Enter passphrase for key"), asked.constData());
  QVERIFY2(asked.contains("pass_key"), asked.constData());
  QCOMPARE(asked.count("\n--\n"), 1);
}

void TestRemoteAskpass::passphraseWrongOrCancelled_data() {
  QTest::addColumn<QString>("answer");
  QTest::newRow("wrong") << "echo 'wrong horse'";
  QTest::newRow("cancelled") << "exit 1";
}

void TestRemoteAskpass::passphraseWrongOrCancelled() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  QFETCH(QString, answer);
  const QString name = answer.startsWith("exit") ? "pass_cancel" : "pass_wrong";
  const Outcome o =
      connect(config(name, "pass_key", m_tmp.path() + "/known_" + name,
                     "  StrictHostKeyChecking accept-new\n  NumberOfPasswordPrompts 1\n"),
              SshQuestions::Mode::Askpass, askpass(name, answer));
  QVERIFY(!o.connected);
  QVERIFY2(o.ms < kSoonMs, qPrintable(QString::number(o.ms)));
  const QByteArray asked = readFile(log(name));
  QVERIFY2(asked.contains("Enter passphrase for key"), asked.constData());
  // Asked as often as ssh_config allows (NumberOfPasswordPrompts 1), then given up.
  QCOMPARE(asked.count("\n--\n"), 1);
  QCOMPARE(o.code, std::string("login"));
  QVERIFY2(o.message.find("ssh could not log in") != std::string::npos, o.message.c_str());
  QVERIFY2(o.message.find("ssh-add") != std::string::npos, o.message.c_str());
  QVERIFY2(o.message.find("Permission denied") != std::string::npos, o.message.c_str());
}

void TestRemoteAskpass::usersOwnAskpassIsKept() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // The person set SSH_ASKPASS: theirs is asked, not ours.
  qputenv("SSH_ASKPASS", askpass("theirs", "echo yes").toUtf8());
  const auto unset = qScopeGuard([] { qunsetenv("SSH_ASKPASS"); });
  const QString known = m_tmp.path() + "/known_theirs";
  const Outcome o = connect(config("theirs", "user_key", known, "  StrictHostKeyChecking ask\n"),
                            SshQuestions::Mode::Askpass, askpass("ours", "exit 1"));
  QVERIFY2(o.connected, o.message.c_str());
  QVERIFY(readFile(log("theirs")).contains("authenticity of host"));
  QVERIFY(!QFile::exists(log("ours")));
}

void TestRemoteAskpass::cliOffTerminalNeverAsks() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // ckptscope-cli from a script (stdin not a terminal): BatchMode, even
  // with an SSH_ASKPASS that ssh is told to use; the error names what to do.
  const QString cfg = config("cli", "pass_key", m_tmp.path() + "/known_cli",
                             "  StrictHostKeyChecking accept-new\n");
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("CKPTSCOPE_SSH", "ssh -F " + cfg);
  env.insert("CKPTSCOPE_REMOTE_CLI", kCli);
  env.insert("SSH_ASKPASS", askpass("cli", QString("echo '%1'").arg(kPassphrase)));
  env.insert("SSH_ASKPASS_REQUIRE", "force");
  QProcess p;
  p.setProcessEnvironment(env);
  QElapsedTimer t;
  t.start();
  p.start(kCli,
          {"ls", "--json", QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(m_tmp.path())});
  const ckpt::test::ProcessResult r = ckpt::test::finishProcess(p, 60000);
  QVERIFY2(t.elapsed() < kSoonMs, qPrintable(QString::number(t.elapsed())));
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY(!QFile::exists(log("cli")));
  QVERIFY2(r.err.contains("without asking for a password or passphrase (BatchMode)"),
           r.err.constData());
  QVERIFY2(r.err.contains("`ssh-add`"), r.err.constData());
  QVERIFY2(r.err.contains(QString("`ssh-copy-id -p %1 127.0.0.1`").arg(m_server.port()).toUtf8()),
           r.err.constData());
}

void TestRemoteAskpass::cliOnTerminalAsksThere_data() {
  QTest::addColumn<QString>("typed");
  QTest::newRow("right passphrase") << QString(kPassphrase);
  QTest::newRow("wrong passphrase") << "wrong horse";
}

void TestRemoteAskpass::cliOnTerminalAsksThere() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  QFETCH(QString, typed);
  // ckptscope-cli at a terminal (pty_answer.py gives it one, and types at
  // ssh's prompt as a person would): ssh asks there, as scp does.
  const QString cfg = config("tty", "pass_key", m_tmp.path() + "/known_tty",
                             "  StrictHostKeyChecking accept-new\n  NumberOfPasswordPrompts 1\n");
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("CKPTSCOPE_SSH", "ssh -F " + cfg);
  env.insert("CKPTSCOPE_REMOTE_CLI", kCli);
  for (const char* name : {"SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "DISPLAY", "WAYLAND_DISPLAY"})
    env.remove(name);
  const QString dir = m_tmp.path() + "/listed";
  QVERIFY(QDir().mkpath(dir));
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(CKPT_TORCH_PYTHON),
          {QStringLiteral(CKPT_SOURCE_DIR) + "/tests/core/pty_answer.py", "30",
           "Enter passphrase for key", typed, "--", kCli, "ls", "--json",
           QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(dir)});
  const ckpt::test::ProcessResult r = ckpt::test::finishProcess(p, 60000);
  QVERIFY2(r.exitCode != 124, r.out.constData());  // 124: nothing ended it
  QVERIFY2(r.out.contains("Enter passphrase for key"), r.out.constData());
  QVERIFY2(!r.out.contains(typed.toUtf8()), r.out.constData());  // not echoed
  if (typed == kPassphrase) {
    QCOMPARE(r.exitCode, 0);
    // What the same command prints for the folder here (the terminal ends lines with \r\n).
    const ckpt::test::ProcessResult local = ckpt::test::runProcess(kCli, {"ls", "--json", dir});
    QCOMPARE(local.exitCode, 0);
    QVERIFY2(r.out.contains(QByteArray(local.out).replace("\n", "\r\n")), r.out.constData());
  } else {
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.out.contains("ssh could not log in"), r.out.constData());
  }
}

QTEST_GUILESS_MAIN(TestRemoteAskpass)
#include "tst_remote_askpass.moc"
