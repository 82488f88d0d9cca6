#pragma once
// Runs a program the way a user would and collects what it printed.

#include <QProcess>
#include <QString>
#include <QStringList>

namespace ckpt::test {

struct ProcessResult {
  int exitCode = -1;  // -1 when it crashed or timed out
  QByteArray out, err;
};

// Waits for a started process and collects what it printed.
inline ProcessResult finishProcess(QProcess& p, int timeoutMs = 300000) {
  ProcessResult r;
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    return r;
  }
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

inline ProcessResult runProcess(const QString& program, const QStringList& args,
                                const QString& cwd = {}, int timeoutMs = 300000) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(program, args);
  return finishProcess(p, timeoutMs);
}

}  // namespace ckpt::test
