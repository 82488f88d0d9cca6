#pragma once
// A real OpenSSH server (Debian's openssh-server) on a loopback port, with a
// host key and a user key generated into a folder of the test's, and the
// ssh_config a client uses to reach it (`ssh -F HOME/ssh_config`): no system
// configuration is read or touched. tst_remote (the CLI) and tst_remote_app
// (the app) both start it. The app's shared logins to it (docs/REMOTE.md,
// "One login per host") keep their sockets in a folder of the test
// process's own and are ended with the server.
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QTemporaryDir>
#include <QThread>

#include "run_process.h"

namespace ckpt::test {

class SshServer {
 public:
  SshServer() = default;
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;
  ~SshServer() {
    endSharedLogins();
    stop();
  }

  // Why the ssh tests cannot run here (sshd missing); empty when they can.
  [[nodiscard]] static QString unavailable() {
    if (QFile::exists("/usr/sbin/sshd")) return {};
    return "/usr/sbin/sshd is not installed (Debian: openssh-server; packaging/bootstrap.sh "
           "installs it)";
  }

  // Generates the keys into `home` (created) and starts sshd; false, with
  // `why`, when a step failed.
  bool setUp(const QString& home, QString* why) {
    m_home = home;
    // The app's control sockets go to $XDG_RUNTIME_DIR/ckptscope-ssh: here,
    // so that a test's masters are never another test's (on a port used
    // again) and are ended with this server.
    qputenv("XDG_RUNTIME_DIR", runtimeDir().toUtf8());
    // sshd wants its privilege-separation folder, as root CI does.
    QDir().mkpath("/run/sshd");
    if (!QDir().mkpath(m_home)) return fail(why, "cannot make " + m_home);
    for (const char* key : {"host_key", "user_key"}) {
      const ProcessResult r =
          runProcess("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-f", m_home + "/" + key});
      if (r.exitCode != 0) return fail(why, "ssh-keygen: " + QString::fromUtf8(r.err));
    }
    if (!QFile::copy(m_home + "/user_key.pub", m_home + "/authorized_keys"))
      return fail(why, "cannot write authorized_keys");
    if (!start()) return fail(why, "sshd did not start (see the warnings above)");
    return true;
  }

  // Starts sshd on a port of our own: tried from one that depends on the
  // pid, as sshd says when it cannot listen. Again after stop(): the same
  // keys (the client knows the host), the same port when it is free.
  bool start() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      if (m_port == 0 || attempt > 0)
        m_port = 20000 + int((::getpid() * 7 + attempt * 131) % 30000);
      QFile cfg(m_home + "/sshd_config");
      if (!cfg.open(QIODevice::WriteOnly)) return false;
      cfg.write(
          QString("Port %1\nListenAddress 127.0.0.1\nHostKey %2/host_key\n"
                  "AuthorizedKeysFile %2/authorized_keys\nStrictModes no\nUsePAM no\n"
                  "PidFile none\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n")
              .arg(m_port)
              .arg(m_home)
              .toUtf8());
      cfg.close();
      QFile client(m_home + "/ssh_config");
      if (!client.open(QIODevice::WriteOnly)) return false;
      client.write(
          QString("Host *\n  Port %1\n  IdentityFile %2/user_key\n  IdentitiesOnly yes\n"
                  "  UserKnownHostsFile %2/known_hosts\n  StrictHostKeyChecking accept-new\n"
                  "  LogLevel ERROR\n")
              .arg(m_port)
              .arg(m_home)
              .toUtf8());
      client.close();
      m_sshd.setProcessChannelMode(QProcess::MergedChannels);
      m_sshd.start("/usr/sbin/sshd", {"-D", "-e", "-f", m_home + "/sshd_config"});
      m_sshd.waitForStarted();
      QByteArray log;
      QElapsedTimer t;
      t.start();
      while (t.elapsed() < 10000 && m_sshd.state() == QProcess::Running &&
             !log.contains("Server listening")) {
        m_sshd.waitForReadyRead(200);
        log += m_sshd.readAll();
      }
      if (log.contains("Server listening")) return true;
      m_sshd.waitForFinished(1000);
      log += m_sshd.readAll();
      m_sshd.kill();
      m_sshd.waitForFinished();
      qWarning("sshd did not start on port %d (exit %d): %s", m_port, m_sshd.exitCode(),
               log.toPercentEncoding(" :/.").constData());
    }
    return false;
  }

  // Ends the listening sshd (the sessions it forked live on: see killSessions).
  void stop() {
    if (m_sshd.state() != QProcess::NotRunning) {
      m_sshd.terminate();
      if (!m_sshd.waitForFinished(5000)) m_sshd.kill();
      m_sshd.waitForFinished();
    }
  }

  // The folder XDG_RUNTIME_DIR names for the test process (made 0700 by
  // QTemporaryDir, and short: a socket's path holds 107 bytes).
  [[nodiscard]] static QString runtimeDir() {
    static QTemporaryDir dir(QDir::tempPath() + "/ckr-XXXXXX");
    return dir.path();
  }
  // Where the app keeps its control sockets (ckpt/remote/ssh_sharing.h).
  [[nodiscard]] static QString controlDir() { return runtimeDir() + "/ckptscope-ssh"; }
  // The control sockets there now (each a shared login's master, or one
  // left by a master that was killed).
  [[nodiscard]] static QStringList controlSockets() {
    QStringList out;
    for (const QString& name : QDir(controlDir()).entryList(QDir::System | QDir::NoDotAndDotDot))
      out << controlDir() + "/" + name;
    return out;
  }
  // The pid of the master listening on `socket` (`ssh -O check`), 0 when none.
  [[nodiscard]] static qint64 masterPid(const QString& socket) {
    const ProcessResult r =
        runProcess("ssh", {"-F", "/dev/null", "-S", socket, "-O", "check", "master"}, {}, 10000);
    const QByteArray said = r.err + r.out;
    const int at = said.indexOf("(pid=");
    return r.exitCode == 0 && at >= 0 ? said.mid(at + 5).split(')').value(0).toLongLong() : 0;
  }
  // Ends the app's shared logins (`ssh -O exit` to each master) and waits
  // for their sockets to go, so that no ssh master outlives the test; a
  // socket whose master is gone is removed.
  static void endSharedLogins() {
    for (const QString& socket : controlSockets()) {
      runProcess("ssh", {"-F", "/dev/null", "-S", socket, "-O", "exit", "master"}, {}, 10000);
      QElapsedTimer t;
      t.start();
      while (QFile::exists(socket) && t.elapsed() < 5000) QThread::msleep(20);
      if (QFile::exists(socket) && masterPid(socket) == 0) QFile::remove(socket);
    }
  }

  [[nodiscard]] qint64 pid() const { return m_sshd.processId(); }
  [[nodiscard]] int port() const { return m_port; }
  [[nodiscard]] const QString& home() const { return m_home; }
  // What CKPTSCOPE_SSH is set to for a client of this server.
  [[nodiscard]] QString sshCommand() const { return "ssh -F " + m_home + "/ssh_config"; }

 private:
  bool fail(QString* why, const QString& what) {
    if (why) *why = what;
    return false;
  }

  QProcess m_sshd;
  QString m_home;
  int m_port = 0;
};

}  // namespace ckpt::test
