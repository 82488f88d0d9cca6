#pragma once
// The processes of a test's ssh connections, as /proc shows them: the app's
// ssh children, the sessions a test's sshd forked, a shared login's master
// (which runs in the background, no child of the app's).
#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QList>
#include <QString>
#include <QStringList>

namespace ckpt::test {

// `pid`'s parent and program name (comm), from /proc/PID/stat; false when it is gone.
inline bool procStat(qint64 pid, qint64* parent, QByteArray* comm) {
  QFile f(QString("/proc/%1/stat").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QByteArray stat = f.readAll();
  const int open = stat.indexOf('('), close = stat.lastIndexOf(')');
  const QList<QByteArray> fields = stat.mid(close + 2).split(' ');
  if (open < 0 || close < 0 || fields.size() < 2) return false;
  *parent = fields[1].toLongLong();
  *comm = stat.mid(open + 1, close - open - 1);
  return true;
}

inline QList<qint64> allPids() {
  QList<qint64> out;
  for (const QString& p : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    const qint64 id = p.toLongLong(&numeric);
    if (numeric && id > 0) out << id;
  }
  return out;
}

// The processes whose parent is `pid` and whose program is `comm`.
inline QList<qint64> childrenNamed(qint64 pid, const QByteArray& comm) {
  QList<qint64> out;
  qint64 parent = 0;
  QByteArray name;
  for (qint64 id : allPids())
    if (procStat(id, &parent, &name) && parent == pid && name == comm) out << id;
  return out;
}

// Every process below `pid` (children first found through /proc's ppid).
inline QList<qint64> descendants(qint64 pid) {
  QList<qint64> out;
  qint64 parent = 0;
  QByteArray name;
  for (qint64 id : allPids())
    if (procStat(id, &parent, &name) && parent == pid) out << id << descendants(id);
  return out;
}

// The processes whose command line (argv, or the title a process set, as
// an ssh master's "ssh: PATH [mux]") holds `text`.
inline QList<qint64> processesMentioning(const QByteArray& text) {
  QList<qint64> out;
  for (qint64 id : allPids()) {
    QFile f(QString("/proc/%1/cmdline").arg(id));
    if (f.open(QIODevice::ReadOnly) && f.readAll().contains(text)) out << id;
  }
  return out;
}

// The app's ssh connections to hosts: its ssh children that run the agent
// (`ssh ... serve --stdio`). Not the `ssh -G` that reads the person's config
// before each connection (ckpt/remote/ssh_sharing.h): it comes and goes
// within moments, so counting it would see a connection that is not there.
inline QList<qint64> agentConnections(qint64 pid) {
  QList<qint64> out;
  for (qint64 id : childrenNamed(pid, "ssh")) {
    QFile f(QString("/proc/%1/cmdline").arg(id));
    // The remote command is one word of argv or several: "... serve --stdio".
    if (f.open(QIODevice::ReadOnly) && f.readAll().replace('\0', ' ').contains(" --stdio "))
      out << id;
  }
  return out;
}

// `pids` as "PID STATE argv", for a failure's message.
inline QString describe(const QList<qint64>& pids) {
  QStringList out;
  for (qint64 id : pids) {
    QFile cmd(QString("/proc/%1/cmdline").arg(id)), stat(QString("/proc/%1/stat").arg(id));
    QByteArray argv = cmd.open(QIODevice::ReadOnly) ? cmd.readAll() : QByteArray();
    argv.replace('\0', ' ');
    const QByteArray st = stat.open(QIODevice::ReadOnly) ? stat.readAll() : QByteArray();
    const qsizetype close = st.lastIndexOf(')');
    out << QString("%1 %2 %3")
               .arg(id)
               .arg(close > 0 ? QString(st.mid(close + 2, 1)) : "gone",
                    QString::fromUtf8(argv.trimmed()));
  }
  return out.join('\n');
}

}  // namespace ckpt::test
